package attack

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestMCPTargetsAgreeWithTheirBodies(t *testing.T) {
	s := Stream{Name: "s", Surface: MCP, Requests: []Request{
		{RPC: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}}},
		{RPC: "resources/read", Params: map[string]any{"uri": "docs://pages/api-errors"}},
		{RPC: "tools/list"},
	}}
	var ids atomic.Uint64
	tr, err := s.Targeter("http://127.0.0.1:1/", http.Header{"X-Extra": {"1"}}, &ids)
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
		if h.Get("Mcp-Method") != body.Method || h.Get("MCP-Protocol-Version") != MCPProtocolVersion ||
			body.Params.Meta["io.modelcontextprotocol/protocolVersion"] != MCPProtocolVersion {
			t.Errorf("request %d: headers %v disagree with body %s", i, h, tgt.Body)
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
	s := Stream{Name: "s", Surface: REST, Requests: []Request{{Path: "/api/public/search", Query: map[string]string{"q": "rate limits", "limit": "5"}}}}
	tr, err := s.Targeter("http://h:1", nil, new(atomic.Uint64))
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
	s := Stream{Name: "s", Surface: MCP, Requests: []Request{{RPC: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}}}}}
	tr, _ := s.Targeter("http://127.0.0.1:1", nil, new(atomic.Uint64))
	var tgt vegeta.Target
	b.ReportAllocs()
	for b.Loop() {
		_ = tr(&tgt)
	}
}
