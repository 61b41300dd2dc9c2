package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/refserver"
)

// startNginx runs nginx with the http block body (fmt verbs: %[1]s the
// run directory, %[2]s the address it listens on) and returns its address.
// Skipped where nginx is not installed or cannot run.
func startNginx(t *testing.T, body string, args ...any) string {
	t.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("no nginx here (apt-get install nginx-light)")
	}
	if raceEnabled {
		t.Skip("timing against an outside server, checked by the plain run")
	}
	dir, listen := t.TempDir(), freePort(t)
	head := `daemon off;
master_process off;
error_log %[1]s/error.log warn;
pid %[1]s/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s; proxy_temp_path %[1]s; fastcgi_temp_path %[1]s; uwsgi_temp_path %[1]s; scgi_temp_path %[1]s;
`
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, head+body+"\n}\n", append([]any{dir, listen}, args...)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(nginx, "-t", "-c", conf, "-p", dir).CombinedOutput(); err != nil {
		t.Skipf("nginx cannot run here: %v\n%s", err, out)
	}
	cmd := exec.Command(nginx, "-c", conf, "-p", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitListening(t, listen)
	return "http://" + listen
}

// nginx429 are the contract's 429 bodies, as nginx answers them.
const nginx429 = `
    location @rest429 { default_type application/json; return 429 '{"error":{"code":"rate_limited"}}'; }
    location @mcp429 { default_type application/json; return 429 '{"jsonrpc":"2.0","error":{"code":-32603,"message":"rate limited"}}'; }`

// TestVerifyAgainstNginxBurstDelay: nginx's limit_req with burst and
// delay. Its documentation (ngx_http_limit_req_module): requests beyond
// the rate are delayed, "excessive requests are delayed until their
// number exceeds the maximum burst size", and with delay=N the first N
// excessive ones pass at once; the limiter is "the leaky bucket" method.
// With rate L per window and burst L it holds about L at once and then
// admits one per W/L: a leaky (token) bucket that never counts a refused
// request. So: the model is a token bucket (or the run cannot tell it
// from one), rejected-count never passes, no shared counter is claimed.
func TestVerifyAgainstNginxBurstDelay(t *testing.T) {
	window := 2 * time.Second
	upstream := startTarget(t, time.Minute, func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1<<30, 1<<30 }, nil)
	addr := startNginx(t, `
  limit_req_zone $binary_remote_addr zone=rest:10m rate=%[3]dr/s;
  limit_req_zone $binary_remote_addr zone=mcp:10m rate=%[4]dr/s;
  limit_req_status 429;
  server {
    listen %[2]s;
    location /api/public/ { limit_req zone=rest burst=240 delay=120; error_page 429 = @rest429; proxy_pass http://%[5]s; }
    location = /mcp { limit_req zone=mcp burst=120 delay=60; error_page 429 = @mcp429; proxy_pass http://%[5]s; }`+nginx429+`
  }`, int(240/window.Seconds()), int(120/window.Seconds()), strings.TrimPrefix(upstream, "http://"))
	code, v, stderr := runVerifyJSON(t, window, "--target", addr, "--checks", "limits,isolation")
	judgeForeign(t, code, v, stderr, "token-bucket")
}

// TestVerifyAgainstNginxRoundRobin: two correct replicas (the reference
// target, a sliding log counting refusals, keyed on the X-Forwarded-For
// nginx sets) behind nginx's default round-robin upstream, which the
// documentation says distributes requests "in a round-robin fashion"
// over every client's requests: with other addresses' requests
// interleaved, one address's requests fall on the replicas in an order it
// cannot predict. About 2L are admitted before refusals begin. The fit
// names 2 replicas of a sliding log (one sliding log of 2L where the
// interleaving left the assignment alternating), or leaves the model
// undecided; never another family decided; rejected-count never says refusals do not count
// (each replica counts them). Not parallel: on a host loaded by the
// package's other tests, the fit has named one sliding-window counter,
// decided.
func TestVerifyAgainstNginxRoundRobin(t *testing.T) {
	window := verifyWindow
	// Each replica keys on the X-Forwarded-For nginx sets (the client's
	// address), as a replica behind a proxy does.
	byXFF := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
				r.RemoteAddr = xff + ":1"
			}
			next.ServeHTTP(w, r)
		})
	}
	a, b := startTarget(t, window, nil, byXFF), startTarget(t, window, nil, byXFF)
	addr := startNginx(t, `
  upstream replicas { server %[3]s; server %[4]s; }
  server {
    listen %[2]s;
    location / { proxy_set_header X-Forwarded-For $remote_addr; proxy_pass http://replicas; }
  }`, strings.TrimPrefix(a, "http://"), strings.TrimPrefix(b, "http://"))
	stop := interleave(t, addr)
	code, v, stderr := runVerifyJSON(t, window, "--target", addr, "--checks", "limits")
	stop()
	for _, s := range v.Surfaces {
		t.Logf("%s: model %s ×%d decided %v alternatives %v", s.Surface, s.Model, s.Replicas, s.Decided, s.Alternatives)
		// One sliding log of 2L is what the run shows when the other
		// client's requests happened to leave the round-robin alternating.
		twoL := s.ObservedLimit != nil && *s.ObservedLimit >= 2*s.ExpectedLimit-10
		if s.Decided && (s.Model != "sliding-log" || s.Replicas != 2 && !twoL) {
			t.Errorf("%s: model %s ×%d decided (observed %v), want 2 replicas of sliding-log, one of 2L, or undecided (exit %d)\n%s", s.Surface, s.Model, s.Replicas, s.ObservedLimit, code, stderr)
		}
		if verdict, detail := checkOf(v, s.Surface, "rejected-count"); verdict == "fail" || strings.Contains(detail, "refusals do not count") {
			t.Errorf("%s: rejected-count %s against replicas that count refusals: %s", s.Surface, verdict, detail)
		}
	}
}

// interleave sends another client's requests, from a loopback address of
// its own, to both surfaces through addr until stop: each moves nginx's
// round-robin on by one.
func interleave(t *testing.T, addr string) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(1+i%3) * time.Millisecond):
			}
			req, _ := http.NewRequest("GET", addr+"/api/public/pages", nil)
			if i%2 == 1 {
				req, _ = http.NewRequest("POST", addr+"/mcp", strings.NewReader("{}"))
			}
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()
	return func() { close(done) }
}
