package attack

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/google/go-cmp/cmp"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/method"
)

func TestMCPTargetsAgreeWithTheirBodies(t *testing.T) {
	s := scenario.Stream{Name: "s", Surface: method.MCP, Requests: []scenario.Request{
		{RPC: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}}},
		{RPC: "resources/read", Params: map[string]any{"uri": "docs://pages/api-errors"}},
		{RPC: "tools/list", Params: map[string]any{"_meta": map[string]any{"progressToken": "p"}}},
	}}
	var ids atomic.Uint64
	tr, err := targeter(&s, "http://127.0.0.1:1/", http.Header{"X-Extra": {"1"}}, &ids, "test")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[float64]bool{}
	for i := range 6 {
		var tgt vegeta.Target
		if err := tr(&tgt); err != nil {
			t.Fatal(err)
		}
		var body struct {
			JSONRPC string  `json:"jsonrpc"`
			ID      float64 `json:"id"`
			Method  string  `json:"method"`
			Params  struct {
				Meta map[string]any `json:"_meta"`
				Name string         `json:"name"`
				URI  string         `json:"uri"`
			} `json:"params"`
		}
		if err := json.Unmarshal(tgt.Body, &body); err != nil {
			t.Fatalf("request %d body %s: %v", i, tgt.Body, err)
		}
		h := tgt.Header
		if tgt.Method != "POST" || tgt.URL != "http://127.0.0.1:1/mcp" || body.JSONRPC != "2.0" {
			t.Errorf("request %d: %s %s jsonrpc %q", i, tgt.Method, tgt.URL, body.JSONRPC)
		}
		if h.Get("Mcp-Method") != body.Method || h.Get("MCP-Protocol-Version") != mcpwire.Latest ||
			body.Params.Meta["io.modelcontextprotocol/protocolVersion"] != mcpwire.Latest {
			t.Errorf("request %d: headers %v disagree with body %s", i, h, tgt.Body)
		}
		// Revision 2026-07-28 requires all three _meta fields; a profile's
		// own _meta is merged in.
		if diff := cmp.Diff(map[string]any{"name": "ratecheck", "version": "test"}, body.Params.Meta["io.modelcontextprotocol/clientInfo"]); diff != "" {
			t.Errorf("request %d: clientInfo (-want +got):\n%s", i, diff)
		}
		if caps, ok := body.Params.Meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any); !ok || len(caps) != 0 {
			t.Errorf("request %d: clientCapabilities %v, want {}", i, body.Params.Meta["io.modelcontextprotocol/clientCapabilities"])
		}
		if body.Method == "tools/list" && body.Params.Meta["progressToken"] != "p" {
			t.Errorf("request %d: the profile's _meta was not merged: %s", i, tgt.Body)
		}
		wantName := map[string]string{"tools/call": body.Params.Name, "resources/read": body.Params.URI}[body.Method]
		if h.Get("Mcp-Name") != wantName {
			t.Errorf("request %d: Mcp-Name %q, body says %q", i, h.Get("Mcp-Name"), wantName)
		}
		if h.Get("Accept") != "application/json, text/event-stream" || h.Get("Content-Type") != "application/json" || h.Get("X-Extra") != "1" {
			t.Errorf("request %d: headers %v", i, h)
		}
		if h.Get("Origin") != "" || h.Get("Mcp-Session-Id") != "" {
			t.Errorf("request %d sends Origin or a session", i)
		}
		if seen[body.ID] {
			t.Errorf("id %v repeated", body.ID)
		}
		seen[body.ID] = true
	}
}

func TestRESTTarget(t *testing.T) {
	s := scenario.Stream{Name: "s", Surface: method.REST, Requests: []scenario.Request{{Path: "/api/public/search", Query: map[string]string{"q": "rate limits", "limit": "5"}}}}
	tr, err := targeter(&s, "http://h:1", nil, new(atomic.Uint64), "test")
	if err != nil {
		t.Fatal(err)
	}
	var tgt vegeta.Target
	_ = tr(&tgt)
	if tgt.Method != "GET" || tgt.URL != "http://h:1/api/public/search?limit=5&q=rate+limits" || len(tgt.Body) != 0 {
		t.Errorf("got %s %s body %q", tgt.Method, tgt.URL, tgt.Body)
	}
}

// BenchmarkMCPTargeter measures stamping one MCP request, on the attack's hot path.
func BenchmarkMCPTargeter(b *testing.B) {
	s := scenario.Stream{Name: "s", Surface: method.MCP, Requests: []scenario.Request{{RPC: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}}}}}
	tr, _ := targeter(&s, "http://127.0.0.1:1", nil, new(atomic.Uint64), "test")
	var tgt vegeta.Target
	b.ReportAllocs()
	for b.Loop() {
		_ = tr(&tgt)
	}
}

// TestTargetsInAnOlderRevision: in a session of 2025-11-25 every JSON-RPC
// message carries the session as it stands at each send (it may be
// renewed) and MCP-Protocol-Version, and no _meta of 2026-07-28; a
// request that names its own Mcp-Session-Id keeps it, and a GET or DELETE
// of the endpoint never carries the shared session.
func TestTargetsInAnOlderRevision(t *testing.T) {
	var sid atomic.Pointer[client.Session]
	sid.Store(&client.Session{Revision: mcpwire.Revision20251125, ID: "s1"})
	for _, tt := range []struct {
		name        string
		req         scenario.Request
		wantSession []string // at each of two sends; the session is renewed between them
		wantVersion string
	}{
		{"tools/call", scenario.Request{RPC: "tools/call", Params: map[string]any{"name": "search"}}, []string{"s1", "s2"}, mcpwire.Revision20251125},
		{"own session", scenario.Request{RPC: "tools/list", Headers: map[string]string{"mcp-session-id": "mine"}}, []string{"mine", "mine"}, mcpwire.Revision20251125},
		{"raw body", scenario.Request{RPC: "tools/list", Body: ptr(`{"jsonrpc":`)}, []string{"s1", "s2"}, mcpwire.Revision20251125},
		{"GET", scenario.Request{Method: http.MethodGet}, []string{"", ""}, mcpwire.Revision20251125},
		{"DELETE", scenario.Request{Method: http.MethodDelete}, []string{"", ""}, mcpwire.Revision20251125},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sid.Store(&client.Session{Revision: mcpwire.Revision20251125, ID: "s1"})
			s := scenario.Stream{Name: "s", Surface: method.MCP, Requests: []scenario.Request{tt.req}}
			tr, err := SpeakingTargeter(&s, "http://127.0.0.1:1", nil, new(atomic.Uint64), "test", mcpwire.Revision20251125, &sid)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tt.wantSession {
				var tgt vegeta.Target
				if err := tr(&tgt); err != nil {
					t.Fatal(err)
				}
				if got := tgt.Header.Get("Mcp-Session-Id"); got != want {
					t.Errorf("send %d: Mcp-Session-Id %q, want %q", i, got, want)
				}
				if got := tgt.Header.Get("MCP-Protocol-Version"); got != tt.wantVersion {
					t.Errorf("send %d: MCP-Protocol-Version %q, want %q", i, got, tt.wantVersion)
				}
				if tgt.Header.Get("Mcp-Method") != "" || bytes.Contains(tgt.Body, []byte("io.modelcontextprotocol/")) {
					t.Errorf("send %d carries 2026-07-28 fields: %v %s", i, tgt.Header, tgt.Body)
				}
				sid.Store(&client.Session{Revision: mcpwire.Revision20251125, ID: "s2"})
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
