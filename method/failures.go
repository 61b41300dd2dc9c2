package method

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
	{Stream: "rest-not-found", Surface: REST, Status: 404, RESTCode: "not_found", What: "unknown page", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "rest-manifest-not-found", Surface: REST, Status: 404, RESTCode: "not_found", What: "unknown manifest", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "rest-q-too-short", Surface: REST, Status: 422, What: "q under two characters", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "rest-limit-above-25", Surface: REST, Status: 422, What: "limit above 25", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "rest-post", Surface: REST, Status: 405, Allow: "GET", What: "POST to a public route (every one is a GET)", StatusBy: ByAPI, CodeBy: ByAPI},
	// The specification: a present, invalid Origin is 403; the code in
	// the body, and which Origins are foreign, are the API's.
	{Stream: "mcp-foreign-origin", Surface: MCP, Status: 403, RPCCode: -32600, What: "foreign Origin", StatusBy: BySpec, CodeBy: ByAPI},
	{Stream: "mcp-get-stream", Surface: MCP, Status: 405, Allow: "POST", What: "GET /mcp", StatusBy: BySpec, CodeBy: BySpec},
	// The specification lets a server refuse DELETE with 405 (MAY).
	{Stream: "mcp-delete-session", Surface: MCP, Status: 405, Allow: "POST", What: "DELETE /mcp", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "mcp-body-too-large", Surface: MCP, Status: 413, What: "body over 256 KiB", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "mcp-bad-json", Surface: MCP, Status: 400, RPCCode: -32700, What: "invalid JSON", StatusBy: BySpec, CodeBy: BySpec},
	{Stream: "mcp-header-mismatch", Surface: MCP, Status: 400, RPCCode: -32020, What: "Mcp-Name disagrees with the body", StatusBy: BySpec, CodeBy: BySpec},
	// A method no revision defines: -32601 is JSON-RPC's; the 404 is
	// the API's.
	{Stream: "mcp-unknown-method", Surface: MCP, Status: 404, RPCCode: -32601, What: "unknown method", StatusBy: ByAPI, CodeBy: BySpec},
	{Stream: "mcp-empty-query", Surface: MCP, Status: 200, IsError: true, What: "empty query", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "mcp-unknown-page", Surface: MCP, Status: 200, IsError: true, What: "unknown page", StatusBy: ByAPI, CodeBy: ByAPI},
	// -32602 for an unknown tool is the specification's; answering it
	// with 200 is the API's.
	{Stream: "mcp-unknown-tool", Surface: MCP, Status: 200, RPCCode: -32602, What: "unknown tool", StatusBy: ByAPI, CodeBy: BySpec},
	{Stream: "mcp-session-id-ignored", Surface: MCP, Status: 200, What: "Mcp-Session-Id ignored: this revision has no sessions", StatusBy: ByAPI, CodeBy: ByAPI},
	{Stream: "mcp-last-event-id-ignored", Surface: MCP, Status: 200, What: "Last-Event-ID on a POST ignored", StatusBy: ByAPI, CodeBy: ByAPI},
	// Both headers in one probe, as earlier versions sent it: judged
	// when an archived run has it, never sent now.
	{Stream: "mcp-session-headers-ignored", Surface: MCP, Status: 200, What: "Mcp-Session-Id and Last-Event-ID ignored", StatusBy: ByAPI, CodeBy: ByAPI, Retired: true},
}

// JudgedBy names what judges the requests of a stream: "contract" for a
// failure-table probe (one of ContractRows), "spoof" for the probes with
// forged forwarding headers, "fleet" for a fleet's primer and clients (the
// fleet checks), and "limits" for any other stream, whose every request
// counts toward its address's window (onset, rolling, rejected-count,
// shape, isolation, independence). The analyzer keys on no other name.
func JudgedBy(stream string) string {
	switch {
	case IsContractStream(stream):
		return "contract"
	case IsForged(stream):
		return "spoof"
	case stream == StreamPrime || stream == StreamFleet:
		return "fleet"
	}
	return "limits"
}

// forgedHeaders names the forwarding header each spoof stream forges.
var forgedHeaders = map[string]string{
	streamSpoof:              "X-Forwarded-For, Forwarded or X-Real-IP",
	StreamSpoofXForwardedFor: "X-Forwarded-For",
	StreamSpoofForwarded:     "Forwarded",
	StreamSpoofXRealIP:       "X-Real-IP",
	StreamSpoofAddress:       "",
}

// IsForged reports whether a stream's probes carry a forged forwarding
// header, or go out as the limit key from another address
// (StreamSpoofAddress) or to another of a shared budget's routes
// (SharedRouteStream): probes another budget than the limit's may count.
func IsForged(stream string) bool {
	if _, ok := forgedHeaders[stream]; ok {
		return true
	}
	_, ok := SharedRoute(stream)
	return ok
}

// IsContractStream reports whether a stream is a failure-table probe (one
// of ContractRows).
func IsContractStream(name string) bool {
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

// ForgedHeader names the forwarding header a spoof stream forges ("" for
// a stream that forges none, StreamSpoofAddress's included).
func ForgedHeader(stream string) string { return forgedHeaders[stream] }
