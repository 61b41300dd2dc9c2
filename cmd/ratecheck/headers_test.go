package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/httprate"

	"github.com/connectbyjbrh/ratecheck/refserver"
)

// headersOf returns each surface's headers check.
func headersOf(v verdictJSON) map[string][2]string {
	out := map[string][2]string{}
	for _, s := range v.Surfaces {
		for _, c := range s.Checks {
			if c.Name == "headers" {
				out[s.Surface] = [2]string{c.Verdict, c.Detail}
			}
		}
	}
	return out
}

// TestVerifyHeadersHTTPRate holds a limiter ratecheck did not write to
// what it advertises. go-chi/httprate (v0.16.1, limiter.go) sends on every
// answer X-RateLimit-Limit (its limit), X-RateLimit-Remaining (the limit
// less its rounded weighted count, less one on an admission: from a fresh
// window it falls by one per admission, and is 0 or less on a 429) and
// X-RateLimit-Reset (the end of the current window, a Unix time in whole
// seconds, windows aligned to the limiter's start), and Retry-After (the
// window length) on a 429. Its counter is a sliding-window counter that
// does not count refusals, so the run fails other checks; what it
// advertises holds: a limiter made just before the run is in its first
// window for the whole first episode (which admits exactly the limit),
// and refuses until that window ends (the weighted count of an empty
// previous window is nothing).
func TestVerifyHeadersHTTPRate(t *testing.T) {
	t.Parallel()
	w := verifyWindow
	cfg := refserver.DefaultConfig()
	cfg.Window, cfg.RESTLimit, cfg.MCPLimit = w, 1<<20, 1<<20 // the target's own limiter never refuses
	srv, err := refserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	limiter := func(limit int, body func(http.ResponseWriter)) *httprate.RateLimiter {
		return httprate.NewRateLimiter(limit, w,
			httprate.WithKeyFuncs(func(r *http.Request) (string, error) {
				host, _, err := net.SplitHostPort(r.RemoteAddr)
				return host, err
			}),
			httprate.WithLimitHandler(func(rw http.ResponseWriter, _ *http.Request) { body(rw) }))
	}
	// The limiters are made at the first request verify sends (its
	// reachability probe, just before the run), not when the test starts:
	// the test may wait for a slot of its own, and a limiter made a window
	// or more before the run has windows that the first burst may straddle
	// (its counter then admits one more just past the boundary, as a
	// busy host's run showed).
	var made sync.Once
	var rest, mcp http.Handler
	base := serveHandler(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		made.Do(func() {
			rest = limiter(240, func(rw http.ResponseWriter) {
				rw.Header().Set("Content-Type", "application/json")
				rw.WriteHeader(http.StatusTooManyRequests)
				_ = json.NewEncoder(rw).Encode(map[string]any{"error": map[string]any{"code": "rate_limited", "message": "too many requests"}})
			}).Handler(srv)
			mcp = limiter(120, func(rw http.ResponseWriter) {
				rw.Header().Set("Content-Type", "application/json")
				rw.WriteHeader(http.StatusTooManyRequests)
				_ = json.NewEncoder(rw).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32603, "message": "rate limited"}})
			}).Handler(srv)
		})
		if r.URL.Path == "/mcp" {
			mcp.ServeHTTP(rw, r)
			return
		}
		rest.ServeHTTP(rw, r)
	}))
	_, v, stderr := runVerifyJSON(t, w, "--target", base)
	for sf, c := range headersOf(v) {
		if c[0] != "pass" || !strings.Contains(c[1], "X-RateLimit-Limit") || !strings.Contains(c[1], "X-RateLimit-Reset") {
			t.Errorf("%s: headers %s, want pass naming X-RateLimit-Limit and -Reset: %s\n%s", sf, c[0], c[1], stderr)
		}
	}
}

// serveHandler serves h on a loopback port until the test ends.
func serveHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}
