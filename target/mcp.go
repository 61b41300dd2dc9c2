package target

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// ProtocolVersion is the MCP protocol revision the reference target speaks.
const ProtocolVersion = "2026-07-28"

// MaxMCPBody is the largest /mcp request body accepted (256 KiB).
const MaxMCPBody = 256 << 10

// maxDrain bounds how much of an oversized body is read and discarded
// before the 413 is sent; past it the connection is closed.
const maxDrain = 16 << 20

// JSON-RPC error codes used on /mcp.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603 // also the code of a 429 on /mcp
	CodeHeaderMismatch = -32020
)

// Meta keys of params._meta.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo      = "io.modelcontextprotocol/clientInfo"
)

// rpcRequest is one JSON-RPC 2.0 request as sent to /mcp.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcParams holds the params members the transport looks at.
type rpcParams struct {
	Meta      map[string]json.RawMessage `json:"_meta"`
	Name      string                     `json:"name"`
	URI       string                     `json:"uri"`
	Arguments json.RawMessage            `json:"arguments"`
}

// rpcError is a JSON-RPC error with the HTTP status it travels with.
type rpcError struct {
	Status  int    `json:"-"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d/%d: %s", e.Status, e.Code, e.Message) }

// mcpCall is a parsed, header-checked /mcp request.
type mcpCall struct {
	ID     json.RawMessage
	Method string
	Params rpcParams
}

// nameOf returns the member of params that Mcp-Name must echo for method,
// and whether the method has one.
func nameOf(method string, p rpcParams) (string, bool) {
	switch method {
	case "tools/call", "prompts/get":
		return p.Name, true
	case "resources/read":
		return p.URI, true
	}
	return "", false
}

// parseMCP parses body as one JSON-RPC request and checks the transport
// headers against it. It never panics, whatever the input.
func parseMCP(h http.Header, body []byte) (*mcpCall, *rpcError) {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return nil, &rpcError{http.StatusBadRequest, CodeParseError, "parse error: the body is not valid JSON"}
	}
	if len(body) > 0 && body[0] == '[' {
		return nil, &rpcError{http.StatusBadRequest, CodeInvalidRequest, "batches are not supported: send one request per POST"}
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, &rpcError{http.StatusBadRequest, CodeInvalidRequest, "invalid request: " + err.Error()}
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return nil, &rpcError{http.StatusBadRequest, CodeInvalidRequest, `invalid request: want "jsonrpc":"2.0" and a method`}
	}
	if len(req.ID) == 0 || bytes.Equal(req.ID, []byte("null")) || (req.ID[0] != '"' && !isNumber(req.ID)) {
		return nil, &rpcError{http.StatusBadRequest, CodeInvalidRequest, "invalid request: every POST carries one request with a string or number id"}
	}
	call := &mcpCall{ID: req.ID, Method: req.Method}
	if len(req.Params) > 0 && !bytes.Equal(req.Params, []byte("null")) {
		if err := json.Unmarshal(req.Params, &call.Params); err != nil {
			return nil, &rpcError{http.StatusBadRequest, CodeInvalidRequest, "invalid request: params must be an object with string name and uri"}
		}
	}
	// Headers must agree with the body, so that a router reading headers and
	// a server reading the body cannot see two different requests.
	version := h.Get("MCP-Protocol-Version")
	if version == "" {
		return call, &rpcError{http.StatusBadRequest, CodeHeaderMismatch, "header mismatch: MCP-Protocol-Version is missing"}
	}
	if raw, ok := call.Params.Meta[metaProtocolVersion]; ok {
		var bodyVersion string
		if json.Unmarshal(raw, &bodyVersion) != nil || bodyVersion != version {
			return call, &rpcError{http.StatusBadRequest, CodeHeaderMismatch, fmt.Sprintf("header mismatch: MCP-Protocol-Version %q disagrees with _meta %s", version, raw)}
		}
	}
	if m := h.Get("Mcp-Method"); m != req.Method {
		return call, &rpcError{http.StatusBadRequest, CodeHeaderMismatch, fmt.Sprintf("header mismatch: Mcp-Method %q disagrees with method %q", m, req.Method)}
	}
	name, hasName := nameOf(req.Method, call.Params)
	if got := h.Get("Mcp-Name"); got != name || (hasName && got == "") {
		return call, &rpcError{http.StatusBadRequest, CodeHeaderMismatch, fmt.Sprintf("header mismatch: Mcp-Name %q disagrees with the body's %q", got, name)}
	}
	if version != ProtocolVersion {
		return call, &rpcError{http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("unsupported protocol version %q: this server speaks %s", version, ProtocolVersion)}
	}
	return call, nil
}

func isNumber(b []byte) bool {
	_, err := strconv.ParseFloat(string(b), 64)
	return err == nil
}

// rpcResponse is a JSON-RPC 2.0 response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func nullID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// serveMCP answers /mcp: one stateless JSON-RPC request per POST.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request, reqID string) {
	fail := func(id json.RawMessage, method string, e *rpcError) {
		s.logf(r, surfaceMCP, method, e.Status, strconv.Itoa(e.Code), idString(id, reqID))
		writeJSON(w, e.Status, rpcResponse{JSONRPC: "2.0", ID: nullID(id), Error: e})
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		fail(nil, r.Method, &rpcError{http.StatusMethodNotAllowed, CodeInvalidRequest,
			fmt.Sprintf("%s is not allowed: MCP protocol revision %s has no GET stream and no sessions; POST one request per call", r.Method, ProtocolVersion)})
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !slices.Contains(s.cfg.AllowedOrigins, origin) {
		fail(nil, "", &rpcError{http.StatusForbidden, CodeInvalidRequest, "Origin is not allowed: send no Origin from a non-browser client"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxMCPBody+1))
	if err != nil {
		fail(nil, "", &rpcError{http.StatusBadRequest, CodeParseError, "reading body: " + err.Error()})
		return
	}
	if len(body) > MaxMCPBody {
		// Read on (up to a bound) before answering, so that a client still
		// writing its body is not reset and gets to read the 413.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrain))
		fail(nil, "", &rpcError{http.StatusRequestEntityTooLarge, CodeInvalidRequest, "body over 256 KiB"})
		return
	}
	call, rerr := parseMCP(r.Header, body)
	if rerr != nil {
		var id json.RawMessage
		method := ""
		if call != nil {
			id, method = call.ID, call.Method
		}
		fail(id, method, rerr)
		return
	}
	result, rerr := s.dispatch(call)
	if rerr != nil {
		fail(call.ID, call.Method, rerr)
		return
	}
	writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: call.ID, Result: result})
}

// refuseMCP answers a rate-limited /mcp request: 429 with JSON-RPC -32603,
// echoing the request id when the body has one.
func (s *Server) refuseMCP(w http.ResponseWriter, r *http.Request, reqID string) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(io.LimitReader(r.Body, MaxMCPBody))
		_ = json.Unmarshal(b, &req)
	}
	e := &rpcError{http.StatusTooManyRequests, CodeInternalError,
		fmt.Sprintf("rate limited: more than %d calls in the last %v", s.mcpLim.Limit(), s.cfg.Window)}
	s.logf(r, surfaceMCP, req.Method, e.Status, strconv.Itoa(e.Code), idString(req.ID, reqID))
	writeJSON(w, e.Status, rpcResponse{JSONRPC: "2.0", ID: nullID(req.ID), Error: e})
}

// idString returns the JSON-RPC id for logs, or the server's id when there is none.
func idString(id json.RawMessage, fallback string) string {
	if len(id) == 0 || len(id) > 64 {
		return fallback
	}
	return strings.Trim(string(id), `"`)
}

// complete marks a result as final, as revision 2026-07-28 requires.
type object = map[string]any

func complete(m object) object {
	m["resultType"] = "complete"
	return m
}

var readOnly = object{"readOnlyHint": true, "idempotentHint": true}

var tools = []object{
	{"name": "search", "title": "Search the documentation", "annotations": readOnly,
		"description": "Search the documentation pages for words.",
		"inputSchema": object{"type": "object", "required": []string{"query"}, "properties": object{
			"query": object{"type": "string"}, "limit": object{"type": "integer", "minimum": 1, "maximum": 25}}}},
	{"name": "get_page", "title": "Read a documentation page", "annotations": readOnly,
		"description": "Return one documentation page as Markdown.",
		"inputSchema": object{"type": "object", "required": []string{"ref"}, "properties": object{
			"ref": object{"type": "string"}}}},
}

var prompts = []object{
	{"name": "explain-error", "description": "Explain an error answer and whether to retry it.",
		"arguments": []object{{"name": "status", "required": true}}},
}

const resourcePrefix = "docs://pages/"

// dispatch runs a method and returns its result or a JSON-RPC error.
func (s *Server) dispatch(c *mcpCall) (object, *rpcError) {
	invalid := func(format string, args ...any) *rpcError {
		return &rpcError{http.StatusOK, CodeInvalidParams, fmt.Sprintf(format, args...)}
	}
	switch c.Method {
	case "server/discover":
		return complete(object{
			"supportedVersions": []string{ProtocolVersion},
			"serverInfo":        object{"name": "ratecheck-reference-target", "version": "1"},
			"capabilities":      object{"tools": object{}, "resources": object{}, "prompts": object{}},
		}), nil
	case "tools/list":
		return complete(object{"tools": tools}), nil
	case "tools/call":
		return s.callTool(c.Params)
	case "resources/list":
		var rs []object
		for _, ref := range s.corpus.order {
			rs = append(rs, object{"uri": resourcePrefix + ref, "name": ref, "title": s.corpus.pages[ref].Title, "mimeType": "text/markdown"})
		}
		return complete(object{"resources": rs}), nil
	case "resources/read":
		p, ok := s.corpus.pages[strings.TrimPrefix(c.Params.URI, resourcePrefix)]
		if !ok || !strings.HasPrefix(c.Params.URI, resourcePrefix) {
			return nil, invalid("unknown resource %q", c.Params.URI)
		}
		return complete(object{"contents": []object{{"uri": c.Params.URI, "mimeType": "text/markdown", "text": p.Markdown}}}), nil
	case "prompts/list":
		return complete(object{"prompts": prompts}), nil
	case "prompts/get":
		if c.Params.Name != "explain-error" {
			return nil, invalid("unknown prompt %q", c.Params.Name)
		}
		var args struct {
			Status string `json:"status"`
		}
		if len(c.Params.Arguments) > 0 && json.Unmarshal(c.Params.Arguments, &args) != nil || args.Status == "" {
			return nil, invalid("prompt explain-error needs a string argument status")
		}
		text := fmt.Sprintf("An API answered HTTP %s. Using the page errors-and-retries, say whether a client should retry it and how.", args.Status)
		return complete(object{"messages": []object{{"role": "user", "content": object{"type": "text", "text": text}}}}), nil
	}
	return nil, &rpcError{http.StatusNotFound, CodeMethodNotFound, fmt.Sprintf("method %q not found", c.Method)}
}

// toolError is a tool result that ran and could not answer.
func toolError(msg string) object {
	return complete(object{"isError": true, "content": []object{{"type": "text", "text": msg}}})
}

func (s *Server) callTool(p rpcParams) (object, *rpcError) {
	args := p.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	switch p.Name {
	case "search":
		var a struct {
			Query string `json:"query"`
			Limit *int   `json:"limit"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, &rpcError{http.StatusOK, CodeInvalidParams, "search: arguments must be {query: string, limit?: integer}"}
		}
		limit := 10
		if a.Limit != nil {
			if *a.Limit < 1 || *a.Limit > 25 {
				return nil, &rpcError{http.StatusOK, CodeInvalidParams, "search: limit must be from 1 to 25"}
			}
			limit = *a.Limit
		}
		if strings.TrimSpace(a.Query) == "" {
			return toolError("search: the query is empty; say what to look for"), nil
		}
		hits := s.corpus.search(a.Query, limit)
		if hits == nil {
			hits = []hit{}
		}
		text, _ := json.Marshal(hits)
		return complete(object{"isError": false, "content": []object{{"type": "text", "text": string(text)}},
			"structuredContent": object{"results": hits}}), nil
	case "get_page":
		var a struct {
			Ref string `json:"ref"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, &rpcError{http.StatusOK, CodeInvalidParams, "get_page: arguments must be {ref: string}"}
		}
		pg, ok := s.corpus.pages[a.Ref]
		if !ok {
			return toolError(fmt.Sprintf("get_page: no page with ref %q", a.Ref)), nil
		}
		return complete(object{"isError": false, "content": []object{{"type": "text", "text": pg.Markdown}}}), nil
	}
	return nil, &rpcError{http.StatusOK, CodeInvalidParams, fmt.Sprintf("unknown tool %q", p.Name)}
}
