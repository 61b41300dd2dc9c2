package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	dir := t.TempDir()
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
	write := func(listen string) {
		if err := os.WriteFile(conf, fmt.Appendf(nil, head+body+"\n}\n", append([]any{dir, listen}, args...)...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(freePort(t))
	if out, err := exec.Command(nginx, "-t", "-c", conf, "-p", dir).CombinedOutput(); err != nil {
		t.Skipf("nginx cannot run here: %v\n%s", err, out)
	}
	return "http://" + startOnFreePort(t, "nginx", func(listen string) *exec.Cmd {
		write(listen)
		return exec.Command(nginx, "-c", conf, "-p", dir)
	})
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
// request. nginx decides on arrival and holds what it delays afterwards,
// answering refusals at once: the fit replays on arrival, and names the
// token bucket; rejected-count fails, no shared counter is claimed. Its
// holds are up to half a window long, so a run may leave the family or
// the reading of refusals open: then the verdict says so and why (its
// timing note), as judgeForeign holds it to; the plan's simulation of the
// same algorithm (refserver's leaky-bucket, TestPlanConfusion) holds how
// often it decides.
func TestVerifyAgainstNginxBurstDelay(t *testing.T) {
	t.Parallel()
	window := verifyWindow
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
	judgeForeignReal(t, code, v, stderr, "token-bucket")
}

// TestVerifyAgainstNginxRoundRobin: two correct replicas (the reference
// target, a sliding log counting refusals, keyed on the X-Forwarded-For
// nginx sets) behind nginx's default round-robin upstream, which the
// documentation says distributes requests "in a round-robin fashion"
// over every client's requests: with other addresses' requests
// interleaved, one address's requests fall on the replicas in an order it
// cannot predict. About 2L are admitted before refusals begin: the run
// fails, and the fit names a sliding log: 2 replicas, or one of 2L where
// the interleaving left the assignment alternating, decided or left open
// between the two (one surface or both left so in 7 of 10 fresh-clone
// suites, 3 of 5 on a quiet host; decided in the 8 suites before the test
// held it);
// rejected-count never says refusals do not count (each replica counts
// them). On a host loaded by the package's other tests, the fit once
// named one sliding-window counter, decided (before
// candidates were compared order by order); where the host's delays made the
// run's timing too coarse the family may be left open wider, or unknown, with the
// verdict's timing note saying why (decidedOrTimed). Judged once.
func TestVerifyAgainstNginxRoundRobin(t *testing.T) {
	t.Parallel()
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
	window := verifyWindow
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
	var wrong []string
	// Two budgets per address where the contract promises one: the
	// per-address limit is not held, a failure, decided.
	if code != exitCheckFailed || v.Verdict != "fail" {
		wrong = append(wrong, fmt.Sprintf("exit %d, verdict %s, failing %v: want a failure (about 2L admitted from one address)", code, v.Verdict, failing(v)))
	}
	for _, s := range v.Surfaces {
		t.Logf("window %v, %s: %s, failing %v, model %s ×%d decided %v alternatives %v", window, s.Surface, s.Verdict, failing(v), s.Model, s.Replicas, s.Decided, s.Alternatives)
		// One sliding log of 2L is what the run shows when the other
		// client's requests happened to leave the round-robin alternating.
		twoL := s.ObservedLimit != nil && *s.ObservedLimit >= 2*s.ExpectedLimit-10
		// Left open, only the log's count may be: two replicas of L
		// and one log of 2L admit alike while the round robin
		// alternates, which no probe from outside can tell apart.
		onlyLogs := s.Model == "sliding-log" && !slices.ContainsFunc(s.Alternatives, func(a string) bool { return a != "sliding-log" })
		// Or left open wider by a host whose delays made the timing coarse, as
		// any real run may be (decidedOrTimed): the log among the
		// families named, or none named, and the verdict saying why (a
		// quiet suite run beside other tests: answers up to 1.04 s, 26 %
		// of the 4 s window, REST's family unknown and MCP's open with a
		// fixed window).
		timed := (s.Model == "sliding-log" || contains(s.Alternatives, "sliding-log") || s.Model == "unknown") && s.Timing != ""
		if s.Decided && (s.Model != "sliding-log" || s.Replicas != 2 && !twoL) || !s.Decided && !onlyLogs && !timed {
			observed := "null"
			if s.ObservedLimit != nil {
				observed = fmt.Sprint(*s.ObservedLimit)
			}
			wrong = append(wrong, fmt.Sprintf("%s: model %s ×%d decided %v (observed %s, timing %q), want 2 replicas of sliding-log or one of 2L, decided, or left open with the timing said (exit %d)", s.Surface, s.Model, s.Replicas, s.Decided, observed, s.Timing, code))
		}
		if verdict, detail := checkOf(v, s.Surface, "rejected-count"); verdict == "fail" || strings.Contains(detail, "refusals do not count") {
			wrong = append(wrong, fmt.Sprintf("%s: rejected-count %s against replicas that count refusals: %s", s.Surface, verdict, detail))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%s\n%s", strings.Join(wrong, "\n"), stderr)
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

// TestVerifyAgainstNginxSlowRefill: nginx's limit_req with the documented
// limit in its first burst and a refill of one request per window. At
// W = 60 s that is "rate=1r/m burst=239 nodelay"; nginx's rates are whole
// requests per second or per minute, so under the compressed window W it
// is rate=(60/W)r/m (W = 4 s: 15r/m). By ngx_http_limit_req_module.c the
// zone keeps rate × 1000 / 60 per 1000 s (15r/m: 250) and, per key, an
// excess: a new key's first request is admitted with excess 0, each later
// one adds 1000 less rate × elapsed ms / 1000 since the last admitted one,
// and is refused once excess would pass burst × 1000. So 1 + 239 = 240 are
// admitted at once, then one more per 1000 × 1000 / 250 ms = 4 s = W. A
// refused request returns before excess and last are stored: refusals
// never count. The run sees 240 admitted and then refusals, but for one
// probe a window later: rolling fails, the model is a token bucket (it is
// one, refilled one token per window), and rejected-count fails: refusals
// do not count (judgeForeign).
func TestVerifyAgainstNginxSlowRefill(t *testing.T) {
	t.Parallel()
	window := verifyWindow
	upstream := startTarget(t, time.Minute, func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1<<30, 1<<30 }, nil)
	addr := startNginx(t, `
  limit_req_zone $binary_remote_addr zone=rest:10m rate=%[3]dr/m;
  limit_req_zone $binary_remote_addr zone=mcp:10m rate=%[3]dr/m;
  limit_req_status 429;
  server {
    listen %[2]s;
    location /api/public/ { limit_req zone=rest burst=239 nodelay; error_page 429 = @rest429; proxy_pass http://%[4]s; }
    location = /mcp { limit_req zone=mcp burst=119 nodelay; error_page 429 = @mcp429; proxy_pass http://%[4]s; }`+nginx429+`
  }`, int(time.Minute/window), strings.TrimPrefix(upstream, "http://"))
	code, v, stderr := runVerifyJSON(t, window, "--target", addr, "--checks", "limits,isolation")
	judgeForeignReal(t, code, v, stderr, "token-bucket")
	for _, s := range v.Surfaces {
		verdict, detail := checkOf(v, s.Surface, "rejected-count")
		if why := contradictsFit(verdict, detail); why != "" {
			t.Errorf("%s: rejected-count %s: %s", s.Surface, why, detail)
		}
	}
}

// TestVerifyAgainstNginxAlways429: an nginx that answers every request
// with the contract's 429 ("return 429") admits nothing, where the
// contract admits L per window. Its first burst is refused as a spent
// budget's would be, but so are the probes a window later, whose window
// no request sent before the run can be in: the run fails on the onset
// (the limit is not honoured), observed_limit is 0, no family is named,
// rejected-count does not pass, and nothing else is judged: the early
// evidence is still what a spent budget would leave.
func TestVerifyAgainstNginxAlways429(t *testing.T) {
	t.Parallel()
	addr := startNginx(t, `
  server {
    listen %[2]s;
    location /api/public/ { default_type application/json; return 429 '{"error":{"code":"rate_limited"}}'; }
    location = /mcp { default_type application/json; return 429 '{"jsonrpc":"2.0","error":{"code":-32603,"message":"rate limited"}}'; }
  }`)
	code, v, stderr := runVerifyJSON(t, verifyWindow, "--target", addr, "--checks", "limits,isolation")
	logVerdict(t, v)
	want := []string{"rest/onset", "mcp/onset"}
	if got := failing(v); code != exitCheckFailed || v.Verdict != "fail" || !slices.Equal(got, want) {
		t.Fatalf("exit %d, verdict %s, failing %v, want 1, fail and %v\n%s", code, v.Verdict, got, want, stderr)
	}
	for _, s := range v.Surfaces {
		if s.ObservedLimit != nil && *s.ObservedLimit != 0 || s.Admitted != 0 {
			observed := "null"
			if s.ObservedLimit != nil {
				observed = fmt.Sprint(*s.ObservedLimit)
			}
			t.Errorf("%s: observed_limit %s, admitted %d, want 0 (or null) and 0", s.Surface, observed, s.Admitted)
		}
		if verdict, detail := checkOf(v, s.Surface, "rejected-count"); verdict == "pass" {
			t.Errorf("%s: rejected-count passes with nothing admitted: %s", s.Surface, detail)
		}
		if verdict, detail := checkOf(v, s.Surface, "onset"); !strings.Contains(detail, "the limit is not honoured") {
			t.Errorf("%s: onset %s: %s", s.Surface, verdict, detail)
		}
		if s.Decided {
			t.Errorf("%s: model %s decided with nothing admitted", s.Surface, s.Model)
		}
	}
}

// TestVerifyContractAgainstNginx503: nginx's limit_req refuses with 503
// unless limit_req_status says otherwise (ngx_http_limit_req_module:
// "limit_req_status code; Default: limit_req_status 503;"). Two routes,
// each with a zone of its own keyed on the client address (a token bucket
// of L per W, burst L nodelay, as TestVerifyAgainstNginx's), both left at
// the default; the contract (testdata/verify-contract/nginx-503.yaml) says
// 503 of orders and 429 of export. verify --contract takes orders' 503s as
// its refusals, none a fault, and judges the limiter behind them as it
// judges nginx's with 429s: a token bucket, rolling failed. export, whose
// contract says 429, refused nothing: onset fails, naming the 503 it got
// instead, and its 503s are faults (the failure guard is off: see below).
func TestVerifyContractAgainstNginx503(t *testing.T) {
	t.Parallel()
	window := verifyWindow
	upstream := jsonUpstream(t)
	addr := startNginx(t, `
  limit_req_zone $binary_remote_addr zone=orders:10m rate=%[3]dr/s;
  limit_req_zone $binary_remote_addr zone=export:10m rate=%[4]dr/s;
  server {
    listen %[2]s;
    location = /v1/orders { limit_req zone=orders burst=240 nodelay; error_page 503 = @slow_down; proxy_pass http://%[5]s; }
    location = /v1/export { limit_req zone=export burst=120 nodelay; proxy_pass http://%[5]s; }
    location @slow_down { default_type application/json; return 503 '{"error":{"code":"slow_down"}}'; }
  }`, int(240/window.Seconds()), int(120/window.Seconds()), strings.TrimPrefix(upstream.URL, "http://"))
	file := filepath.Join("testdata", "verify-contract", "nginx-503.yaml")
	// By its contract export's 503s are faults, and where they are most
	// of the last 100 results the failure guard stops the run, as it is
	// there to (beside two CPU hogs the export flood's 503s came back
	// together and it stopped after 1.5 s): this test holds the refusal
	// status, so the run goes on.
	code, v, stderr := runVerifyJSON(t, window, "--target", addr, "--contract", file, "--abort-at", "0")
	if code == exitOK || len(v.Surfaces) != 2 || v.Surfaces[0].Surface != "orders" || v.Surfaces[1].Surface != "export" {
		t.Fatalf("exit %d, verdict %s, %d surfaces; want a verdict on orders and export that is not a pass\n%s", code, v.Verdict, len(v.Surfaces), stderr)
	}
	orders, export := v.Surfaces[0], v.Surfaces[1]
	if orders.Refused == 0 || orders.Faults != 0 {
		t.Errorf("orders: %d refused, %d faults; want its 503s refusals, none a fault", orders.Refused, orders.Faults)
	}
	if verdict, detail := checkOf(v, "orders", "shape"); verdict != "pass" {
		t.Errorf("orders/shape: %s, want pass (every 503 carries slow_down): %s", verdict, detail)
	}
	decidedOrTimed(t, "orders", orders.Model, orders.Decided, orders.Alternatives, orders.Timing, "token-bucket")
	if verdict, detail := checkOf(v, "orders", "rolling"); verdict != "fail" && (verdict != "inconclusive" || orders.Timing == "") {
		t.Errorf("orders/rolling: %s, want fail (nginx's token bucket is no sliding log), or inconclusive with the run's timing said: %s", verdict, detail)
	}
	verdict, detail := checkOf(v, "export", "onset")
	if verdict != "fail" || export.Refused != 0 || export.Faults == 0 {
		t.Fatalf("export: onset %s, %d refused, %d faults; want onset failed, nothing refused, its 503s faults: %s", verdict, export.Refused, export.Faults, detail)
	}
	for _, want := range []string{"no 429 at all from 127.0.0.1", "not with 429: /v1/export answers 503"} {
		if !strings.Contains(detail, want) {
			t.Errorf("export/onset: %q\nlacks %q", detail, want)
		}
	}
	t.Logf("what the run said:\n%s", surfacesSaid(v))
}

// TestVerifyContractByKeyAgainstNginx: nginx's limit_req with its zone
// keyed on a header, as an API keyed by token is ("limit_req_zone
// $http_x_api_key"; ngx_http_limit_req_module: the key "can contain text,
// variables, and their combination", and a request whose key is empty is
// not accounted), rate L per W, burst L−1 nodelay (a bucket of L:
// nginxBucket), refused with 429 (limit_req_status). Its contract
// (testdata/verify-contract/search-by-key.yaml, documenting nginxBucket)
// says the limit is counted by X-Api-Key: the run passes (see
// byKeyContract.hold), isolation proving the key is counted (key-2 from
// the limit address admitted while key-1 was over its limit, key-1 from a
// second address refused alike), onset the bucket's bound, rolling the
// bucket decided. The same contract saying client-address sends key-1
// from both addresses, and isolation fails: the second address shares the
// first's budget. Each run has an nginx of its own: both send the same
// keys.
func TestVerifyContractByKeyAgainstNginx(t *testing.T) {
	testVerifyContractAgainstNginxKeyed(t, "$http_x_api_key", byKeyContracts(t, nginxBucket))
}

// TestVerifyContractGlobalAgainstNginx: nginx's limit_req with its zone
// keyed on a constant ("all": one state for every request), as
// TestVerifyContractByKeyAgainstNginx's otherwise. Its contract
// (testdata/verify-contract/search-global.yaml) says the limit is counted
// for everybody: isolation passes, the second address's probes refused as
// the limit address's plain ones beside them. The same contract saying
// client-address fails isolation: the second address shares the first's
// budget.
func TestVerifyContractGlobalAgainstNginx(t *testing.T) {
	testVerifyContractAgainstNginxKeyed(t, "all", keyContracts(t, "search-global.yaml", "key: global", nginxBucket, "requests from a second address were refused as from the limit address"))
}

// testVerifyContractAgainstNginxKeyed is nginx's limit_req with its zone
// keyed on zoneKey, held to each of contracts.
func testVerifyContractAgainstNginxKeyed(t *testing.T, zoneKey string, contracts []byKeyContract) {
	t.Parallel()
	window := verifyWindow
	upstream := jsonUpstream(t)
	for _, tc := range contracts {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// An nginx of its own: the runs send the same keys.
			addr := startNginx(t, `
  limit_req_zone %[5]s zone=bykey:10m rate=%[3]dr/s;
  limit_req_status 429;
  server {
    listen %[2]s;
    location = /v1/search { limit_req zone=bykey burst=239 nodelay; error_page 429 = @rest429; proxy_pass http://%[4]s; }`+nginx429+`
  }`, int(240/window.Seconds()), strings.TrimPrefix(upstream.URL, "http://"), zoneKey)
			tc.hold(t, window, addr)
		})
	}
}

// A byKeyContract is a contract verify holds a limiter keyed on X-Api-Key
// to, and what its isolation check must say.
type byKeyContract struct {
	name, file, isolation, detail string
	// family is the limiter's, which the contract documents.
	family string
}

// hold runs verify --contract of c against the limiter at addr and holds
// the verdict on its one limit, search. The contract saying what the
// limiter does passes, exit 0, its family decided as documented; on a
// host whose answers came back too late for the window to tell the
// family (the timing said), nothing fails and the documented family is
// the one named or left open. One saying another key fails isolation as
// c says.
func (c byKeyContract) hold(t *testing.T, window time.Duration, addr string) {
	t.Helper()
	code, v, stderr := runVerifyJSON(t, window, "--target", addr, "--contract", c.file)
	if len(v.Surfaces) != 1 || v.Surfaces[0].Surface != "search" {
		t.Fatalf("exit %d, verdict %s, %d surfaces; want a verdict on search\n%s", code, v.Verdict, len(v.Surfaces), stderr)
	}
	if verdict, detail := checkOf(v, "search", "isolation"); verdict != c.isolation || !strings.Contains(detail, c.detail) {
		t.Errorf("search/isolation: %s, want %s with %q: %s\n%s", verdict, c.isolation, c.detail, detail, surfacesSaid(v))
	}
	if c.isolation == "pass" {
		passesAsDocumented(t, code, v, c.family)
		return
	}
	if code != exitCheckFailed || !slices.Contains(failing(v), "search/isolation") {
		t.Errorf("exit %d, failing %v; want 1 with search/isolation\n%s", code, failing(v), surfacesSaid(v))
	}
}

// passesAsDocumented holds a verdict (exit code) on a contract that says
// what the limiter does, its family documented: nothing fails, and every
// limit's family is decided as documented, exit 0 where every check
// passed. On a host whose answers came back too late for the window to
// tell the family, a limit left open says so with the timing, the
// documented family named, among the alternatives, or no family named
// (its order lost). A stalled host can also leave a check short of the
// evidence it needs (beside a bucket refilling 60 a second, a 0.7 s stall
// let the plain spoof probes be admitted too often for the exact test):
// inconclusive, exit 4, never a failure.
func passesAsDocumented(t *testing.T, code int, v verdictJSON, family string) {
	t.Helper()
	for _, s := range v.Surfaces {
		switch {
		case s.Model == family && s.Decided:
		case !s.Decided && s.Timing != "" && (s.Model == family || s.Model == "unknown" || slices.Contains(s.Alternatives, family)):
			t.Logf("%s: its family left open by the run's timing: %s", s.Surface, s.Timing)
		default:
			t.Errorf("%s: model %s (decided %v, alternatives %v, timing %q); want the documented %s decided, or left open with the timing said", s.Surface, s.Model, s.Decided, s.Alternatives, s.Timing, family)
		}
		for _, c := range s.Checks {
			if c.Verdict == "inconclusive" {
				t.Logf("%s/%s inconclusive: %s", s.Surface, c.Name, c.Detail)
			}
		}
	}
	if want := map[bool]int{true: exitOK, false: exitInconclusive}[v.Verdict == "pass"]; code != want || len(failing(v)) > 0 || v.Verdict == "fail" {
		t.Errorf("exit %d, verdict %s, failing %v; want %d, nothing failing\n%s", code, v.Verdict, failing(v), want, surfacesSaid(v))
	}
}

// jsonUpstream is a server behind a foreign limiter that answers every
// request 200 with a JSON body naming its path.
func jsonUpstream(t *testing.T) *httptest.Server {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"route":%q,"ok":true}`, r.URL.Path)
	}))
	t.Cleanup(upstream.Close)
	return upstream
}

// byKeyContracts are testdata/verify-contract/search-by-key.yaml with
// the limiter's family documented, which says what the limiter does (the
// limit is counted by the header: isolation passes), and the same saying
// client-address, which sends the limit key from both addresses
// (isolation fails: the second address shares the first's budget).
func byKeyContracts(t *testing.T, family string) []byKeyContract {
	return keyContracts(t, "search-by-key.yaml", "key: header X-Api-Key", family, "key:key-1 sent from a second address was refused as from the limit address")
}

// keyContracts are the contract testdata/verify-contract/file, whose key
// is key and whose one limit comes last, documenting family (as the
// contract writes it), with isolation passing saying pass, and the same
// saying client-address, with isolation failing: the second address
// shares the first's budget.
func keyContracts(t *testing.T, file, key, family, pass string) []byKeyContract {
	data, err := os.ReadFile(filepath.Join("testdata", "verify-contract", file))
	if err != nil {
		t.Fatal(err)
	}
	matching := string(data) + "    family: " + family + "\n"
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(family, "{name: "), ",")
	return []byKeyContract{
		{"counted as the limiter counts", write("matching.yaml", matching), "pass", pass, name},
		{"counted by client address", write("by-address.yaml", strings.Replace(matching, key, "key: client-address", 1)), "fail", "another address shares the budget of 127.0.0.1", name},
	}
}

// nginxBucket is the family of nginx's limit_req at burst=239 nodelay and
// a rate of 240 a window, as a contract documents it: a bucket of 240 (the
// request at the zone's fresh state and its burst of 239 more admitted at
// once; ngx_http_limit_req_module: "excess ... > burst" is refused),
// refilled at 240 a window.
const nginxBucket = "{name: token-bucket, burst: 240, rate: 240/w}"

// TestVerifyContractSharedAgainstNginx: a budget two routes share, held
// to nginx's limit_req (testdata/verify-contract/reads-shared.yaml: 240 a
// window over /v1/search and /v1/items per client address). Two locations
// drawing on one zone keyed on the address are one budget (the module
// keeps one state per key in a zone, whichever location's limit_req names
// it): independence passes, the probes of /v1/items refused as the plain
// ones on /v1/search beside them. Each location with a zone of its own is
// a budget per route: independence fails naming list, and nothing else
// fails. The contract documents nginx's token bucket (burst=239 nodelay: a
// bucket of 240), so one zone passes as a whole, or leaves the family
// open with the run's timing said.
func TestVerifyContractSharedAgainstNginx(t *testing.T) {
	t.Parallel()
	window := verifyWindow
	upstream := jsonUpstream(t)
	file := filepath.Join("testdata", "verify-contract", "reads-shared.yaml")
	for _, tc := range []struct {
		name, listZone, independence, detail string
	}{
		{"one zone for both locations", "reads", "pass", "the routes share one budget"},
		{"a zone per location", "items", "fail", "probes of route list ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := startNginx(t, `
  limit_req_zone $binary_remote_addr zone=reads:10m rate=%[3]dr/s;
  limit_req_zone $binary_remote_addr zone=items:10m rate=%[3]dr/s;
  limit_req_status 429;
  server {
    listen %[2]s;
    location = /v1/search { limit_req zone=reads burst=239 nodelay; error_page 429 = @rest429; proxy_pass http://%[4]s; }
    location = /v1/items { limit_req zone=%[5]s burst=239 nodelay; error_page 429 = @rest429; proxy_pass http://%[4]s; }`+nginx429+`
  }`, int(240/window.Seconds()), strings.TrimPrefix(upstream.URL, "http://"), tc.listZone)
			code, v, stderr := runVerifyJSON(t, window, "--target", addr, "--contract", file)
			if len(v.Surfaces) != 1 || v.Surfaces[0].Surface != "reads" {
				t.Fatalf("exit %d, verdict %s, %d surfaces; want a verdict on reads\n%s", code, v.Verdict, len(v.Surfaces), stderr)
			}
			if verdict, detail := checkOf(v, "reads", "independence"); verdict != tc.independence || !strings.Contains(detail, tc.detail) {
				t.Errorf("reads/independence: %s, want %s with %q: %s\n%s", verdict, tc.independence, tc.detail, detail, surfacesSaid(v))
			}
			if tc.independence == "pass" {
				passesAsDocumented(t, code, v, "token-bucket")
			} else if code != exitCheckFailed || !slices.Equal(failing(v), []string{"reads/independence"}) {
				t.Errorf("exit %d, failing %v; want 1, reads/independence alone\n%s", code, failing(v), surfacesSaid(v))
			}
		})
	}
}

// TestVerifyContractStackedAgainstNginx: nginx with two limit_req on one
// location, each a bucket per client address (ngx_http_limit_req_module:
// "There could be several limit_req directives"; a request refused by any
// of them is accounted in none), a minute's of 240 refilled at 240 a
// window beside a longer one.
//   - An hour's of 3000 (testdata/verify-contract/search-stacked.yaml):
//     the hour is 60 of the run's windows (4 minutes at 4 s), and the run
//     sends the route far fewer than 3000 requests. per-minute passes,
//     decided a token bucket as documented (or left open with the timing
//     said), and per-hour is inconclusive, never passed, saying the run
//     never reached it and how long a run that probes it takes. The
//     contract saying the minute holds 200 fails per-minute's onset.
//   - Ten minutes' of 1600 refilled at 1 a minute
//     (search-stacked-reachable.yaml), with --max-duration of nine
//     windows: the run probes its onset from the third address, paced
//     under the minute's limit, and nginx refuses it after its burst:
//     onset passes, the rest of it inconclusive. The contract saying it
//     holds 1700 fails its onset: nginx refuses it after 1600.
func TestVerifyContractStackedAgainstNginx(t *testing.T) {
	t.Parallel()
	window := verifyWindow
	upstream := jsonUpstream(t)
	contract := func(name string, replace ...string) string {
		file := filepath.Join("testdata", "verify-contract", name)
		if len(replace) == 0 {
			return file
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		wrong := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(wrong, []byte(strings.NewReplacer(replace...).Replace(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
		return wrong
	}
	hour := "limit_req zone=long burst=2999 nodelay;" // 3000 per 60 windows: 750r/m at 4 s
	tenMinutes := "limit_req zone=long burst=1599 nodelay;"
	long := []string{"--max-duration", (9 * window).String()}
	for _, tc := range []struct {
		name, file, longZone, longLimit string
		args                            []string
		code                            int
		failing                         string // the check that fails ("": none)
	}{
		{"an hour's, as nginx serves it", contract("search-stacked.yaml"), "rate=750r/m", hour, nil, exitInconclusive, ""},
		{"an hour's, the minute said to hold 200", contract("search-stacked.yaml", "quota: 240", "quota: 200", "burst: 240, rate: 240/w", "burst: 200, rate: 200/w"),
			"rate=750r/m", hour, nil, exitCheckFailed, "per-minute/onset"},
		{"ten minutes', as nginx serves it", contract("search-stacked-reachable.yaml"), "rate=1r/m", tenMinutes, long, exitInconclusive, ""},
		{"ten minutes', said to hold 1700", contract("search-stacked-reachable.yaml", "quota: 1600", "quota: 1700", "burst: 1600", "burst: 1700"),
			"rate=1r/m", tenMinutes, long, exitCheckFailed, "per-10-minutes/onset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := startNginx(t, `
  limit_req_zone $binary_remote_addr zone=minute:10m rate=%[3]dr/s;
  limit_req_zone $binary_remote_addr zone=long:10m %[5]s;
  limit_req_status 429;
  server {
    listen %[2]s;
    location = /v1/search { limit_req zone=minute burst=239 nodelay; %[6]s error_page 429 = @rest429; proxy_pass http://%[4]s; }`+nginx429+`
  }`, int(240/window.Seconds()), strings.TrimPrefix(upstream.URL, "http://"), tc.longZone, tc.longLimit)
			code, v, stderr := runVerifyJSON(t, window, append([]string{"--target", addr, "--contract", tc.file}, tc.args...)...)
			if len(v.Surfaces) != 2 || v.Surfaces[0].Surface != "per-minute" {
				t.Fatalf("exit %d, verdict %s, %d surfaces; want per-minute and the longer limit\n%s", code, v.Verdict, len(v.Surfaces), stderr)
			}
			minute, longer := v.Surfaces[0], v.Surfaces[1]
			if tc.failing != "" {
				// the minute's bucket, said to hold 200, fails its rolling
				// window too: no bucket of 200 fits it
				if code != exitCheckFailed || !slices.Contains(failing(v), tc.failing) || slices.ContainsFunc(failing(v), func(f string) bool { return !strings.HasPrefix(f, strings.Split(tc.failing, "/")[0]+"/") }) {
					t.Errorf("exit %d, failing %v; want 1 with %s, and no other limit failing\n%s", code, failing(v), tc.failing, surfacesSaid(v))
				}
				return
			}
			if tc.args == nil { // the hour, out of reach
				if longer.Verdict != "inconclusive" || !strings.Contains(longer.Missing, "and the run never reached it") || !strings.Contains(longer.Missing, "a run of about 14m0s") {
					t.Errorf("%s: %s, %q; want inconclusive, never reached, a run of about 14m0s to probe it", longer.Surface, longer.Verdict, longer.Missing)
				}
			} else if verdict, detail := checkOf(v, longer.Surface, "onset"); verdict != "pass" || longer.Verdict != "inconclusive" {
				t.Errorf("%s: %s, onset %s; want onset passed (nginx refused after its burst of 1600), the rest left open: %s\n%s", longer.Surface, longer.Verdict, verdict, detail, surfacesSaid(v))
			}
			// The longer limit leaves the run inconclusive; per-minute is
			// held as passesAsDocumented holds a limit.
			alone := map[bool]int{true: exitOK, false: exitInconclusive}[minute.Verdict == "pass"] // per-minute's exit, were it the run's only limit
			passesAsDocumented(t, alone, verdictJSON{Verdict: minute.Verdict, Surfaces: v.Surfaces[:1]}, "token-bucket")
			if code != exitInconclusive || len(failing(v)) > 0 {
				t.Errorf("exit %d, failing %v; want 4 (the longer limit is never passed), nothing failing\n%s", code, failing(v), surfacesSaid(v))
			}
		})
	}
}
