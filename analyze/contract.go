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

// ContractRow is one documented answer: the probe that provokes it (named
// by its stream), the status and error it must carry, and whether a client
// may retry it.
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
}

// ContractRows are the rows of the contract's failure table that a probe
// can provoke without touching a limit (the 429 rows are the limit checks').
var ContractRows = []ContractRow{
	{Stream: "rest-not-found", Surface: contract.REST, Status: 404, RESTCode: "not_found", What: "unknown page"},
	{Stream: "rest-manifest-not-found", Surface: contract.REST, Status: 404, RESTCode: "not_found", What: "unknown manifest"},
	{Stream: "rest-q-too-short", Surface: contract.REST, Status: 422, What: "q under two characters"},
	{Stream: "rest-limit-above-25", Surface: contract.REST, Status: 422, What: "limit above 25"},
	{Stream: "rest-post", Surface: contract.REST, Status: 405, Allow: "GET", What: "POST to a public route (every one is a GET)"},
	{Stream: "mcp-foreign-origin", Surface: contract.MCP, Status: 403, RPCCode: -32600, What: "foreign Origin"},
	{Stream: "mcp-get-stream", Surface: contract.MCP, Status: 405, Allow: "POST", What: "GET /mcp"},
	{Stream: "mcp-delete-session", Surface: contract.MCP, Status: 405, Allow: "POST", What: "DELETE /mcp"},
	{Stream: "mcp-body-too-large", Surface: contract.MCP, Status: 413, What: "body over 256 KiB"},
	{Stream: "mcp-bad-json", Surface: contract.MCP, Status: 400, RPCCode: -32700, What: "invalid JSON"},
	{Stream: "mcp-header-mismatch", Surface: contract.MCP, Status: 400, RPCCode: -32020, What: "Mcp-Name disagrees with the body"},
	{Stream: "mcp-unknown-method", Surface: contract.MCP, Status: 404, RPCCode: -32601, What: "unknown method"},
	{Stream: "mcp-empty-query", Surface: contract.MCP, Status: 200, IsError: true, What: "empty query"},
	{Stream: "mcp-unknown-page", Surface: contract.MCP, Status: 200, IsError: true, What: "unknown page"},
	{Stream: "mcp-unknown-tool", Surface: contract.MCP, Status: 200, RPCCode: -32602, What: "unknown tool"},
	{Stream: "mcp-session-headers-ignored", Surface: contract.MCP, Status: 200, What: "Mcp-Session-Id and Last-Event-ID ignored"},
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
	if err := json.Unmarshal(b, &parsed); err != nil && looksLikeEventStream(b) {
		// The archive keeps no Content-Type: an MCP answer in the
		// event-stream form is known by its fields, and judged by the
		// JSON-RPC response it carries.
		if data, err := mcpwire.ResponseJSON(mcpwire.ContentTypeEventStream, b, nil); err == nil {
			parsed = body{}
			_ = json.Unmarshal(data, &parsed)
		}
	}
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

// looksLikeEventStream reports whether b starts as an event stream does:
// a field line (event:, data:, id:, retry:) or a comment (:).
func looksLikeEventStream(b []byte) bool {
	b = bytes.TrimLeft(b, "\r\n")
	for _, p := range []string{"event:", "data:", "id:", "retry:", ":"} {
		if bytes.HasPrefix(b, []byte(p)) {
			return true
		}
	}
	return false
}

// checkRow returns what is wrong with r as an answer to row (empty: nothing).
func checkRow(row ContractRow, r *archive.Record, tab *archive.Tables) string {
	if r.Code != row.Status {
		return fmt.Sprintf("status %d, want %d", r.Code, row.Status)
	}
	rest, rpc, parsed := errorCodes(tab.Body(r))
	var probs []string
	if row.RESTCode != "" && rest != row.RESTCode {
		probs = append(probs, fmt.Sprintf("error.code %q, want %q", rest, row.RESTCode))
	}
	if row.RPCCode != 0 && rpc != row.RPCCode {
		probs = append(probs, fmt.Sprintf("JSON-RPC error %d, want %d", rpc, row.RPCCode))
	}
	if row.IsError && (parsed.Result == nil || !parsed.Result.IsError) {
		probs = append(probs, "no result.isError")
	}
	if row.Status == 200 && !row.IsError && row.RPCCode == 0 && (parsed.Error != nil || parsed.Result == nil) {
		probs = append(probs, "no result")
	}
	if allow, _, _ := tab.Header(r); row.Allow != "" && !strings.Contains(allow, row.Allow) {
		probs = append(probs, fmt.Sprintf("Allow %q, want %s", allow, row.Allow))
	}
	if Retryable(r.Code) != row.Retryable {
		probs = append(probs, "classified retryable, but the contract says it is an answer")
	}
	return strings.Join(probs, "; ")
}

// shapeOK reports whether a 429 body is the documented one for its surface.
func shapeOK(surface string, b []byte) bool {
	rest, rpc, ok := fastErrorCode(b)
	if !ok {
		rest, rpc, _ = errorCodes(b)
	}
	if surface == contract.MCP {
		return rpc == -32603
	}
	return rest == "rate_limited"
}
