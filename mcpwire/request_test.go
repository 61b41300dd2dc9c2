package mcpwire_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/google/go-cmp/cmp"
)

// body is a decoded request body.
type body struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      *uint64        `json:"id"`
	Method  string         `json:"method"`
	Params  map[string]any `json:"params"`
}

func decode(t *testing.T, b []byte) body {
	t.Helper()
	var v body
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
	return v
}

// meta is the _meta of a 2026-07-28 request from the default client with
// no capability, as the transport page's examples show it.
func meta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "ratecheck", "version": "dev"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
}

func hdr(kv ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name       string
		req        mcpwire.Request
		wantHeader http.Header
		wantParams map[string]any // nil: no params member
	}{
		{"tools/call", mcpwire.Request{Method: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}}},
			hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "search"),
			map[string]any{"_meta": meta(), "name": "search", "arguments": map[string]any{"query": "rate"}}},
		{"resources/read names the uri", mcpwire.Request{Method: "resources/read", Params: map[string]any{"uri": "docs://pages/a&b"}},
			hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read", "Mcp-Name", "docs://pages/a&b"),
			map[string]any{"_meta": meta(), "uri": "docs://pages/a&b"}},
		{"prompts/get", mcpwire.Request{Method: "prompts/get", Params: map[string]any{"name": "explain-error"}},
			hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "prompts/get", "Mcp-Name", "explain-error"),
			map[string]any{"_meta": meta(), "name": "explain-error"}},
		{"a non-ASCII name is base64 in the header", mcpwire.Request{Method: "tools/call", Params: map[string]any{"name": "Hello, 世界"}},
			hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "=?base64?SGVsbG8sIOS4lueVjA==?="),
			map[string]any{"_meta": meta(), "name": "Hello, 世界"}},
		{"server/discover has no name", mcpwire.Request{Method: "server/discover"},
			hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover"),
			map[string]any{"_meta": meta()}},
		{"client and capabilities", mcpwire.Request{Method: "tools/list", Client: mcpwire.Implementation{Name: "x", Version: "1.2"},
			Capabilities: map[string]any{"roots": map[string]any{}}},
			hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"),
			map[string]any{"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "x", "version": "1.2"},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{"roots": map[string]any{}}}}},
		{"the caller's _meta is merged, its keys win", mcpwire.Request{Method: "tools/list", Params: map[string]any{"_meta": map[string]any{
			"progressToken": "p1", "io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{}}}}},
			hdr("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"),
			map[string]any{"_meta": map[string]any{
				"progressToken": "p1",
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "ratecheck", "version": "dev"},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{}}}}},
		{"the header follows a protocolVersion the caller sets", mcpwire.Request{Method: "tools/list", Params: map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion": "2099-01-01"}}},
			hdr("MCP-Protocol-Version", "2099-01-01", "Mcp-Method", "tools/list"),
			map[string]any{"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    "2099-01-01",
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "ratecheck", "version": "dev"},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{}}}},
		{"2025-11-25 in a session: no _meta, no Mcp-Method", mcpwire.Request{Revision: "2025-11-25", Method: "tools/call", SessionID: "s1",
			Params: map[string]any{"name": "search"}},
			hdr("MCP-Protocol-Version", "2025-11-25", "Mcp-Session-Id", "s1"),
			map[string]any{"name": "search"}},
		{"2025-11-25 without params", mcpwire.Request{Revision: "2025-11-25", Method: "tools/list"},
			hdr("MCP-Protocol-Version", "2025-11-25"), nil},
		{"initialize goes without a version header", mcpwire.Request{Revision: "2025-11-25", Method: "initialize",
			Params: map[string]any{"protocolVersion": "2025-11-25"}},
			hdr(), map[string]any{"protocolVersion": "2025-11-25"}},
		{"2025-06-18 has the version header", mcpwire.Request{Revision: "2025-06-18", Method: "tools/list"},
			hdr("MCP-Protocol-Version", "2025-06-18"), nil},
		{"2025-03-26 has none", mcpwire.Request{Revision: "2025-03-26", Method: "tools/list", SessionID: "s"},
			hdr("Mcp-Session-Id", "s"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, err := mcpwire.Build(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantHeader, tpl.Header); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			for _, id := range []uint64{0, 7, 1<<64 - 1} {
				b := decode(t, tpl.Body(id))
				if b.JSONRPC != "2.0" || b.ID == nil || *b.ID != id || b.Method != tt.req.Method {
					t.Errorf("id %d: body %s", id, tpl.Body(id))
				}
				if diff := cmp.Diff(tt.wantParams, b.Params); diff != "" {
					t.Errorf("params (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestBuildNotification(t *testing.T) {
	tpl, err := mcpwire.Build(mcpwire.Request{Revision: "2025-11-25", Method: "notifications/initialized", SessionID: "s", Notification: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(tpl.Body(9)), `{"jsonrpc":"2.0","method":"notifications/initialized"}`; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	if diff := cmp.Diff(hdr("MCP-Protocol-Version", "2025-11-25", "Mcp-Session-Id", "s"), tpl.Header); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

func TestBuildDoesNotTouchTheCallersParams(t *testing.T) {
	m := map[string]any{"progressToken": 1}
	p := map[string]any{"name": "search", "_meta": m}
	if _, err := mcpwire.Build(mcpwire.Request{Method: "tools/call", Params: p}); err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(p) != 2 {
		t.Errorf("Build changed the caller's maps: %v %v", p, m)
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		req  mcpwire.Request
		want string
	}{
		{mcpwire.Request{Method: "tools/list", Params: map[string]any{"_meta": "x"}}, "params._meta must be an object, not string"},
		{mcpwire.Request{Method: "tools/list", Params: map[string]any{"f": func() {}}}, "params: json: unsupported type: func()"},
	} {
		if _, err := mcpwire.Build(tc.req); err == nil || err.Error() != tc.want {
			t.Errorf("Build(%+v) error %v, want %q", tc.req, err, tc.want)
		}
	}
}

func TestNewRequest(t *testing.T) {
	tpl, _ := mcpwire.Build(mcpwire.Request{Method: "tools/list"})
	req, err := tpl.NewRequest(context.Background(), "http://127.0.0.1:1/mcp", 3)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X", "1")
	if req.Method != "POST" || req.ContentLength != int64(len(tpl.Body(3))) || tpl.Header.Get("X") != "" {
		t.Errorf("request %s %d; template header %v", req.Method, req.ContentLength, tpl.Header)
	}
}

// TestHeaderValueEncoding holds the encoder to the examples of the
// 2026-07-28 transport page (Value Encoding).
func TestHeaderValueEncoding(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"us-west1", "us-west1"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
		{"tab\there", "=?base64?dGFiCWhlcmU=?="},
		{"docs://pages/x y", "docs://pages/x y"},
		{"", ""},
	} {
		got := mcpwire.EncodeHeaderValue(tc.in)
		if got != tc.want {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if back, ok := mcpwire.DecodeHeaderValue(got); !ok || back != tc.in {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v", got, back, ok)
		}
	}
	if _, ok := mcpwire.DecodeHeaderValue("=?base64?!!?="); ok {
		t.Error("DecodeHeaderValue accepted invalid base64")
	}
}

func TestRevisions(t *testing.T) {
	if diff := cmp.Diff([]string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}, mcpwire.Revisions()); diff != "" {
		t.Errorf("Revisions (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		supported []string
		want      string
	}{
		{[]string{"2024-11-05", "2025-06-18", "2025-11-25"}, "2025-11-25"},
		{[]string{"2026-07-28", "2025-11-25"}, "2026-07-28"},
		{[]string{"2024-11-05"}, ""},
		{nil, ""},
	} {
		if got, ok := mcpwire.Newest(tc.supported); got != tc.want || ok != (tc.want != "") {
			t.Errorf("Newest(%v) = %q, %v; want %q", tc.supported, got, ok, tc.want)
		}
	}
	if !mcpwire.Modern("2026-07-28") || mcpwire.Modern("2025-11-25") || !mcpwire.Known("2025-03-26") || mcpwire.Known("2024-11-05") {
		t.Error("Modern or Known is wrong")
	}
}

// BenchmarkTemplateBody is the per-request cost on the attack's hot path:
// stamping an id into a rendered tools/call.
func BenchmarkTemplateBody(b *testing.B) {
	tpl, _ := mcpwire.Build(mcpwire.Request{Method: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits", "limit": 5}}})
	b.ReportAllocs()
	var id uint64
	for b.Loop() {
		id++
		_ = tpl.Body(id)
	}
}

// BenchmarkBuild is the cost of rendering a request from scratch (once per
// profile request, or per client Call).
func BenchmarkBuild(b *testing.B) {
	req := mcpwire.Request{Method: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits", "limit": 5}}}
	b.ReportAllocs()
	for b.Loop() {
		tpl, _ := mcpwire.Build(req)
		_ = tpl.Body(1)
	}
}
