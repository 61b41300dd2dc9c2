package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	reset := &url.Error{Op: "Get", URL: "http://x", Err: errors.New("read: connection reset by peer")}
	const sse = "text/event-stream"
	note := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
	tests := []struct {
		name   string
		status int
		ct     string
		body   string
		err    error
		want   client.Class
	}{
		{"REST 200", 200, "application/json", `{"results":[]}`, nil, client.Success},
		{"MCP result", 200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, nil, client.Success},
		{"MCP isError", 200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{"isError":true}}`, nil, client.ToolError},
		{"MCP error at 200 (unknown tool)", 200, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}`, nil, client.Answer},
		{"SSE result", 200, sse, note + "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n", nil, client.Success},
		{"SSE isError", 200, sse, note + "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"isError\":true}}\n\n", nil, client.ToolError},
		{"SSE isError, CRLF and a charset", 200, sse + "; charset=utf-8", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"isError\":true}}\r\n\r\n", nil, client.ToolError},
		{"SSE error at 200", 200, sse, note + "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32002,\"message\":\"not found\"}}\n\n", nil, client.Answer},
		{"SSE cut short at 200", 200, sse, note + "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"res", nil, client.Retryable},
		{"SSE 429", 429, sse, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603}}\n\n", nil, client.Retryable},
		{"SSE 400", 400, sse, "", nil, client.Answer},
		{"isError in a JSON body is not read as SSE", 200, "application/json", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"isError\":true}}\n\n", nil, client.Success},
		{"REST 429", 429, "application/json", `{"error":{"code":"rate_limited"}}`, nil, client.Retryable},
		{"MCP 429 -32603", 429, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603}}`, nil, client.Retryable},
		{"404 not_found", 404, "application/json", `{"error":{"code":"not_found"}}`, nil, client.Answer},
		{"422", 422, "application/json", `{"error":{"code":"invalid_parameter"}}`, nil, client.Answer},
		{"403 -32600", 403, "application/json", `{"jsonrpc":"2.0","error":{"code":-32600}}`, nil, client.Answer},
		{"405", 405, "", ``, nil, client.Answer},
		{"413", 413, "", ``, nil, client.Answer},
		{"400 -32700", 400, "application/json", `{"jsonrpc":"2.0","error":{"code":-32700}}`, nil, client.Answer},
		{"400 -32020", 400, "application/json", `{"jsonrpc":"2.0","error":{"code":-32020}}`, nil, client.Answer},
		{"400 -32022", 400, "application/json", `{"jsonrpc":"2.0","error":{"code":-32022}}`, nil, client.Answer},
		{"404 -32601", 404, "application/json", `{"jsonrpc":"2.0","error":{"code":-32601}}`, nil, client.Answer},
		{"500", 500, "", ``, nil, client.Retryable},
		{"503", 503, "", ``, nil, client.Retryable},
		{"202 to a notification", 202, "", ``, nil, client.Success},
		{"reset", 0, "", ``, reset, client.Retryable},
		{"timeout", 0, "", ``, context.DeadlineExceeded, client.Retryable},
		{"caller cancelled", 0, "", ``, context.Canceled, client.Answer},
	}
	for _, tt := range tests {
		if got := client.Classify(tt.status, tt.ct, []byte(tt.body), tt.err); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSSEAnswers: the client reads an event-stream answer up to its
// JSON-RPC response (even when the server keeps the stream open), sorts it
// by what the response says, and retries a stream that broke off first.
func TestSSEAnswers(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": keep-alive\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		if n.Add(1) == 1 {
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"res") // cut short
			return
		}
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"isError\":true,\"content\":[]}}\n\n")
		w.(http.Flusher).Flush()
		select { // the stream stays open
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	ft := &fakeTime{now: time.Unix(0, 0)}
	c := &client.Client{BaseURL: srv.URL, Now: ft.Now, Sleep: ft.Sleep}
	var classes []client.Class
	c.OnAttempt = func(a client.Attempt) { classes = append(classes, a.Class) }
	resp, err := c.Call(context.Background(), "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": ""}})
	if err != nil || resp.Class != client.ToolError || resp.Attempts != 2 || !slices.Equal(classes, []client.Class{client.Retryable, client.ToolError}) {
		t.Fatalf("Call = %+v, %v; attempts %v", resp, err, classes)
	}
	rpc, err := resp.RPC()
	if err != nil || string(rpc.Result) != `{"isError":true,"content":[]}` {
		t.Errorf("RPC() = %+v, %v", rpc, err)
	}
}

func TestBackoff(t *testing.T) {
	ms := time.Millisecond
	b := client.Backoff{Base: 100 * ms, Cap: 500 * ms}
	for k, want := range []time.Duration{100 * ms, 200 * ms, 400 * ms, 500 * ms, 500 * ms} {
		if got := b.Ceiling(k); got != want {
			t.Errorf("Ceiling(%d) = %v, want %v", k, got, want)
		}
	}
	tests := []struct {
		s    client.Strategy
		k    int
		prev time.Duration
		u    float64
		want time.Duration
	}{
		{client.Full, 0, 0, 0, 0},
		{client.Full, 1, 0, 0.5, 100 * ms},
		{client.Full, 9, 0, 0.5, 250 * ms},
		{client.Equal, 1, 0, 0, 100 * ms},
		{client.Equal, 1, 0, 0.5, 150 * ms},
		{client.Decorrelated, 0, 0, 0, 100 * ms},
		{client.Decorrelated, 0, 0, 0.5, 200 * ms},      // random(base, 3·base)
		{client.Decorrelated, 3, 400 * ms, 1, 500 * ms}, // capped
		{client.None, 2, 0, 0.9, 400 * ms},
	}
	for _, tt := range tests {
		b.Strategy = tt.s
		if got := b.Delay(tt.k, tt.prev, tt.u); got != tt.want {
			t.Errorf("%s Delay(%d, %v, %v) = %v, want %v", tt.s, tt.k, tt.prev, tt.u, got, tt.want)
		}
	}
	if _, err := client.ParseStrategy("exponential"); err == nil || !strings.Contains(err.Error(), "want full, equal, decorrelated or none") {
		t.Errorf("ParseStrategy: %v", err)
	}
}

func TestGovernor(t *testing.T) {
	g := &client.Governor{Min: time.Second, Max: 4 * time.Second}
	t0 := time.Unix(0, 0)
	if w := g.Reserve(t0); w != 0 {
		t.Fatalf("a fresh governor waits %v", w)
	}
	g.SlowDown(t0)
	g.SlowDown(t0)
	g.SlowDown(t0)
	if g.Gap() != 4*time.Second {
		t.Fatalf("gap %v after three slow-downs, want the 4s max", g.Gap())
	}
	if w := g.Reserve(t0); w != 4*time.Second {
		t.Errorf("after slowing down: wait %v, want 4s", w)
	}
	if w := g.Reserve(t0); w != 8*time.Second {
		t.Errorf("the next attempt: wait %v, want 8s (one gap later)", w)
	}
	g.Recover()
	g.Recover()
	g.Recover()
	if g.Gap() != 0 {
		t.Errorf("gap %v after recovering, want 0", g.Gap())
	}
}

// fakeTime is an injected clock whose sleeps advance it instantly.
type fakeTime struct {
	now    time.Time
	sleeps []time.Duration
}

func (f *fakeTime) Now() time.Time { return f.now }
func (f *fakeTime) Sleep(_ context.Context, d time.Duration) error {
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	return nil
}

// scripted serves the statuses of script in turn (the last one repeated);
// status -1 resets the connection.
func scripted(t *testing.T, script ...int) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		st := script[min(i, len(script)-1)]
		if st == -1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
			return
		}
		w.WriteHeader(st)
		if st == 429 {
			io.WriteString(w, `{"error":{"code":"rate_limited"}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestRetryDiscipline: answers are never retried, retryable failures are
// retried up to the cap and no further, and the waits are the drawn ones.
func TestRetryDiscipline(t *testing.T) {
	tests := []struct {
		name     string
		script   []int
		attempts int64
		class    client.Class
		err      bool
	}{
		{"200", []int{200}, 1, client.Success, false},
		{"400", []int{400}, 1, client.Answer, false},
		{"403", []int{403}, 1, client.Answer, false},
		{"404", []int{404}, 1, client.Answer, false},
		{"405", []int{405}, 1, client.Answer, false},
		{"413", []int{413}, 1, client.Answer, false},
		{"422", []int{422}, 1, client.Answer, false},
		{"429 always", []int{429}, 4, client.Retryable, true},
		{"503 always", []int{503}, 4, client.Retryable, true},
		{"reset always", []int{-1}, 4, client.Retryable, true},
		{"429 then 200", []int{429, 429, 200}, 3, client.Success, false},
		{"reset then 404", []int{-1, 404}, 2, client.Answer, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := scripted(t, tt.script...)
			ft := &fakeTime{now: time.Unix(0, 0)}
			c := &client.Client{BaseURL: srv.URL, Now: ft.Now, Sleep: ft.Sleep, Rand: func() float64 { return 0.5 },
				Backoff: client.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}}
			var seen []client.Attempt
			c.OnAttempt = func(a client.Attempt) { seen = append(seen, a) }
			resp, err := c.Get(context.Background(), "/api/public/search", url.Values{"q": {"retry"}})
			if got := hits.Load(); got != tt.attempts || len(seen) != int(tt.attempts) {
				t.Fatalf("%d requests reached the server, %d attempts observed; want %d", got, len(seen), tt.attempts)
			}
			if resp == nil || resp.Class != tt.class || resp.Attempts != int(tt.attempts) {
				t.Fatalf("response %+v, want class %v after %d attempts", resp, tt.class, tt.attempts)
			}
			var ex *client.ExhaustedError
			if tt.err != errors.As(err, &ex) {
				t.Fatalf("error %v, want exhausted: %v", err, tt.err)
			}
			// Full jitter with u = 0.5: half of 100ms, 200ms, 400ms.
			want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}[:tt.attempts-1]
			if !slices.Equal(ft.sleeps, want) {
				t.Errorf("slept %v, want %v", ft.sleeps, want)
			}
			for i, a := range seen {
				if a.N != i+1 || a.Request != 1 || (i > 0 && a.Delay != want[i-1]) {
					t.Errorf("attempt %d: %+v", i+1, a)
				}
			}
		})
	}
}

// TestSlowDown: a request that meets 429 twice in a row slows the whole
// client down: its next request waits the governor's gap.
func TestSlowDown(t *testing.T) {
	srv, _ := scripted(t, 429)
	ft := &fakeTime{now: time.Unix(0, 0)}
	gov := &client.Governor{Min: 2 * time.Second, Max: time.Minute}
	c := &client.Client{BaseURL: srv.URL, Now: ft.Now, Sleep: ft.Sleep, Rand: func() float64 { return 0 }, Governor: gov, Attempts: 3}
	if _, err := c.Get(context.Background(), "/api/public/search", nil); err == nil {
		t.Fatal("no error after three 429s")
	}
	if gov.Gap() < 2*time.Second {
		t.Fatalf("gap %v after repeated 429s, want at least 2s", gov.Gap())
	}
	ft.sleeps = nil
	var first client.Attempt
	c.OnAttempt = func(a client.Attempt) {
		if a.N == 1 {
			first = a
		}
	}
	c.Get(context.Background(), "/api/public/search", nil)
	if first.Waited < 2*time.Second {
		t.Errorf("the next request waited %v, want the governor's gap", first.Waited)
	}
}

// TestCallIsAcceptedByTheReferenceTarget: MCP calls carry headers that
// match their bodies, no Origin and no session, and succeed against the
// reference target; an unknown tool is an answer, an empty query a tool
// error, and neither is retried.
func TestCallIsAcceptedByTheReferenceTarget(t *testing.T) {
	srv, err := refserver.New(refserver.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var sawOrigin, sawSession atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawOrigin.Store(sawOrigin.Load() || r.Header.Get("Origin") != "")
		sawSession.Store(sawSession.Load() || r.Header.Get("Mcp-Session-Id") != "")
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c := &client.Client{BaseURL: ts.URL, Sleep: func(context.Context, time.Duration) error { t.Error("retried"); return nil }}
	ctx := context.Background()
	for _, tc := range []struct {
		method string
		params map[string]any
		want   client.Class
	}{
		{"tools/list", nil, client.Success},
		{"tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits"}}, client.Success},
		{"tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": ""}}, client.ToolError},
		{"tools/call", map[string]any{"name": "no-such-tool", "arguments": map[string]any{}}, client.Answer},
		{"no/such", nil, client.Answer},
	} {
		resp, err := c.Call(ctx, tc.method, tc.params)
		if err != nil || resp.Class != tc.want || resp.Attempts != 1 {
			t.Errorf("%s %v: %v, %+v; want %v in one attempt", tc.method, tc.params, err, resp, tc.want)
		}
	}
	resp, err := c.Get(ctx, "/api/public/search", url.Values{"q": {"retry"}})
	if err != nil || resp.Class != client.Success {
		t.Errorf("REST search: %v %+v", err, resp)
	}
	if sawOrigin.Load() || sawSession.Load() {
		t.Error("the client sent Origin or Mcp-Session-Id")
	}
}

// TestCallMeta: a Call carries protocolVersion, clientInfo and
// clientCapabilities in params._meta, and a caller's _meta is merged in,
// its keys winning (as the go-sdk client's injectRequestMeta does).
func TestCallMeta(t *testing.T) {
	var got struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	var header http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header = r.Header
		json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer srv.Close()
	c := &client.Client{BaseURL: srv.URL + "/", ClientInfo: mcpwire.Implementation{Name: "fleet", Version: "9"}}
	if _, err := c.Call(context.Background(), "tools/list", map[string]any{"_meta": map[string]any{"progressToken": "p", mcpwire.MetaClientCapabilities: map[string]any{"roots": map[string]any{}}}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"progressToken":                "p",
		mcpwire.MetaProtocolVersion:    "2026-07-28",
		mcpwire.MetaClientInfo:         map[string]any{"name": "fleet", "version": "9"},
		mcpwire.MetaClientCapabilities: map[string]any{"roots": map[string]any{}},
	}
	if diff := cmp.Diff(want, got.Params.Meta); diff != "" {
		t.Errorf("_meta (-want +got):\n%s", diff)
	}
	if header.Get("MCP-Protocol-Version") != "2026-07-28" || header.Get("Mcp-Method") != "tools/list" || header.Get("Mcp-Session-Id") != "" {
		t.Errorf("headers %v", header)
	}
}

// Example: a client that retries a 429 with full jitter and gives up after
// three attempts.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"code":"rate_limited"}}`)
	}))
	defer srv.Close()
	c := &client.Client{
		BaseURL:  srv.URL,
		Attempts: 3,
		Backoff:  client.Backoff{Strategy: client.Full, Base: time.Millisecond, Cap: 10 * time.Millisecond},
		OnAttempt: func(a client.Attempt) {
			fmt.Printf("attempt %d: %d %s\n", a.N, a.Status, a.Class)
		},
	}
	_, err := c.Get(context.Background(), "/api/public/search", url.Values{"q": {"limits"}})
	fmt.Println(err)
	// Output:
	// attempt 1: 429 retryable
	// attempt 2: 429 retryable
	// attempt 3: 429 retryable
	// GET /api/public/search: gave up after 3 attempts: status 429
}

// TestLogNamesNoBodyOrCredential: a failed attempt is logged with route,
// status, error code and request id, never the body, query or a header.
func TestLogNamesNoBodyOrCredential(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"secret-page-text"}}`)
	}))
	defer srv.Close()
	var buf strings.Builder
	c := &client.Client{BaseURL: srv.URL, Log: slog.New(slog.NewTextHandler(&buf, nil))}
	c.Get(context.Background(), "/api/public/pages/nope", url.Values{"token": {"hunter2"}})
	line := buf.String()
	for _, want := range []string{"route=/api/public/pages/nope", "status=404", "code=not_found", "request=1"} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %s", line, want)
		}
	}
	for _, never := range []string{"secret-page-text", "hunter2"} {
		if strings.Contains(line, never) {
			t.Errorf("log %q leaks %s", line, never)
		}
	}
}
