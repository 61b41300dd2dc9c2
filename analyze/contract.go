package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/contract"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
)

// Who fixes a part of a contract row: the MCP specification (with
// JSON-RPC 2.0 and HTTP, which it builds on), or only this API's own
// documentation. A server that follows the specification may differ from
// the API's documentation in the parts it alone fixes: that is still a
// failure against this API, and the verdict says which kind it is.
const (
	BySpec = "spec"
	ByAPI  = "api"
)

// ContractRow is one documented answer: the probe that provokes it (named
// by its stream), the status and error it must carry, whether a client may
// retry it, and who fixes its status and its error code.
type ContractRow struct {
	Stream    string
	Surface   string
	Status    uint16
	RESTCode  string // REST error.code, when documented
	RPCCode   int    // JSON-RPC error.code, when documented
	IsError   bool   // 200 with result.isError
	Allow     string // Allow header, when documented
	Retryable bool
	What      string
	// StatusBy fixes the status (and the Allow header of a 405, the
	// result of a 200); CodeBy the error code and isError. Both are
	// BySpec or ByAPI.
	StatusBy, CodeBy string
	// Retired is a row no longer probed, judged only in archived runs
	// that have it.
	Retired bool
}

// By says who fixes the row: BySpec, ByAPI, or "spec+api" when the
// specification fixes some of what is checked and the API's
// documentation the rest.
func (row ContractRow) By() string {
	code := row.CodeBy
	if row.RESTCode == "" && row.RPCCode == 0 && !row.IsError {
		code = row.StatusBy // nothing but the status is checked
	}
	if row.StatusBy == code {
		return code
	}
	return BySpec + "+" + ByAPI
}

// ContractRows are the rows of the contract's failure table that a probe
// can provoke without touching a limit (the 429 rows are the limit checks').
var ContractRows = []ContractRow{
	{Stream: "rest-not-found", Surface: contract.REST, Status: 404, RESTCode: "not_found", What: "unknown page", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "rest-manifest-not-found", Surface: contract.REST, Status: 404, RESTCode: "not_found", What: "unknown manifest", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "rest-q-too-short", Surface: contract.REST, Status: 422, What: "q under two characters", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "rest-limit-above-25", Surface: contract.REST, Status: 422, What: "limit above 25", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "rest-post", Surface: contract.REST, Status: 405, Allow: "GET", What: "POST to a public route (every one is a GET)", StatusBy: ByAPI, CodeBy: ByAPI},
	// The specification: a present, invalid Origin is 403; the code in
	// the body, and which Origins are foreign, are the API's.
	{Stream: "mcp-foreign-origin", Surface: contract.MCP, Status: 403, RPCCode: -32600, What: "foreign Origin", StatusBy: BySpec, CodeBy: ByAPI},
	{Stream: "mcp-get-stream", Surface: contract.MCP, Status: 405, Allow: "POST", What: "GET /mcp", StatusBy: BySpec, CodeBy: BySpec},
	// The specification lets a server refuse DELETE with 405 (MAY).
	{Stream: "mcp-delete-session", Surface: contract.MCP, Status: 405, Allow: "POST", What: "DELETE /mcp", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "mcp-body-too-large", Surface: contract.MCP, Status: 413, What: "body over 256 KiB", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "mcp-bad-json", Surface: contract.MCP, Status: 400, RPCCode: -32700, What: "invalid JSON", StatusBy: BySpec, CodeBy: BySpec},
	{Stream: "mcp-header-mismatch", Surface: contract.MCP, Status: 400, RPCCode: -32020, What: "Mcp-Name disagrees with the body", StatusBy: BySpec, CodeBy: BySpec},
	// A method no revision defines: -32601 is JSON-RPC's; the 404 is
	// the API's.
	{Stream: "mcp-unknown-method", Surface: contract.MCP, Status: 404, RPCCode: -32601, What: "unknown method", StatusBy: ByAPI, CodeBy: BySpec},
	{Stream: "mcp-empty-query", Surface: contract.MCP, Status: 200, IsError: true, What: "empty query", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "mcp-unknown-page", Surface: contract.MCP, Status: 200, IsError: true, What: "unknown page", StatusBy: ByAPI, CodeBy: ByAPI},
	// -32602 for an unknown tool is the specification's; answering it
	// with 200 is the API's.
	{Stream: "mcp-unknown-tool", Surface: contract.MCP, Status: 200, RPCCode: -32602, What: "unknown tool", StatusBy: ByAPI, CodeBy: BySpec},
	{Stream: "mcp-session-id-ignored", Surface: contract.MCP, Status: 200, What: "Mcp-Session-Id ignored: this revision has no sessions", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "mcp-last-event-id-ignored", Surface: contract.MCP, Status: 200, What: "Last-Event-ID on a POST ignored", StatusBy: ByAPI, CodeBy: ByAPI},
	// Both headers in one probe, as earlier versions sent it: judged
	// when an archived run has it, never sent now.
	{Stream: "mcp-session-headers-ignored", Surface: contract.MCP, Status: 200, What: "Mcp-Session-Id and Last-Event-ID ignored", StatusBy: ByAPI, CodeBy: ByAPI, Retired: true},
}

// JudgedBy names what judges the requests of a stream: "contract" for a
// failure-table probe (one of ContractRows), "spoof" for the probes with
// forged forwarding headers, "fleet" for a fleet's primer and clients (the
// fleet checks), and "limits" for any other stream, whose every request
// counts toward its address's window (onset, rolling, rejected-count,
// shape, isolation, independence). The analyzer keys on no other name.
func JudgedBy(stream string) string {
	switch {
	case isContractStream(stream):
		return "contract"
	case isForged(stream):
		return "spoof"
	case stream == archive.StreamPrime || stream == archive.StreamFleet:
		return "fleet"
	}
	return "limits"
}

// forgedHeaders names the forwarding header each spoof stream forges.
var forgedHeaders = map[string]string{
	archive.StreamSpoof:              "X-Forwarded-For, Forwarded or X-Real-IP",
	archive.StreamSpoofXForwardedFor: "X-Forwarded-For",
	archive.StreamSpoofForwarded:     "Forwarded",
	archive.StreamSpoofXRealIP:       "X-Real-IP",
}

// isForged reports whether a stream's probes carry a forged forwarding
// header.
func isForged(stream string) bool { _, ok := forgedHeaders[stream]; return ok }

func isContractStream(name string) bool {
	for _, r := range ContractRows {
		if r.Stream == name {
			return true
		}
	}
	return false
}

// Retryable reports whether the contract lets a client retry an answer:
// only a 429 (whatever JSON-RPC code it carries) and transport faults
// (code 0: reset or timeout; 5xx). Everything else is an answer.
func Retryable(code uint16) bool { return code == 0 || code == 429 || code >= 500 }

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
func checkRow(row ContractRow, r *archive.Record, tab *archive.Tables) string {
	var spec, api []string
	add := func(by, format string, args ...any) {
		if by == BySpec {
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
		if Retryable(r.Code) != row.Retryable {
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
func checkBody(row ContractRow, contentType string, b []byte, add func(by, format string, args ...any)) {
	rpcRow := row.RPCCode != 0 || row.IsError || (row.Surface == contract.MCP && row.Status == 200)
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
	if surface == contract.MCP {
		var ok bool
		if b, ok = answerJSON("", b); !ok {
			return false
		}
	}
	rest, rpc, ok := fastErrorCode(b)
	if !ok {
		rest, rpc, _ = errorCodes(b)
	}
	if surface == contract.MCP {
		return rpc == -32603
	}
	return rest == "rate_limited"
}
