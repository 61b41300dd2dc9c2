package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/connectbyjbrh/ratecheck/refserver/sdkserver"
	"github.com/google/go-cmp/cmp"
)

// exchange is one request as a server saw it and what it answered.
type exchange struct {
	method      string // JSON-RPC method, or the HTTP method when there is none
	session     string // Mcp-Session-Id
	version     string // MCP-Protocol-Version
	meta        bool   // params._meta carries a protocolVersion
	status      int
	contentType string
}

// recorder wraps a handler and records every exchange.
type recorder struct {
	mu  sync.Mutex
	log []exchange
}

func (rc *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var m struct {
			Method string
			Params struct {
				Meta map[string]any `json:"_meta"`
			}
		}
		_ = json.Unmarshal(b, &m)
		if m.Method == "" {
			m.Method = r.Method
		}
		_, meta := m.Params.Meta[mcpwire.MetaProtocolVersion]
		// Recorded as the request arrives: a client may have its answer
		// before the handler returns.
		rc.mu.Lock()
		i := len(rc.log)
		rc.log = append(rc.log, exchange{method: m.Method, session: r.Header.Get("Mcp-Session-Id"),
			version: r.Header.Get("MCP-Protocol-Version"), meta: meta})
		rc.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w, status: 200}
		next.ServeHTTP(sw, r)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if i < len(rc.log) {
			rc.log[i].status, rc.log[i].contentType = sw.status, sw.Header().Get("Content-Type")
		}
	})
}

func (rc *recorder) take() []exchange {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	l := rc.log
	rc.log = nil
	return l
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// noRetry fails the test if the client backs off.
func noRetry(t *testing.T) func(context.Context, time.Duration) error {
	return func(context.Context, time.Duration) error { t.Error("the client retried"); return nil }
}

// TestClientAgainstSDKServers: the client negotiates with go-sdk v1.8.0
// servers and sorts their answers as the contract does, whatever form
// they take. Expectations come from the SDK's source:
//   - a stateless server speaks 2026-07-28 (server/discover lists it:
//     mcp/server.go discover) and answers application/json or, by default,
//     text/event-stream (mcp/streamable.go servePOST);
//   - under 2026-07-28, -32602 travels with HTTP 400 (mcp/streamable.go
//     extractErrorStatus), as JSON even in the SSE mode (deliverLocked);
//     under older revisions every error is a 200 answer in the stream;
//   - a stateful server restricted to 2025-11-25 refuses server/discover
//     with 400 -32022 listing 2025-11-25 (mcp/server.go handle), assigns
//     Mcp-Session-Id on initialize and answers notifications/initialized
//     202 (mcp/streamable.go servePOST);
//   - a tool handler's plain error is a tool result with isError (mcp/tool.go
//     ToolHandlerFor), an unknown tool -32602 (mcp/server.go callTool).
func TestClientAgainstSDKServers(t *testing.T) {
	tests := []struct {
		mode         sdkserver.Mode
		revision     string
		handshake    []string // requests negotiation sends
		supported    []string
		contentType  string // of a success
		unknownTool  int    // status of the -32602 answer
		unknownForm  string // its content type
		sessionCalls bool   // later calls carry the session and version headers, no _meta
	}{
		{sdkserver.StatelessJSON, "2026-07-28", []string{"server/discover"}, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"},
			"application/json", 400, "application/json", false},
		{sdkserver.StatelessSSE, "2026-07-28", []string{"server/discover"}, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"},
			"text/event-stream", 400, "application/json", false},
		{sdkserver.Stateful20251125, "2025-11-25", []string{"server/discover", "initialize", "notifications/initialized"}, []string{"2025-11-25"},
			"text/event-stream", 200, "text/event-stream", true},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			h, err := sdkserver.Handler(sdkserver.Config{Mode: tt.mode})
			if err != nil {
				t.Fatal(err)
			}
			var rec recorder
			ts := httptest.NewServer(rec.wrap(h))
			defer ts.Close()
			ctx := context.Background()
			c := &client.Client{BaseURL: ts.URL, Sleep: noRetry(t), ClientInfo: mcpwire.Implementation{Name: "interop", Version: "1"}}
			s, err := c.Negotiate(ctx, "auto")
			if err != nil {
				t.Fatalf("Negotiate: %v (%+v)", err, rec.take())
			}
			if s.Revision != tt.revision || s.Requests != len(tt.handshake) || s.Server.Name != sdkserver.ServerName || (s.ID != "") != tt.sessionCalls {
				t.Errorf("session %+v; want revision %s after %d requests, server %s, a session id: %v", s, tt.revision, len(tt.handshake), sdkserver.ServerName, tt.sessionCalls)
			}
			if diff := cmp.Diff(tt.supported, s.Supported); diff != "" {
				t.Errorf("supported (-want +got):\n%s", diff)
			}
			var methods []string
			for _, e := range rec.take() {
				methods = append(methods, e.method)
			}
			if diff := cmp.Diff(tt.handshake, methods); diff != "" {
				t.Errorf("handshake (-want +got):\n%s", diff)
			}

			for _, call := range []struct {
				method string
				params map[string]any
				want   client.Class
				status int
				ct     string
			}{
				{"tools/list", nil, client.Success, 200, tt.contentType},
				{"tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits"}}, client.Success, 200, tt.contentType},
				{"tools/call", map[string]any{"name": "get_page", "arguments": map[string]any{"ref": "errors-and-retries"}}, client.Success, 200, tt.contentType},
				{"tools/call", map[string]any{"name": "get_page", "arguments": map[string]any{"ref": "no-such-page"}}, client.ToolError, 200, tt.contentType},
				{"tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": ""}}, client.ToolError, 200, tt.contentType},
				{"tools/call", map[string]any{"name": "no-such-tool", "arguments": map[string]any{}}, client.Answer, tt.unknownTool, tt.unknownForm},
				{"tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate", "limit": 26}}, client.Answer, tt.unknownTool, tt.unknownForm},
				{"resources/list", nil, client.Success, 200, tt.contentType},
				{"resources/read", map[string]any{"uri": "docs://pages/api-rate-limits"}, client.Success, 200, tt.contentType},
				{"resources/read", map[string]any{"uri": "docs://pages/no-such-page"}, client.Answer, tt.unknownTool, tt.unknownForm},
				{"prompts/list", nil, client.Success, 200, tt.contentType},
				{"prompts/get", map[string]any{"name": "explain-error", "arguments": map[string]any{"status": "429"}}, client.Success, 200, tt.contentType},
			} {
				resp, err := c.Call(ctx, call.method, call.params)
				if err != nil || resp.Class != call.want || resp.Status != call.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), call.ct) {
					t.Errorf("%s %v: %v; got %d %s %v, want %d %s %v", call.method, call.params, err,
						resp.Status, resp.Header.Get("Content-Type"), resp.Class, call.status, call.ct, call.want)
					continue
				}
				if _, err := resp.RPC(); err != nil {
					t.Errorf("%s %v: RPC: %v in %q", call.method, call.params, err, resp.Body)
				}
			}
			for _, e := range rec.take() {
				if tt.sessionCalls && (e.session != s.ID || e.version != tt.revision || e.meta) {
					t.Errorf("%s went with session %q, version %q, _meta %v; want %q, %s, no _meta", e.method, e.session, e.version, e.meta, s.ID, tt.revision)
				}
				if !tt.sessionCalls && (e.session != "" || e.version != tt.revision || !e.meta) {
					t.Errorf("%s went with session %q, version %q, _meta %v", e.method, e.session, e.version, e.meta)
				}
			}
		})
	}
}

// TestClientRenewsAnExpiredSession: after the server ends the session
// (DELETE, or a timeout), it answers 404 (mcp/streamable.go lookupSession)
// and the client opens a new one, then sends the call again.
func TestClientRenewsAnExpiredSession(t *testing.T) {
	h, _ := sdkserver.Handler(sdkserver.Config{Mode: sdkserver.Stateful20251125})
	var rec recorder
	ts := httptest.NewServer(rec.wrap(h))
	defer ts.Close()
	ctx := context.Background()
	c := &client.Client{BaseURL: ts.URL, Sleep: noRetry(t)}
	old, err := c.Negotiate(ctx, "auto")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", old.ID)
	req.Header.Set("MCP-Protocol-Version", old.Revision)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	rec.take()
	resp, err := c.Call(ctx, "tools/list", nil)
	ts.Close() // every handler has returned: the statuses are recorded
	if err != nil || resp.Class != client.Success {
		t.Fatalf("Call after the session ended: %v, %+v", err, resp)
	}
	now := c.Session()
	if now.ID == "" || now.ID == old.ID || now.Revision != old.Revision || now.Requests != 2 {
		t.Errorf("session %+v after %+v; want a new id of the same revision after initialize and initialized", now, old)
	}
	var got []string
	for _, e := range rec.take() {
		got = append(got, e.method+" "+http.StatusText(e.status))
	}
	want := []string{"tools/list Not Found", "initialize OK", "notifications/initialized Accepted", "tools/list OK"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exchanges (-want +got):\n%s", diff)
	}
}

// TestNegotiateFallsBackWithoutDiscover: a server that predates
// server/discover and answers it with a plain 400 (as a go-sdk server does
// for a version header it does not know: mcp/streamable.go ServeHTTP) is
// spoken to in 2025-11-25 after initialize.
func TestNegotiateFallsBackWithoutDiscover(t *testing.T) {
	h, _ := sdkserver.Handler(sdkserver.Config{Mode: sdkserver.Stateful20251125})
	old := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("MCP-Protocol-Version"); v >= mcpwire.Latest {
			http.Error(w, "Bad Request: Unsupported protocol version (supported versions: 2025-11-25)", http.StatusBadRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
	ts := httptest.NewServer(old)
	defer ts.Close()
	c := &client.Client{BaseURL: ts.URL, Sleep: noRetry(t)}
	s, err := c.Negotiate(context.Background(), "")
	if err != nil || s.Revision != "2025-11-25" || s.ID == "" || s.Supported != nil {
		t.Fatalf("Negotiate = %+v, %v", s, err)
	}
	if resp, err := c.Call(context.Background(), "tools/list", nil); err != nil || resp.Class != client.Success {
		t.Errorf("Call: %v %+v", err, resp)
	}
}

// TestNegotiatePinned: a named revision is spoken as is, or negotiation
// fails with the reason.
func TestNegotiatePinned(t *testing.T) {
	ref, _ := refserver.New(refserver.DefaultConfig())
	stateless, _ := sdkserver.Handler(sdkserver.Config{Mode: sdkserver.StatelessSSE})
	stateful, _ := sdkserver.Handler(sdkserver.Config{Mode: sdkserver.Stateful20251125})
	tests := []struct {
		name     string
		h        http.Handler
		want     string
		revision string
		id       bool
		wantErr  string
	}{
		{"auto against the reference target", ref, "auto", "2026-07-28", false, ""},
		{"2025-11-25 against a stateless go-sdk server", stateless, "2025-11-25", "2025-11-25", false, ""},
		{"2025-06-18 against a stateless go-sdk server", stateless, "2025-06-18", "2025-06-18", false, ""},
		{"2026-07-28 against a 2025-11-25 server: no request", stateful, "2026-07-28", "2026-07-28", false, ""},
		// The go-sdk answers an excluded version with the newest it
		// speaks (mcp/server.go ServerOptions.SupportedProtocolVersions).
		{"2025-06-18 against a 2025-11-25 server", stateful, "2025-06-18", "", false, "initialize (2025-06-18): the server answered revision 2025-11-25"},
		{"2025-11-25 against the reference target", ref, "2025-11-25", "", false, "initialize (2025-11-25): answered 400 (JSON-RPC error -32022: initialize belongs to older revisions"},
		{"an unknown revision", ref, "2024-11-05", "", false, `unknown MCP revision "2024-11-05" (want auto or one of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(tt.h)
			defer ts.Close()
			c := &client.Client{BaseURL: ts.URL, Sleep: noRetry(t)}
			s, err := c.Negotiate(context.Background(), tt.want)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || c.Session() != nil {
					t.Fatalf("Negotiate = %+v, %v; want error %q and no session", s, err, tt.wantErr)
				}
				return
			}
			if err != nil || s.Revision != tt.revision || (s.ID != "") != tt.id {
				t.Fatalf("Negotiate = %+v, %v; want revision %s", s, err, tt.revision)
			}
			if tt.h == stateful {
				return // a 2026-07-28 request to a 2025-11-25 server is refused; that is the point
			}
			if resp, err := c.Call(context.Background(), "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate"}}); err != nil || resp.Class != client.Success {
				t.Errorf("Call: %v %+v", err, resp)
			}
		})
	}
}

// TestSDKLimiter: a go-sdk server behind the reference limiter refuses the
// call over the limit with 429 and JSON-RPC -32603, per address, and the
// client sorts it retryable.
func TestSDKLimiter(t *testing.T) {
	for _, mode := range sdkserver.Modes {
		t.Run(string(mode), func(t *testing.T) {
			lim, err := refserver.NewLimiter(refserver.Rolling, 5, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := sdkserver.Handler(sdkserver.Config{Mode: mode, Limiter: lim, Clock: func() time.Duration { return 0 }})
			ts := httptest.NewServer(h)
			defer ts.Close()
			ctx := context.Background()
			c := &client.Client{BaseURL: ts.URL, Attempts: 1}
			s, err := c.Negotiate(ctx, "auto")
			if err != nil {
				t.Fatal(err)
			}
			var classes, want []client.Class
			for i := range 6 {
				if s.Requests+i < 5 {
					want = append(want, client.Success)
				} else {
					want = append(want, client.Retryable)
				}
				resp, _ := c.Call(ctx, "tools/list", nil)
				classes = append(classes, resp.Class)
				if resp.Class == client.Retryable {
					rpc, err := resp.RPC()
					if resp.Status != 429 || err != nil || rpc.Error == nil || rpc.Error.Code != -32603 || string(rpc.ID) == "null" {
						t.Errorf("refusal %d %s: %+v %v", resp.Status, resp.Body, rpc, err)
					}
				}
			}
			if diff := cmp.Diff(want, classes); diff != "" {
				t.Errorf("classes (-want +got):\n%s", diff)
			}
			other := &client.Client{BaseURL: ts.URL, Attempts: 1, HTTP: clientFrom("127.0.0.2")}
			other.UseSession(s)
			if resp, err := other.Call(ctx, "tools/list", nil); err != nil || resp.Class != client.Success {
				t.Errorf("another address: %v %+v", err, resp)
			}
		})
	}
}

// clientFrom returns an HTTP client whose connections come from the
// loopback address ip, a distinct client address on Linux.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestRenewOnce: calls that find the session ended at the same time open
// one new session between them, not one each.
func TestRenewOnce(t *testing.T) {
	h, _ := sdkserver.Handler(sdkserver.Config{Mode: sdkserver.Stateful20251125})
	var rec recorder
	ts := httptest.NewServer(rec.wrap(h))
	defer ts.Close()
	ctx := context.Background()
	c := &client.Client{BaseURL: ts.URL, Sleep: noRetry(t)}
	old, err := c.Negotiate(ctx, "auto")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", old.ID)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", err, resp)
	}
	rec.take()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if resp, err := c.Call(ctx, "tools/list", nil); err != nil || resp.Class != client.Success {
				t.Errorf("Call: %v %+v", err, resp)
			}
		})
	}
	wg.Wait()
	n := 0
	for _, e := range rec.take() {
		if e.method == "initialize" {
			n++
		}
	}
	if n != 1 || c.Session().ID == old.ID {
		t.Errorf("%d initialize requests, session %+v; want one new session", n, c.Session())
	}
}
