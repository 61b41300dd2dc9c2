package refserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/google/go-cmp/cmp"
)

// fakeClock is a settable monotonic clock, safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Duration  { return time.Duration(c.ns.Load()) }
func (c *fakeClock) set(d time.Duration) { c.ns.Store(int64(d)) }

// newTestTarget starts a reference target on a loopback httptest server.
func newTestTarget(t *testing.T, mutate func(*Config)) (*httptest.Server, *fakeClock, *syncBuffer) {
	t.Helper()
	clock := &fakeClock{}
	logs := &syncBuffer{}
	cfg := DefaultConfig()
	cfg.Clock = clock.now
	cfg.Log = logs
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts, clock, logs
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

// String returns what was written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}

// clientFrom returns an HTTP client whose connections come from the loopback
// address ip, a distinct client address on Linux.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
}

// mcpRequest builds a /mcp POST as a correct client sends it (package
// mcpwire renders it: headers that agree with the body, and the three
// _meta fields).
func mcpRequest(t testing.TB, base string, id int, method string, params map[string]any) *http.Request {
	t.Helper()
	tpl, err := mcpwire.Build(mcpwire.Request{Method: method, Params: params, Client: mcpwire.Implementation{Name: "ratecheck-test", Version: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := tpl.NewRequest(context.Background(), base+"/mcp", uint64(id))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// rawMCP builds a /mcp POST of a given body with the headers of a correct
// tools/list (then kv, header and value pairs; an empty value deletes).
func rawMCP(t testing.TB, base, body string, kv ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {mcpwire.Accept},
		"Mcp-Protocol-Version": {ProtocolVersion}, "Mcp-Method": {"tools/list"}}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			req.Header.Del(kv[i])
		} else {
			req.Header.Set(kv[i], kv[i+1])
		}
	}
	return req
}

// answer is what the tests look at in a response.
type answer struct {
	status  int
	allow   string
	errCode string // REST error.code
	rpcCode int    // JSON-RPC error code
	isError bool   // result.isError
	body    string
}

func do(t testing.TB, c *http.Client, req *http.Request) answer {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		Error  json.RawMessage `json:"error"`
		Result struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	_ = json.Unmarshal(b, &v)
	a := answer{status: resp.StatusCode, allow: resp.Header.Get("Allow"), isError: v.Result.IsError, body: string(b)}
	var restErr struct{ Code string }
	var rpcErr struct{ Code int }
	if json.Unmarshal(v.Error, &restErr) == nil {
		a.errCode = restErr.Code
	} else if json.Unmarshal(v.Error, &rpcErr) == nil {
		a.rpcCode = rpcErr.Code
	}
	return a
}

func get(t testing.TB, base, path string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestFailureTable sends one request per row of the seed's failure table
// (and the successes beside them) and checks status and error shape.
func TestFailureTable(t *testing.T) {
	ts, _, _ := newTestTarget(t, func(c *Config) { c.AllowedOrigins = []string{"https://docs.example"} })
	base := ts.URL
	withHeader := func(req *http.Request, k, v string) *http.Request { req.Header.Set(k, v); return req }
	tests := []struct {
		name string
		req  *http.Request
		want answer
	}{
		{"rest search", get(t, base, "/api/public/search?q=rate+limits&limit=3"), answer{status: 200}},
		{"rest search default limit", get(t, base, "/api/public/search?q=retry"), answer{status: 200}},
		{"rest page", get(t, base, "/api/public/pages/errors-and-retries"), answer{status: 200}},
		{"rest manifest", get(t, base, "/api/public/manifests/developers"), answer{status: 200}},
		{"rest unknown page", get(t, base, "/api/public/pages/nope"), answer{status: 404, errCode: "not_found"}},
		{"rest unknown manifest", get(t, base, "/api/public/manifests/nope"), answer{status: 404, errCode: "not_found"}},
		{"rest unknown route", get(t, base, "/api/public/other"), answer{status: 404, errCode: "not_found"}},
		{"rest q too short", get(t, base, "/api/public/search?q=r"), answer{status: 422, errCode: "invalid_parameter"}},
		{"rest q missing", get(t, base, "/api/public/search"), answer{status: 422, errCode: "invalid_parameter"}},
		{"rest limit above 25", get(t, base, "/api/public/search?q=rate&limit=26"), answer{status: 422, errCode: "invalid_parameter"}},
		{"rest limit zero", get(t, base, "/api/public/search?q=rate&limit=0"), answer{status: 422, errCode: "invalid_parameter"}},
		{"rest limit not a number", get(t, base, "/api/public/search?q=rate&limit=ten"), answer{status: 422, errCode: "invalid_parameter"}},
		{"rest POST", func() *http.Request { r, _ := http.NewRequest("POST", base+"/api/public/search?q=rate", nil); return r }(),
			answer{status: 405, allow: "GET", errCode: "method_not_allowed"}},
		{"mcp tools/call search", mcpRequest(t, base, 1, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits", "limit": 5}}), answer{status: 200}},
		{"mcp tools/call get_page", mcpRequest(t, base, 2, "tools/call", map[string]any{"name": "get_page", "arguments": map[string]any{"ref": "errors-and-retries"}}), answer{status: 200}},
		{"mcp server/discover", mcpRequest(t, base, 3, "server/discover", nil), answer{status: 200}},
		{"mcp tools/list", mcpRequest(t, base, 4, "tools/list", nil), answer{status: 200}},
		{"mcp resources/list", mcpRequest(t, base, 5, "resources/list", nil), answer{status: 200}},
		{"mcp resources/read", mcpRequest(t, base, 6, "resources/read", map[string]any{"uri": "docs://pages/api-errors"}), answer{status: 200}},
		{"mcp prompts/list", mcpRequest(t, base, 7, "prompts/list", nil), answer{status: 200}},
		{"mcp prompts/get", mcpRequest(t, base, 8, "prompts/get", map[string]any{"name": "explain-error", "arguments": map[string]any{"status": "429"}}), answer{status: 200}},
		{"mcp allowed Origin", withHeader(mcpRequest(t, base, 9, "tools/list", nil), "Origin", "https://docs.example"), answer{status: 200}},
		{"mcp session headers ignored", withHeader(withHeader(mcpRequest(t, base, 10, "tools/list", nil), "Mcp-Session-Id", "abc"), "Last-Event-ID", "7"), answer{status: 200}},
		{"mcp empty query isError", mcpRequest(t, base, 11, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": ""}}), answer{status: 200, isError: true}},
		{"mcp unknown page isError", mcpRequest(t, base, 12, "tools/call", map[string]any{"name": "get_page", "arguments": map[string]any{"ref": "nope"}}), answer{status: 200, isError: true}},
		{"mcp unknown tool", mcpRequest(t, base, 13, "tools/call", map[string]any{"name": "nope"}), answer{status: 200, rpcCode: -32602}},
		{"mcp unknown resource", mcpRequest(t, base, 14, "resources/read", map[string]any{"uri": "docs://pages/nope"}), answer{status: 200, rpcCode: -32602}},
		{"mcp unknown prompt", mcpRequest(t, base, 15, "prompts/get", map[string]any{"name": "nope"}), answer{status: 200, rpcCode: -32602}},
		{"mcp search limit above 25", mcpRequest(t, base, 16, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate", "limit": 26}}), answer{status: 200, rpcCode: -32602}},
		{"mcp GET", get(t, base, "/mcp"), answer{status: 405, allow: "POST", rpcCode: -32600}},
		{"mcp DELETE", func() *http.Request { r, _ := http.NewRequest("DELETE", base+"/mcp", nil); return r }(), answer{status: 405, allow: "POST", rpcCode: -32600}},
		{"mcp foreign Origin", withHeader(mcpRequest(t, base, 17, "tools/list", nil), "Origin", "https://evil.example"), answer{status: 403, rpcCode: -32600}},
		{"mcp body over 256 KiB", func() *http.Request {
			r := mcpRequest(t, base, 18, "tools/list", nil)
			r.Body = io.NopCloser(strings.NewReader(strings.Repeat(" ", MaxMCPBody+1)))
			r.ContentLength = MaxMCPBody + 1
			return r
		}(), answer{status: 413, rpcCode: -32600}},
		{"mcp bad JSON", func() *http.Request {
			r := mcpRequest(t, base, 19, "tools/list", nil)
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(`{"jsonrpc":`)), 11
			return r
		}(), answer{status: 400, rpcCode: -32700}},
		{"mcp version header disagrees with _meta", withHeader(mcpRequest(t, base, 20, "tools/list", map[string]any{"_meta": map[string]any{mcpwire.MetaProtocolVersion: "2025-11-25"}}),
			"MCP-Protocol-Version", ProtocolVersion), answer{status: 400, rpcCode: -32020}},
		{"mcp version header missing", withHeader(mcpRequest(t, base, 21, "tools/list", nil), "MCP-Protocol-Version", ""), answer{status: 400, rpcCode: -32020}},
		{"mcp version unsupported", withHeader(mcpRequest(t, base, 20, "tools/list", nil), "MCP-Protocol-Version", "2025-06-18"), answer{status: 400, rpcCode: -32022}},
		{"mcp version checked before the other headers", withHeader(withHeader(mcpRequest(t, base, 20, "tools/list", nil), "MCP-Protocol-Version", "2025-06-18"), "Mcp-Method", "x"), answer{status: 400, rpcCode: -32022}},
		{"mcp initialize", rawMCP(t, base, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`,
			"MCP-Protocol-Version", "", "Mcp-Method", ""), answer{status: 400, rpcCode: -32022}},
		{"mcp no _meta", rawMCP(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), answer{status: 400, rpcCode: -32602}},
		{"mcp _meta without protocolVersion", rawMCP(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`), answer{status: 400, rpcCode: -32602}},
		{"mcp _meta without clientCapabilities", rawMCP(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`), answer{status: 400, rpcCode: -32602}},
		{"mcp clientCapabilities not an object", rawMCP(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}`), answer{status: 400, rpcCode: -32602}},
		{"mcp clientCapabilities null", rawMCP(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}}}`), answer{status: 400, rpcCode: -32602}},
		{"mcp clientInfo without version", rawMCP(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"x"}}}}`), answer{status: 400, rpcCode: -32602}},
		{"mcp clientInfo is optional", rawMCP(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`), answer{status: 200}},
		{"mcp Mcp-Name in base64", withHeader(mcpRequest(t, base, 26, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}}), "Mcp-Name", "=?base64?c2VhcmNo?="), answer{status: 200}},
		{"mcp method header mismatch", withHeader(mcpRequest(t, base, 22, "tools/list", nil), "Mcp-Method", "tools/call"), answer{status: 400, rpcCode: -32020}},
		{"mcp name header mismatch", withHeader(mcpRequest(t, base, 23, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}}), "Mcp-Name", "get_page"), answer{status: 400, rpcCode: -32020}},
		{"mcp unknown method", mcpRequest(t, base, 24, "no/such/method", nil), answer{status: 404, rpcCode: -32601}},
		{"mcp ping is gone", mcpRequest(t, base, 25, "ping", nil), answer{status: 404, rpcCode: -32601}},
		{"no surface", get(t, base, "/"), answer{status: 404, errCode: "not_found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := do(t, http.DefaultClient, tt.req)
			body := got.body
			got.body = ""
			if got != tt.want {
				t.Errorf("got %+v, want %+v\nbody: %s", got, tt.want, body)
			}
			if got.status == 200 && !strings.Contains(body, `"resultType":"complete"`) && strings.HasSuffix(tt.req.URL.Path, "/mcp") && got.rpcCode == 0 {
				t.Errorf("MCP result lacks resultType complete: %s", body)
			}
		})
	}
}

// TestUnsupportedVersionNamesTheRevision: a request of another revision,
// and an older client's initialize, get 400 -32022 whose data lists the
// revision spoken and echoes the one requested (the spec's
// UnsupportedProtocolVersionError).
func TestUnsupportedVersionNamesTheRevision(t *testing.T) {
	ts, _, _ := newTestTarget(t, nil)
	for _, tc := range []struct {
		name          string
		req           *http.Request
		wantRequested string
	}{
		{"initialize of 2025-11-25", rawMCP(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`,
			"MCP-Protocol-Version", "", "Mcp-Method", ""), "2025-11-25"},
		{"a 2025-06-18 header", withHeaderTo(mcpRequest(t, ts.URL, 1, "tools/list", nil), "MCP-Protocol-Version", "2025-06-18"), "2025-06-18"},
		{"a future revision", withHeaderTo(mcpRequest(t, ts.URL, 1, "tools/list", nil), "MCP-Protocol-Version", "2099-01-01"), "2099-01-01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, http.DefaultClient, tc.req)
			var got struct {
				ID    json.RawMessage
				Error struct {
					Code int
					Data mcpwire.UnsupportedVersion
				}
			}
			if err := json.Unmarshal([]byte(a.body), &got); err != nil || a.status != 400 || got.Error.Code != -32022 || string(got.ID) != "1" {
				t.Fatalf("%d %s (%v)", a.status, a.body, err)
			}
			want := mcpwire.UnsupportedVersion{Supported: []string{"2026-07-28"}, Requested: tc.wantRequested}
			if diff := cmp.Diff(want, got.Error.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

func withHeaderTo(req *http.Request, k, v string) *http.Request { req.Header.Set(k, v); return req }

// TestResultMeta: every result names the server in
// result._meta["io.modelcontextprotocol/serverInfo"] (where the go-sdk
// client reads it: mcp/client.go decodeMetaValue(res.GetMeta(),
// MetaKeyServerInfo)), and the results 2026-07-28 makes cacheable carry
// ttlMs (>= 0) and cacheScope (public or private).
func TestResultMeta(t *testing.T) {
	ts, _, _ := newTestTarget(t, nil)
	for _, tc := range []struct {
		method    string
		params    map[string]any
		cacheable bool
	}{
		{"server/discover", nil, true},
		{"tools/list", nil, true},
		{"resources/list", nil, true},
		{"resources/read", map[string]any{"uri": "docs://pages/errors-and-retries"}, true},
		{"prompts/list", nil, true},
		{"tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}}, false},
		{"tools/call", map[string]any{"name": "get_page", "arguments": map[string]any{"ref": "nope"}}, false},
		{"prompts/get", map[string]any{"name": "explain-error", "arguments": map[string]any{"status": "429"}}, false},
	} {
		t.Run(tc.method, func(t *testing.T) {
			a := do(t, http.DefaultClient, mcpRequest(t, ts.URL, 1, tc.method, tc.params))
			var got struct {
				Result map[string]json.RawMessage
			}
			if err := json.Unmarshal([]byte(a.body), &got); err != nil || a.status != 200 || got.Result == nil {
				t.Fatalf("%d %s", a.status, a.body)
			}
			var meta struct {
				Server *mcpwire.Implementation `json:"io.modelcontextprotocol/serverInfo"`
			}
			if json.Unmarshal(got.Result["_meta"], &meta) != nil || meta.Server == nil || *meta.Server != (mcpwire.Implementation{Name: ServerName, Version: ServerVersion}) {
				t.Errorf("result._meta %s lacks serverInfo", got.Result["_meta"])
			}
			var ttl int
			var scope string
			hasTTL := json.Unmarshal(got.Result["ttlMs"], &ttl) == nil && ttl >= 0
			hasScope := json.Unmarshal(got.Result["cacheScope"], &scope) == nil && (scope == "public" || scope == "private")
			if hasTTL != tc.cacheable || hasScope != tc.cacheable {
				t.Errorf("ttlMs %s, cacheScope %s; cacheable: %v", got.Result["ttlMs"], got.Result["cacheScope"], tc.cacheable)
			}
			if _, ok := got.Result["serverInfo"]; ok {
				t.Error("serverInfo outside _meta")
			}
		})
	}
}

// TestBurstExactlyAtLimit checks the done-when of the contract: a burst of
// L+10 from one address gets exactly L admitted and 10 refusals with the
// documented shape, another address is unaffected, and capacity returns
// exactly one window after the oldest counted request.
func TestBurstExactlyAtLimit(t *testing.T) {
	ts, clock, logs := newTestTarget(t, func(c *Config) { c.Window = 4 * time.Second })
	c1 := clientFrom("127.0.0.1")
	tests := []struct {
		surface string
		limit   int
		req     func(i int) *http.Request
		refused answer
	}{
		{"rest", 240, func(int) *http.Request { return get(t, ts.URL, "/api/public/search?q=rate") }, answer{status: 429, errCode: "rate_limited"}},
		{"mcp", 120, func(i int) *http.Request {
			return mcpRequest(t, ts.URL, i, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}})
		}, answer{status: 429, rpcCode: -32603}},
	}
	for _, tt := range tests {
		t.Run(tt.surface, func(t *testing.T) {
			clock.set(0)
			counts := map[int]int{}
			for i := range tt.limit + 10 {
				a := do(t, c1, tt.req(i))
				counts[a.status]++
				if a.status == 429 {
					a.body = ""
					if a != tt.refused {
						t.Fatalf("refusal %+v, want %+v", a, tt.refused)
					}
				}
			}
			if counts[200] != tt.limit || counts[429] != 10 {
				t.Fatalf("burst of %d: %v, want %d × 200 and 10 × 429", tt.limit+10, counts, tt.limit)
			}
			if a := do(t, clientFrom("127.0.0.4"), tt.req(0)); a.status != 200 {
				t.Fatalf("another address got %d, want 200", a.status)
			}
			// Forged forwarding headers do not move the client to a fresh bucket.
			for _, h := range []string{"X-Forwarded-For", "Forwarded", "X-Real-IP"} {
				req := tt.req(0)
				req.Header.Set(h, "203.0.113.9")
				if a := do(t, c1, req); a.status != 429 {
					t.Fatalf("with %s got %d, want 429", h, a.status)
				}
			}
			clock.set(4 * time.Second)
			if a := do(t, c1, tt.req(0)); a.status != 200 {
				t.Fatalf("exactly one window later got %d, want 200", a.status)
			}
		})
	}
	if strings.Contains(logs.String(), "rate limits") {
		t.Error("log lines contain a request body")
	}
	if !strings.Contains(logs.String(), "status=429 code=rate_limited") || !strings.Contains(logs.String(), "status=429 code=-32603") {
		t.Errorf("no refusal logged:\n%s", logs.String())
	}
}

// TestRefusalsExtendLockout: L refused requests 2 s after a burst keep the
// address locked out until they age out, and not a moment longer.
func TestRefusalsExtendLockout(t *testing.T) {
	ts, clock, _ := newTestTarget(t, func(c *Config) { c.Window = 4 * time.Second })
	c := clientFrom("127.0.0.1")
	req := func() *http.Request { return get(t, ts.URL, "/api/public/pages/errors-and-retries") }
	for range 240 {
		do(t, c, req())
	}
	clock.set(2 * time.Second)
	for range 240 {
		if a := do(t, c, req()); a.status != 429 {
			t.Fatalf("during lockout got %d", a.status)
		}
	}
	clock.set(6*time.Second - time.Nanosecond)
	if a := do(t, clientFrom("127.0.0.3"), req()); a.status != 200 {
		t.Fatalf("other address got %d", a.status)
	}
	clock.set(6 * time.Second)
	if a := do(t, c, req()); a.status != 200 {
		t.Fatalf("when the refusals aged out got %d, want 200", a.status)
	}
}

func TestSurfacesHaveSeparateCounters(t *testing.T) {
	ts, _, _ := newTestTarget(t, func(c *Config) { c.RESTLimit, c.MCPLimit = 2, 2 })
	for range 3 {
		do(t, http.DefaultClient, get(t, ts.URL, "/api/public/search?q=rate"))
	}
	if a := do(t, http.DefaultClient, mcpRequest(t, ts.URL, 1, "tools/list", nil)); a.status != 200 {
		t.Fatalf("MCP after REST exhausted got %d, want 200", a.status)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		spec    string
		want    int // status, or 0 for a transport error
		wantLog string
	}{
		{"5xx=1", 503, "code=injected_fault"},
		{"reset=1", 0, "code=reset"},
		{"delay=1ms", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			f, err := ParseFaults(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			ts, _, logs := newTestTarget(t, func(c *Config) { c.Faults = f })
			resp, err := http.Get(ts.URL + "/api/public/search?q=rate")
			got := 0
			if err == nil {
				got = resp.StatusCode
				resp.Body.Close()
			} else if !errors.Is(err, syscall.ECONNRESET) && !strings.Contains(err.Error(), "EOF") {
				t.Fatalf("transport error %v, want a reset", err)
			}
			if got != tt.want {
				t.Fatalf("status %d, want %d", got, tt.want)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, logs)
			}
		})
	}
}

func TestFaultsAreDeterministic(t *testing.T) {
	f, _ := ParseFaults("5xx=0.3,reset=0.2,delay=1ms-9ms")
	draws := func() []fault {
		s := newFaultSource(f, 42)
		var out []fault
		for range 100 {
			k, _ := s.draw()
			out = append(out, k)
		}
		return out
	}
	a, b := draws(), draws()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d differs between two sources of the same seed", i)
		}
	}
}

func TestFrozen(t *testing.T) {
	f := Faults{FreezeFor: time.Second, FreezeEvery: 10 * time.Second}
	for _, c := range []struct{ now, want time.Duration }{{0, 0}, {8999 * ms, 0}, {9 * time.Second, time.Second}, {9500 * ms, 500 * ms}, {19900 * ms, 100 * ms}} {
		if got := f.frozen(c.now); got != c.want {
			t.Errorf("frozen(%v) = %v, want %v", c.now, got, c.want)
		}
	}
}

func TestParseFaults(t *testing.T) {
	tests := []struct {
		spec    string
		want    Faults
		wantErr string
	}{
		{"", Faults{}, ""},
		{"5xx=0.02,reset=0.01,delay=5ms-40ms", Faults{ServerError: 0.02, Reset: 0.01, DelayMin: 5 * ms, DelayMax: 40 * ms}, ""},
		{"delay=3ms", Faults{DelayMin: 3 * ms, DelayMax: 3 * ms}, ""},
		{"5xx", Faults{}, `fault "5xx": want KEY=VALUE (keys: 5xx, reset, delay, freeze)`},
		{"5xx=2", Faults{}, "fault 5xx=2: want a probability between 0 and 1"},
		{"reset=x", Faults{}, "fault reset=x: want a probability between 0 and 1"},
		{"delay=40ms-5ms", Faults{}, "fault delay=40ms-5ms: want a duration or MIN-MAX with 0 <= MIN <= MAX, such as 5ms-40ms"},
		{"stall=1", Faults{}, `fault "stall": unknown kind (want 5xx, reset, delay or freeze)`},
		{"freeze=1s/10s", Faults{FreezeFor: time.Second, FreezeEvery: 10 * time.Second}, ""},
		{"freeze=10s/1s", Faults{}, "fault freeze=10s/1s: want FOR/EVERY with 0 < FOR < EVERY, such as 1s/10s"},
		{"5xx=0.1,5xx=0.2", Faults{}, `fault "5xx" given twice`},
		{"5xx=0.7,reset=0.6", Faults{}, "faults 5xx=0.7 and reset=0.6 add up to more than 1"},
	}
	for _, tt := range tests {
		got, err := ParseFaults(tt.spec)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseFaults(%q) error = %v, want %q", tt.spec, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseFaults(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
		}
		if back, _ := ParseFaults(got.String()); back != got {
			t.Errorf("ParseFaults(%q.String()) = %+v", got, back)
		}
	}
}

// FuzzParseMCP checks that no body and header combination panics the MCP
// parser, and that an accepted request always has headers that agree.
func FuzzParseMCP(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`), "tools/call", "search", ProtocolVersion)
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"docs://pages/x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`), "resources/read", "docs://pages/x", ProtocolVersion)
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"a","version":"1"}},"name":"search"}}`), "tools/call", "search", ProtocolVersion)
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`), "", "", "")
	f.Add([]byte(`[{"jsonrpc":"2.0"}]`), "", "", "")
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"x","params":[1]}`), "x", "", ProtocolVersion)
	f.Fuzz(func(t *testing.T, body []byte, method, name, version string) {
		h := http.Header{}
		h.Set("Mcp-Method", method)
		h.Set("Mcp-Name", name)
		h.Set("MCP-Protocol-Version", version)
		call, err := parseMCP(h, body)
		if err != nil {
			if err.Status < 400 || err.Code >= 0 {
				t.Fatalf("error %+v has no error status or code", err)
			}
			return
		}
		if call.Method != h.Get("Mcp-Method") || h.Get("MCP-Protocol-Version") != ProtocolVersion {
			t.Fatalf("accepted %q with headers %v", body, h)
		}
		var v string
		if json.Unmarshal(call.Params.Meta[mcpwire.MetaProtocolVersion], &v) != nil || v != ProtocolVersion || !isObject(call.Params.Meta[mcpwire.MetaClientCapabilities]) {
			t.Fatalf("accepted %q without the _meta of %s", body, ProtocolVersion)
		}
	})
}

// BenchmarkServeMCP measures one /mcp tools/call through the handler.
func BenchmarkServeMCP(b *testing.B) {
	cfg := DefaultConfig()
	cfg.MCPLimit = 1 << 30
	srv, _ := New(cfg)
	req := mcpRequest(b, "http://127.0.0.1", 1, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits"}})
	body, _ := io.ReadAll(req.Body)
	b.ReportAllocs()
	for b.Loop() {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.RemoteAddr = "127.0.0.1:5555"
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body)
		}
	}
}

// BenchmarkFloodHandler compares the reference target's handler under a
// flood from one address (almost every answer a 429) with a minimal handler
// that only counts requests per address under a mutex, in the same run.
func BenchmarkFloodHandler(b *testing.B) {
	cfg := DefaultConfig()
	srv, _ := New(cfg)
	var mu sync.Mutex
	counts := map[string]int{}
	minimal := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		counts[ClientAddr(r)]++
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})
	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"minimal", minimal}, {"serve", srv}} {
		b.Run(h.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/api/public/search?q=rate", nil)
			req.RemoteAddr = "127.0.0.1:5555"
			b.ReportAllocs()
			for b.Loop() {
				h.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

// TestListenCutsOffTrickledBodies: a client that sends its headers and then
// trickles its body, a byte at a time, is cut off once the whole request
// has taken ReadTimeout; before, only the headers had a deadline and such
// a client held its connection and handler for as long as it liked.
func TestListenCutsOffTrickledBodies(t *testing.T) {
	for _, path := range []string{"/mcp", "/api/public/search"} {
		t.Run(path, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ReadTimeout = 100 * time.Millisecond
			srv, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			l, err := Listen(srv, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			c, err := net.Dial("tcp", l.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", path)
			done := make(chan struct{})
			defer close(done)
			go func() { // trickle, until cut off or the test ends
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-done:
						return
					case <-tick.C:
						if _, err := c.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
			// The server ends the connection: the read ends in EOF or a
			// reset, never in this test's own (generous) deadline.
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err = io.Copy(io.Discard, c)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the server still held the connection of a client trickling its body")
			}
		})
	}
}

// TestClientAddr: the address a request is counted against is the
// canonical form of its connection's remote host, IPv6 included, so that it
// equals the source a client was given (an IPv4-mapped address, as a
// dual-stack listener sees an IPv4 client, counts as the IPv4 address).
func TestClientAddr(t *testing.T) {
	t.Parallel()
	tests := []struct{ remote, want string }{
		{"127.0.0.2:41000", "127.0.0.2"},
		{"[2001:db8:2::10]:41000", "2001:db8:2::10"},
		{"[2001:DB8:2:0:0::10]:41000", "2001:db8:2::10"},
		{"[::ffff:198.18.0.7]:41000", "198.18.0.7"},
		{"[fe80::1%eth0]:41000", "fe80::1%eth0"},
		{"pipe", "pipe"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tt.remote
		if got := ClientAddr(r); got != tt.want {
			t.Errorf("ClientAddr(%q) = %q, want %q", tt.remote, got, tt.want)
		}
	}
}
