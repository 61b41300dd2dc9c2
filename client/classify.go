package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/connectbyjbrh/ratecheck/mcpwire"
)

// Class is how the contract sorts a response.
type Class int

const (
	// Success is a 2xx with a result.
	Success Class = iota
	// ToolError is a 200 whose result has isError set: the tool ran and
	// could not answer. Repeating it repeats the answer.
	ToolError
	// Answer is every other status and every JSON-RPC error: fix the
	// request, do not retry it.
	Answer
	// Retryable is a 429, a 5xx, a reset or a timeout.
	Retryable
)

func (c Class) String() string {
	switch c {
	case Success:
		return "success"
	case ToolError:
		return "tool-error"
	case Answer:
		return "answer"
	case Retryable:
		return "retryable"
	}
	return "unknown"
}

// Classify sorts a response by the contract's table: a transport error
// (err != nil, other than the caller's own cancellation), 429 and 5xx are
// retryable; other non-2xx statuses are answers; a 2xx body is checked for
// a JSON-RPC result first (isError there is a tool error), then for a
// JSON-RPC error (an answer). contentType is the answer's Content-Type: a
// text/event-stream body is judged by the JSON-RPC response it carries,
// and a 2xx stream that ended without one is retryable (the answer broke
// off, as a reset body does).
func Classify(status int, contentType string, body []byte, err error) Class {
	switch {
	case err != nil:
		if errors.Is(err, context.Canceled) {
			return Answer
		}
		return Retryable
	case status == http.StatusTooManyRequests || status >= 500:
		return Retryable
	case status < 200 || status > 299:
		return Answer
	}
	body, err = mcpwire.ResponseJSON(contentType, body, nil) // an event stream's response; any other body as is
	if err != nil {
		return Retryable
	}
	var rpc struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &rpc) != nil {
		return Success // REST bodies and non-JSON 2xx: nothing more to check
	}
	switch {
	case rpc.Result != nil && rpc.Result.IsError:
		return ToolError
	case rpc.Result == nil && len(rpc.Error) > 0 && string(rpc.Error) != "null":
		return Answer
	}
	return Success
}

// errorCode returns a response's REST error.code or JSON-RPC error.code as
// text, for logs ("" when there is none).
func errorCode(contentType string, body []byte) string {
	body, _ = mcpwire.ResponseJSON(contentType, body, nil)
	var e struct {
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error.Code) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(e.Error.Code, &s) == nil {
		return s
	}
	return string(e.Error.Code)
}
