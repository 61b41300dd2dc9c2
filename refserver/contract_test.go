package refserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRules: a target serving a contract's rules counts each rule by its
// key, shares a rule's budget between its routes, holds a request to every
// rule over its route, gives each tier its quota and answers each rule's
// refusal, all on a clock the test sets.
func TestRules(t *testing.T) {
	t.Parallel()
	refuse := Refusal{Status: http.StatusTooManyRequests}
	// A request: when (from the start), from which address, to which
	// route (a path, or "tool:NAME" for an MCP call), with which key, and
	// the status wanted.
	type req struct {
		at          time.Duration
		addr, route string
		key         string
		want        int
	}
	tests := []struct {
		name  string
		rules Rules
		reqs  []req
	}{
		{"a header key: a second key from one address has its own budget, one key from two addresses one budget",
			Rules{Limits: []Rule{{Name: "per-key", Routes: []Route{{Name: "search", Path: "/v1/search"}}, Quota: 2, Window: time.Second, Key: Key{Header: "X-Api-Key"}, Refusal: refuse}}},
			[]req{
				{0, "127.0.0.1", "/v1/search", "a", 200}, {0, "127.0.0.1", "/v1/search", "a", 200},
				{0, "127.0.0.1", "/v1/search", "b", 200},
				{0, "127.0.0.2", "/v1/search", "a", 429},
				{0, "127.0.0.1", "/v1/search", "a", 429},
				{time.Second, "127.0.0.2", "/v1/search", "a", 200},
			}},
		{"the client address: two keys from one address share its budget",
			Rules{Limits: []Rule{{Name: "per-address", Routes: []Route{{Name: "search", Path: "/v1/search"}}, Quota: 2, Window: time.Second, Refusal: refuse}}},
			[]req{
				{0, "127.0.0.1", "/v1/search", "a", 200}, {0, "127.0.0.1", "/v1/search", "b", 200},
				{0, "127.0.0.1", "/v1/search", "c", 429},
				{0, "127.0.0.2", "/v1/search", "a", 200},
			}},
		{"global: every address shares one budget",
			Rules{Limits: []Rule{{Name: "all", Routes: []Route{{Name: "search", Path: "/v1/search"}}, Quota: 2, Window: time.Second, Key: Key{Global: true}, Refusal: refuse}}},
			[]req{
				{0, "127.0.0.1", "/v1/search", "", 200}, {0, "127.0.0.2", "/v1/search", "", 200},
				{0, "127.0.0.3", "/v1/search", "", 429},
			}},
		{"two routes in one rule share its budget; a route of no rule is not limited",
			Rules{Limits: []Rule{{Name: "shared", Routes: []Route{{Name: "search", Path: "/v1/search"}, {Name: "list", Path: "/v1/items"}}, Quota: 3, Window: time.Second, Refusal: refuse},
				{Name: "other", Routes: []Route{{Name: "export", Method: http.MethodPost, Path: "/v1/export"}}, Quota: 1, Window: time.Second, Refusal: refuse}}},
			[]req{
				{0, "127.0.0.1", "/v1/search", "", 200}, {0, "127.0.0.1", "/v1/items", "", 200}, {0, "127.0.0.1", "/v1/search", "", 200},
				{0, "127.0.0.1", "/v1/items", "", 429}, {0, "127.0.0.1", "/v1/search", "", 429},
				{0, "127.0.0.1", "POST /v1/export", "", 200}, {0, "127.0.0.1", "POST /v1/export", "", 429},
				{0, "127.0.0.1", "/v1/nothing", "", 404},
			}},
		{"stacked: a request is held to both rules over its route, the longer refusing once the shorter has refilled",
			Rules{Limits: []Rule{{Name: "per-second", Routes: []Route{{Name: "search", Path: "/v1/search"}}, Quota: 2, Window: time.Second, Refusal: refuse},
				{Name: "hourly", Routes: []Route{{Name: "search", Path: "/v1/search"}}, Quota: 3, Window: time.Hour, Refusal: Refusal{Status: http.StatusForbidden}}}},
			[]req{
				{0, "127.0.0.1", "/v1/search", "", 200}, {0, "127.0.0.1", "/v1/search", "", 200},
				{0, "127.0.0.1", "/v1/search", "", 429}, // per-second; the hourly counts it too (a rolling log counts refusals)
				{2 * time.Second, "127.0.0.1", "/v1/search", "", 403},
			}},
		{"tiers: each credential's tier has its quota; a credential of no tier is refused as unknown",
			Rules{Limits: []Rule{{Name: "per-key", Routes: []Route{{Name: "search", Path: "/v1/search"}}, Tiers: map[string]int{"free": 1, "paid": 3}, Window: time.Second, Key: Key{Header: "X-Api-Key"}, Refusal: refuse}},
				Tiers: map[string]string{"X-Api-Key: f": "free", "X-Api-Key: p": "paid"}},
			[]req{
				{0, "127.0.0.1", "/v1/search", "f", 200}, {0, "127.0.0.1", "/v1/search", "f", 429},
				{0, "127.0.0.1", "/v1/search", "p", 200}, {0, "127.0.0.1", "/v1/search", "p", 200}, {0, "127.0.0.1", "/v1/search", "p", 200},
				{0, "127.0.0.1", "/v1/search", "p", 429},
				{0, "127.0.0.1", "/v1/search", "x", 401},
			}},
		{"an MCP tool's calls, refused as a JSON-RPC error of the rule's code; the reference surfaces answer what is admitted",
			Rules{Limits: []Rule{{Name: "mcp", Routes: []Route{{Name: "mcp-search", Tool: "search"}}, Quota: 1, Window: time.Second, Refusal: Refusal{Status: http.StatusTooManyRequests, RPCCode: -32000}},
				{Name: "rest", Routes: []Route{{Name: "rest-search", Path: "/api/public/search"}}, Quota: 1, Window: time.Second, Refusal: refuse}}},
			[]req{
				{0, "127.0.0.1", "tool:search", "", 200}, {0, "127.0.0.1", "tool:search", "", 429},
				{0, "127.0.0.1", "/api/public/search", "", 200}, {0, "127.0.0.1", "/api/public/search", "", 429},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var clk fakeClock
			cfg := DefaultConfig()
			cfg.Rules, cfg.Clock = &tt.rules, clk.now
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range tt.reqs {
				clk.set(q.at)
				r := newRuleRequest(t, q.route)
				r.RemoteAddr = q.addr + ":40000"
				if q.key != "" {
					r.Header.Set("X-Api-Key", q.key)
				}
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r)
				if w.Code != q.want {
					t.Errorf("request %d (%s from %s, key %q at %v): %d, want %d: %s", i, q.route, q.addr, q.key, q.at, w.Code, q.want, w.Body)
				}
			}
		})
	}
}

// newRuleRequest is a request to route: "METHOD /path", "/path" (a GET)
// or "tool:NAME" (an MCP tools/call of NAME, id 7, as the SDKs send it).
func newRuleRequest(t *testing.T, route string) *http.Request {
	if tool, ok := strings.CutPrefix(route, "tool:"); ok {
		r := mcpRequest(t, "http://target", 7, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"query": "rate limits"}})
		return r
	}
	method, path, ok := strings.Cut(route, " ")
	if !ok {
		method, path = http.MethodGet, route
	}
	if strings.HasPrefix(path, "/api/public/search") {
		path += "?q=rate+limits"
	}
	return httptest.NewRequest(method, path, nil)
}

// TestRuleRefusals: each rule's refusal is answered as the rule says: its
// status and body, or a JSON-RPC error of its code with the call's id.
func TestRuleRefusals(t *testing.T) {
	t.Parallel()
	rules := Rules{Limits: []Rule{
		{Name: "body", Routes: []Route{{Name: "a", Path: "/a"}}, Quota: 1, Window: time.Minute, Key: Key{Global: true},
			Refusal: Refusal{Status: http.StatusServiceUnavailable, Body: json.RawMessage(`{"error":{"code":"slow_down"}}`)}},
		{Name: "plain", Routes: []Route{{Name: "b", Path: "/b"}}, Quota: 1, Window: time.Minute, Key: Key{Global: true}, Refusal: Refusal{Status: http.StatusTooManyRequests}},
		{Name: "rpc", Routes: []Route{{Name: "c", Tool: "search"}}, Quota: 1, Window: time.Minute, Key: Key{Global: true}, Refusal: Refusal{Status: http.StatusOK, RPCCode: -32029}},
	}}
	cfg := DefaultConfig()
	cfg.Rules = &rules
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		route  string
		status int
		body   string
	}{
		{"/a", http.StatusServiceUnavailable, `{"error":{"code":"slow_down"}}`},
		{"/b", http.StatusTooManyRequests, `"code":"rate_limited"`},
		{"tool:search", http.StatusOK, `{"jsonrpc":"2.0","id":7,"error":{"code":-32029,`},
	}
	for _, tt := range tests {
		for i := range 2 {
			w := httptest.NewRecorder()
			r := newRuleRequest(t, tt.route)
			r.RemoteAddr = "127.0.0.1:1"
			s.ServeHTTP(w, r)
			if i == 0 {
				continue // admitted
			}
			if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.body) {
				t.Errorf("%s refused: %d %s, want %d with %s", tt.route, w.Code, w.Body, tt.status, tt.body)
			}
		}
	}
}
