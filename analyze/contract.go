package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/connectbyjbrh/ratecheck/method"
)

// body is the parts of an answer the contract speaks of.
type body struct {
	Error  json.RawMessage `json:"error"`
	Result *struct {
		IsError bool `json:"isError"`
	} `json:"result"`
}

// errorCodes returns the REST error.code or the JSON-RPC error.code of b.
func errorCodes(b []byte) (rest string, rpc int, parsed body) {
	_ = json.Unmarshal(b, &parsed)
	var e struct {
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(parsed.Error, &e) == nil && len(e.Code) > 0 {
		if json.Unmarshal(e.Code, &rest) != nil {
			_ = json.Unmarshal(e.Code, &rpc)
		}
	}
	return rest, rpc, parsed
}

// isEventStream reports whether an answer is an event stream: by its
// Content-Type, or, when none was kept (a refusal judged as it was read),
// by its first bytes, which no JSON text starts with.
func isEventStream(contentType string, b []byte) bool {
	if contentType != "" {
		return mcpwire.IsEventStream(contentType)
	}
	b = bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\uFEFF")), " \t\r\n")
	for _, field := range []string{"event:", "data:", "id:", "retry:", ":"} {
		if bytes.HasPrefix(b, []byte(field)) {
			return true
		}
	}
	return false
}

// answerJSON returns the JSON an answer body carries: an event stream's
// JSON-RPC response (the first one: a probe sends one request), any other
// body as it is. ok is false for an event stream without a response.
func answerJSON(contentType string, b []byte) (data []byte, ok bool) {
	if !isEventStream(contentType, b) {
		return b, true
	}
	data, err := mcpwire.ResponseJSON(mcpwire.ContentTypeEventStream, b, nil)
	return data, err == nil
}

// checkRow returns what is wrong with r as an answer to row (empty:
// nothing), saying whether it breaks the MCP specification or differs
// only from this API's documentation.
func checkRow(row method.ContractRow, r *decode.Record, tab *decode.Tables) string {
	var spec, api []string
	add := func(by, format string, args ...any) {
		if by == method.BySpec {
			spec = append(spec, fmt.Sprintf(format, args...))
		} else {
			api = append(api, fmt.Sprintf(format, args...))
		}
	}
	if r.Code != row.Status {
		add(row.StatusBy, "status %d, want %d", r.Code, row.Status)
	} else {
		checkBody(row, tab.ContentType(r), tab.Body(r), add)
		if allow, _, _ := tab.Header(r); row.Allow != "" && !strings.Contains(allow, row.Allow) {
			add(row.StatusBy, "Allow %q, want %s", allow, row.Allow)
		}
		if method.Retryable(r.Code) != row.Retryable {
			add(row.StatusBy, "classified retryable, but the contract says it is an answer")
		}
	}
	var out []string
	if len(spec) > 0 {
		out = append(out, "against the MCP specification: "+strings.Join(spec, "; "))
	}
	if len(api) > 0 {
		out = append(out, "differs from the documented API: "+strings.Join(api, "; "))
	}
	return strings.Join(out, "; and ")
}

// checkBody checks the body of an answer with the row's status: its REST
// error.code, its JSON-RPC error code, its result and isError, reading an
// event stream as its JSON-RPC response. A body that is not what the row
// needs to read is named by its Content-Type, never as an error code of 0.
func checkBody(row method.ContractRow, contentType string, b []byte, add func(by, format string, args ...any)) {
	rpcRow := row.RPCCode != 0 || row.IsError || (row.Surface == method.MCP && row.Status == 200)
	if !rpcRow && row.RESTCode == "" {
		return // only the status (and Allow) is documented
	}
	by := row.CodeBy
	if !rpcRow {
		rest, _, _ := errorCodes(b)
		switch {
		case !json.Valid(b):
			add(by, "the body is not JSON (%s), want error.code %q", describe(contentType, b), row.RESTCode)
		case rest != row.RESTCode:
			add(by, "error.code %q, want %q", rest, row.RESTCode)
		}
		return
	}
	data, ok := answerJSON(contentType, b)
	if !ok {
		add(by, "an event stream without a JSON-RPC response (%s)", describe(contentType, b))
		return
	}
	resp, err := mcpwire.DecodeResponse(mcpwire.ContentTypeJSON, data, nil)
	if err != nil {
		add(by, "the body is not JSON-RPC (%s)", describe(contentType, b))
		return
	}
	var result struct {
		IsError bool `json:"isError"`
	}
	if resp.Result != nil {
		_ = json.Unmarshal(resp.Result, &result)
	}
	switch {
	case row.RPCCode != 0 && resp.Error == nil:
		add(by, "a JSON-RPC result, want error %d", row.RPCCode)
	case row.RPCCode != 0 && resp.Error.Code != row.RPCCode:
		add(by, "JSON-RPC error %d, want %d", resp.Error.Code, row.RPCCode)
	case row.IsError && resp.Error != nil:
		add(by, "JSON-RPC error %d, want a result with isError: true", resp.Error.Code)
	case row.IsError && !result.IsError:
		add(by, "no result.isError")
	case row.RPCCode == 0 && !row.IsError && resp.Error != nil:
		add(row.StatusBy, "JSON-RPC error %d, want a result", resp.Error.Code)
	}
}

// describe names a body that was not what it should be: its Content-Type
// and its first bytes.
func describe(contentType string, b []byte) string {
	if contentType == "" {
		contentType = "no Content-Type"
	}
	if len(b) == 0 {
		return contentType + ", empty"
	}
	const n = 40
	if len(b) > n {
		return fmt.Sprintf("%s: %q…", contentType, b[:n])
	}
	return fmt.Sprintf("%s: %q", contentType, b)
}

// shapeOK reports whether a 429 body is the documented one for its
// surface; an MCP refusal may come as an event stream.
func shapeOK(surface string, b []byte) bool {
	if surface == method.MCP {
		var ok bool
		if b, ok = answerJSON("", b); !ok {
			return false
		}
	}
	rest, rpc, ok := fastErrorCode(b)
	if !ok {
		rest, rpc, _ = errorCodes(b)
	}
	if surface == method.MCP {
		return rpc == -32603
	}
	return rest == "rate_limited"
}
