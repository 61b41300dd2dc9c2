package main

import (
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/refserver"
)

// freePort returns a loopback address nothing listens on (yet).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startOnFreePort starts the server start makes to listen on a free
// loopback address, and returns the address once it accepts connections.
// A port freePort found free can be taken, before the server binds it, as
// the source port of another test's connection: when the server exits
// before it listens, it is started again on another port (three tries).
func startOnFreePort(t *testing.T, name string, start func(listen string) *exec.Cmd) string {
	t.Helper()
	for try := 1; ; try++ {
		listen := freePort(t)
		cmd := start(listen)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", name, err)
		}
		var err error
		done := make(chan struct{})
		go func() { err = cmd.Wait(); close(done) }()
		if listening(listen, done) {
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
			return listen
		}
		_ = cmd.Process.Kill()
		<-done
		if try == 3 {
			t.Fatalf("%s did not listen on %s (%v):\n%s", name, listen, err, out)
		}
	}
}

// listening reports whether addr accepts connections within 10 s, and
// before done is closed (the server exited).
func listening(addr string, done <-chan struct{}) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-done:
			return false
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return true
		}
	}
	return false
}

// nginxLimitReq is the server part of an nginx (see startNginx) in front
// of upstream whose limit_req zones, keyed on the client address, one per
// surface, hold L per window W as a token bucket (burst L, refilled L per
// W, nodelay), and refuse with the contract's 429 bodies. Expectations
// come from nginx's documentation of limit_req (the leaky bucket with
// burst and nodelay), not from ratecheck.
const nginxLimitReq = `
  limit_req_zone $binary_remote_addr zone=rest:10m rate=%[3]dr/s;
  limit_req_zone $binary_remote_addr zone=mcp:10m rate=%[4]dr/s;
  limit_req_status 429;
  server {
    listen %[2]s;
    location /api/public/ {
      limit_req zone=rest burst=240 nodelay;
      error_page 429 = @rest429;
      proxy_pass http://%[5]s;
    }
    location = /mcp {
      limit_req zone=mcp burst=120 nodelay;
      error_page 429 = @mcp429;
      proxy_pass http://%[5]s;
    }` + nginx429 + `
  }`

// TestVerifyAgainstNginx: nginx's limit_req (a token bucket keyed on the
// remote address, one zone per surface, burst L nodelay: by
// ngx_http_limit_req_module.c a refused request returns before the
// zone's excess is stored, so refusals never count) is not the documented
// sliding log: verify fails it on rolling, names a token bucket, finds
// that refusals do not count, and names no cause the evidence does not
// prove: no spoofing (nginx ignores forwarding headers here), no shared
// counter (the zones are apart). Skipped where nginx is not installed
// (.ci/run installs it).
func TestVerifyAgainstNginx(t *testing.T) {
	t.Parallel()
	window := verifyWindow
	// The upstream: the reference target with limits it never reaches.
	upstream := startTarget(t, time.Minute, func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1<<30, 1<<30 }, nil)
	addr := startNginx(t, nginxLimitReq, int(240/window.Seconds()), int(120/window.Seconds()), strings.TrimPrefix(upstream, "http://"))
	code, v, stderr := runVerifyJSON(t, window, "--target", addr, "--checks", "limits,isolation")
	judgeForeignReal(t, code, v, stderr, "token-bucket")
}

// TestVerifyAgainstAStaticFileServer: a plain static file server
// (Python's http.server) has no API: every surface is inconclusive with
// one line saying what came back instead, and the run exits 4, even though
// the failure guard stops the run (its 501s and timeouts are its answers);
// stderr says the API is not there, and not also that the target failed.
// Skipped where python3 is absent.
//
// Not parallel: on a machine busy with other tests (beside the
// burst-delay nginx test, once), the server's
// slow answers timed out as transport errors, and the run ended as a
// failing target (exit 3) rather than one without the API. Judged once.
func TestVerifyAgainstAStaticFileServer(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here")
	}
	dir := t.TempDir()
	addr := startOnFreePort(t, "python3 -m http.server", func(listen string) *exec.Cmd {
		_, port, _ := net.SplitHostPort(listen)
		return exec.Command(python, "-m", "http.server", port, "--bind", "127.0.0.1", "--directory", dir)
	})
	if resp, err := http.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
	}
	code, v, stderr := runVerifyJSON(t, 2*time.Second, "--target", "http://"+addr, "--timeout", "2s")
	if code != exitInconclusive || v.Verdict != "inconclusive" || len(v.Surfaces) != 2 {
		t.Fatalf("exit %d, verdict %s, want 4 and inconclusive\n%s", code, v.Verdict, stderr)
	}
	// One story on stderr: the API is not there, never also a failing
	// target.
	if !strings.Contains(stderr, "the API is not there on http://"+addr) || strings.Contains(stderr, "the target is failing") {
		t.Errorf("stderr does not tell one story (the API is not there, not a failing target):\n%s", stderr)
	}
	want := map[string]string{"rest": "/api/public/search answers 404 text/html", "mcp": "/mcp answers 501 text/html"}
	for _, s := range v.Surfaces {
		if !strings.HasPrefix(s.Missing, "the API is not there: ") || !strings.Contains(s.Missing, want[s.Surface]) {
			t.Errorf("%s: missing %q, want the API absent and %q", s.Surface, s.Missing, want[s.Surface])
		}
		for _, c := range s.Checks {
			if c.Verdict != "inconclusive" {
				t.Errorf("%s/%s: %s, want inconclusive", s.Surface, c.Name, c.Verdict)
			}
		}
	}
}

func contains(xs []string, x string) bool { return slices.Contains(xs, x) }
