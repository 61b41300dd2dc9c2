package refserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/connectbyjbrh/ratecheck/mcpwire"
)

// ProtocolVersion is the MCP protocol revision the reference target speaks.
const ProtocolVersion = mcpwire.Latest

// ServerName and ServerVersion are the serverInfo every result carries in
// result._meta.
const (
	ServerName    = "ratecheck-reference-target"
	ServerVersion = "1"
)

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
	CodeHeaderMismatch = mcpwire.CodeHeaderMismatch
	CodeUnsupported    = mcpwire.CodeUnsupportedProtocolVersion
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
	Data    any    `json:"data,omitempty"`
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
		return nil, &rpcError{Status: http.StatusBadRequest, Code: CodeParseError, Message: "parse error: the body is not valid JSON"}
	}
	if len(body) > 0 && body[0] == '[' {
		return nil, &rpcError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: "batches are not supported: send one request per POST"}
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, &rpcError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: "invalid request: " + err.Error()}
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return nil, &rpcError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: `invalid request: want "jsonrpc":"2.0" and a method`}
	}
	if len(req.ID) == 0 || bytes.Equal(req.ID, []byte("null")) || (req.ID[0] != '"' && !isNumber(req.ID)) {
		return nil, &rpcError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: "invalid request: every POST carries one request with a string or number id"}
	}
	call := &mcpCall{ID: req.ID, Method: req.Method}
	if len(req.Params) > 0 && !bytes.Equal(req.Params, []byte("null")) {
		if err := json.Unmarshal(req.Params, &call.Params); err != nil {
			return nil, &rpcError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: "invalid request: params must be an object with string name and uri"}
		}
	}
	// A client of an older revision opens with initialize, without the
	// version header: name the revision spoken, as the spec asks of a
	// server that speaks only 2026-07-28.
	if req.Method == "initialize" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		return call, unsupported(p.ProtocolVersion, "initialize belongs to older revisions: this server speaks "+ProtocolVersion+", stateless, with no initialize")
	}
	// The version first: a request of another revision is told which one
	// this server speaks before anything else is judged.
	version := h.Get(mcpwire.HeaderProtocolVersion)
	if version == "" {
		return call, &rpcError{Status: http.StatusBadRequest, Code: CodeHeaderMismatch, Message: "header mismatch: MCP-Protocol-Version is missing"}
	}
	if version != ProtocolVersion {
		return call, unsupported(version, fmt.Sprintf("unsupported protocol version %q: this server speaks %s", version, ProtocolVersion))
	}
	// Headers must agree with the body, so that a router reading headers and
	// a server reading the body cannot see two different requests.
	var bodyVersion string
	if raw, ok := call.Params.Meta[mcpwire.MetaProtocolVersion]; !ok || json.Unmarshal(raw, &bodyVersion) != nil {
		return call, invalidMeta(mcpwire.MetaProtocolVersion, "missing or invalid")
	}
	if bodyVersion != version {
		return call, &rpcError{Status: http.StatusBadRequest, Code: CodeHeaderMismatch, Message: fmt.Sprintf("header mismatch: MCP-Protocol-Version %q disagrees with _meta %q", version, bodyVersion)}
	}
	if m := h.Get(mcpwire.HeaderMethod); m != req.Method {
		return call, &rpcError{Status: http.StatusBadRequest, Code: CodeHeaderMismatch, Message: fmt.Sprintf("header mismatch: Mcp-Method %q disagrees with method %q", m, req.Method)}
	}
	name, hasName := nameOf(req.Method, call.Params)
	got, ok := mcpwire.DecodeHeaderValue(h.Get(mcpwire.HeaderName))
	if !ok || got != name || (hasName && h.Get(mcpwire.HeaderName) == "") {
		return call, &rpcError{Status: http.StatusBadRequest, Code: CodeHeaderMismatch, Message: fmt.Sprintf("header mismatch: Mcp-Name %q disagrees with the body's %q", h.Get(mcpwire.HeaderName), name)}
	}
	// What 2026-07-28 requires in every request's _meta besides the
	// version: clientCapabilities (an object), and clientInfo, optional,
	// an Implementation when present.
	if raw, ok := call.Params.Meta[mcpwire.MetaClientInfo]; ok {
		var info struct {
			Name    *string `json:"name"`
			Version *string `json:"version"`
		}
		if !isObject(raw) || json.Unmarshal(raw, &info) != nil || info.Name == nil || info.Version == nil {
			return call, invalidMeta(mcpwire.MetaClientInfo, "invalid (want {name, version})")
		}
	}
	if raw, ok := call.Params.Meta[mcpwire.MetaClientCapabilities]; !ok || !isObject(raw) {
		return call, invalidMeta(mcpwire.MetaClientCapabilities, "missing or invalid")
	}
	return call, nil
}

// unsupported is the answer to a request of a revision this server does
// not speak: 400 -32022 with the versions it does.
func unsupported(requested, msg string) *rpcError {
	return &rpcError{Status: http.StatusBadRequest, Code: CodeUnsupported, Message: msg,
		Data: mcpwire.UnsupportedVersion{Supported: []string{ProtocolVersion}, Requested: requested}}
}

// invalidMeta is the answer to a request whose _meta lacks a field
// 2026-07-28 requires: 400 -32602, as the official SDKs answer it.
func invalidMeta(key, what string) *rpcError {
	return &rpcError{Status: http.StatusBadRequest, Code: CodeInvalidParams, Message: fmt.Sprintf("%s _meta field %q", what, key)}
}

// isObject reports whether raw JSON is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func isNumber(b []byte) bool {
	_, err := strconv.ParseFloat(string(b), 64)
	return err == nil
}

// rpcResponse is a JSON-RPC 2.0 response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// errorID is the id an error answer echoes: the request's, or none when
// it has none that is a string or a number (MCP's JSONRPCErrorResponse
// then has no id, rather than JSON-RPC's null, as the official SDKs send
// it).
func errorID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 || !(id[0] == '"' || isNumber(id)) {
		return nil
	}
	return id
}

// serveMCP answers /mcp: one stateless JSON-RPC request per POST.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request, reqID string) {
	fail := func(id json.RawMessage, method string, e *rpcError) {
		s.logf(r, surfaceMCP, method, e.Status, strconv.Itoa(e.Code), idString(id, reqID))
		writeJSON(w, e.Status, rpcResponse{JSONRPC: "2.0", ID: errorID(id), Error: e})
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		fail(nil, r.Method, &rpcError{Status: http.StatusMethodNotAllowed, Code: CodeInvalidRequest, Message: fmt.Sprintf("%s is not allowed: MCP protocol revision %s has no GET stream and no sessions; POST one request per call", r.Method, ProtocolVersion)})
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !slices.Contains(s.cfg.AllowedOrigins, origin) {
		fail(nil, "", &rpcError{Status: http.StatusForbidden, Code: CodeInvalidRequest, Message: "Origin is not allowed: send no Origin from a non-browser client"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxMCPBody+1))
	if err != nil {
		fail(nil, "", &rpcError{Status: http.StatusBadRequest, Code: CodeParseError, Message: "reading body: " + err.Error()})
		return
	}
	if len(body) > MaxMCPBody {
		// Read on (up to a bound) before answering, so that a client still
		// writing its body is not reset and gets to read the 413.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrain))
		fail(nil, "", &rpcError{Status: http.StatusRequestEntityTooLarge, Code: CodeInvalidRequest, Message: "body over 256 KiB"})
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
	e := &rpcError{Status: http.StatusTooManyRequests, Code: CodeInternalError, Message: fmt.Sprintf("rate limited: more than %d calls in the last %v", s.mcpLim.Limit(), s.cfg.Window)}
	s.logf(r, surfaceMCP, req.Method, e.Status, strconv.Itoa(e.Code), idString(req.ID, reqID))
	writeJSON(w, e.Status, rpcResponse{JSONRPC: "2.0", ID: errorID(req.ID), Error: e})
}

// idString returns the JSON-RPC id for logs, or the server's id when there is none.
func idString(id json.RawMessage, fallback string) string {
	if len(id) == 0 || len(id) > 64 {
		return fallback
	}
	return strings.Trim(string(id), `"`)
}

type object = map[string]any

// serverInfo is the result._meta every result carries (2026-07-28 puts
// the server's identity there; the official SDKs read it there).
var serverInfo = object{mcpwire.MetaServerInfo: mcpwire.Implementation{Name: ServerName, Version: ServerVersion}}

// complete marks a result as final, as revision 2026-07-28 requires, and
// names the server in its _meta.
func complete(m object) object {
	m["resultType"] = "complete"
	m["_meta"] = serverInfo
	return m
}

// cacheable is complete for the results 2026-07-28 makes cacheable
// (server/discover, the lists, resources/read), which must carry ttlMs and
// cacheScope. ttlMs is 0, immediately stale: every call a client makes is
// one the limiter under test counts. Nothing here differs between
// callers, so the scope is public.
func cacheable(m object) object {
	m["ttlMs"] = 0
	m["cacheScope"] = "public"
	return complete(m)
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
		return &rpcError{Status: http.StatusOK, Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
	}
	switch c.Method {
	case "server/discover":
		return cacheable(object{
			"supportedVersions": []string{ProtocolVersion},
			"capabilities":      object{"tools": object{}, "resources": object{}, "prompts": object{}},
		}), nil
	case "tools/list":
		return cacheable(object{"tools": tools}), nil
	case "tools/call":
		return s.callTool(c.Params)
	case "resources/list":
		var rs []object
		for _, ref := range s.corpus.order {
			rs = append(rs, object{"uri": resourcePrefix + ref, "name": ref, "title": s.corpus.pages[ref].Title, "mimeType": "text/markdown"})
		}
		return cacheable(object{"resources": rs}), nil
	case "resources/read":
		p, ok := s.corpus.pages[strings.TrimPrefix(c.Params.URI, resourcePrefix)]
		if !ok || !strings.HasPrefix(c.Params.URI, resourcePrefix) {
			return nil, invalid("unknown resource %q", c.Params.URI)
		}
		return cacheable(object{"contents": []object{{"uri": c.Params.URI, "mimeType": "text/markdown", "text": p.Markdown}}}), nil
	case "prompts/list":
		return cacheable(object{"prompts": prompts}), nil
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
	return nil, &rpcError{Status: http.StatusNotFound, Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q not found", c.Method)}
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
			return nil, &rpcError{Status: http.StatusOK, Code: CodeInvalidParams, Message: "search: arguments must be {query: string, limit?: integer}"}
		}
		limit := 10
		if a.Limit != nil {
			if *a.Limit < 1 || *a.Limit > 25 {
				return nil, &rpcError{Status: http.StatusOK, Code: CodeInvalidParams, Message: "search: limit must be from 1 to 25"}
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
			return nil, &rpcError{Status: http.StatusOK, Code: CodeInvalidParams, Message: "get_page: arguments must be {ref: string}"}
		}
		pg, ok := s.corpus.pages[a.Ref]
		if !ok {
			return toolError(fmt.Sprintf("get_page: no page with ref %q", a.Ref)), nil
		}
		return complete(object{"isError": false, "content": []object{{"type": "text", "text": pg.Markdown}}}), nil
	}
	return nil, &rpcError{Status: http.StatusOK, Code: CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", p.Name)}
}
