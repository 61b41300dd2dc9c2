package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"golang.org/x/time/rate"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
	"github.com/connectbyjbrh/ratecheck/internal/simrun"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/connectbyjbrh/ratecheck/refserver/sdkserver"
)

// sdkLimit is the MCP limit of the go-sdk servers of these tests: the
// contract's. (At a limit of 20 one window holds too few refusals to tell
// a token bucket from a sliding-window counter.)
const sdkLimit = 120

// limiterKind is what limits a go-sdk server of these tests per client
// address.
type limiterKind string

const (
	// slidingLog is the reference target's rolling limiter: at most L
	// requests in any window W, refused ones counted (the contract's).
	slidingLog limiterKind = "sliding-log"
	// tokenBucket is golang.org/x/time/rate: L tokens, refilled at L per
	// W, refused requests free. It is not the contract's limiter.
	tokenBucket limiterKind = "token-bucket"
)

// sdkRecorder counts what a go-sdk server received per client address and
// JSON-RPC method, and the MCP transport headers of each.
type sdkRecorder struct {
	mu sync.Mutex
	// byAddr counts requests per client address and method ("GET" and
	// such for a request without a JSON-RPC body).
	byAddr map[string]map[string]int
	// noSession counts requests after initialize without Mcp-Session-Id;
	// versions counts the MCP-Protocol-Version headers seen.
	noSession int
	versions  map[string]int
}

// count returns how many requests of method addr sent.
func (r *sdkRecorder) count(addr, method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byAddr[addr][method]
}

func (r *sdkRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(strings.NewReader(string(body)))
		var msg struct {
			Method string `json:"method"`
		}
		method := req.Method
		if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
			method = msg.Method
		}
		r.mu.Lock()
		addr := refserver.ClientAddr(req)
		if r.byAddr[addr] == nil {
			r.byAddr[addr] = map[string]int{}
		}
		r.byAddr[addr][method]++
		if req.Method == http.MethodPost {
			if method != "initialize" && method != "server/discover" && req.Header.Get(mcpwire.HeaderSessionID) == "" {
				r.noSession++
			}
			r.versions[req.Header.Get(mcpwire.HeaderProtocolVersion)]++
		}
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

// startSDKServer serves a go-sdk server of mode behind a per-address
// limiter of kind admitting limit requests per window, and returns its base
// URL and what it received.
func startSDKServer(t *testing.T, mode sdkserver.Mode, kind limiterKind, limit int, window time.Duration) (string, *sdkRecorder) {
	t.Helper()
	h, rec := sdkTarget(t, mode, kind, limit, window, nil, time.Now)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL, rec
}

// sdkTarget is a go-sdk server of mode behind a per-address limiter of
// kind admitting limit requests per window, whose clocks are since (nil:
// the real one) and now, and what records what it received.
func sdkTarget(t *testing.T, mode sdkserver.Mode, kind limiterKind, limit int, window time.Duration, since func() time.Duration, now func() time.Time) (http.Handler, *sdkRecorder) {
	t.Helper()
	cfg := sdkserver.Config{Mode: mode, Clock: since}
	if kind == slidingLog {
		lim, err := refserver.NewLimiter(refserver.Rolling, limit, window)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Limiter = lim
	}
	h, err := sdkserver.Handler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if kind == tokenBucket {
		h = tokenBucketLimit(h, limit, window, now)
	}
	rec := &sdkRecorder{byAddr: map[string]map[string]int{}, versions: map[string]int{}}
	return rec.wrap(h), rec
}

// tokenBucketLimit puts next behind a token bucket per client address
// (golang.org/x/time/rate: burst limit, limit per window, read at now),
// refusing with 429 and a JSON-RPC -32603 error as the contract documents
// a refusal.
func tokenBucketLimit(next http.Handler, limit int, window time.Duration, now func() time.Time) http.Handler {
	var mu sync.Mutex
	buckets := map[string]*rate.Limiter{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b := buckets[refserver.ClientAddr(r)]
		if b == nil {
			b = rate.NewLimiter(rate.Limit(float64(limit)/window.Seconds()), limit)
			buckets[refserver.ClientAddr(r)] = b
		}
		ok := b.AllowN(now(), 1)
		mu.Unlock()
		if ok {
			next.ServeHTTP(w, r)
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
		answer := map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": -32603, "message": "rate limited"}}
		if len(req.ID) > 0 {
			answer["id"] = req.ID
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(answer)
	})
}

// TestVerifyAgainstSDKServers: verify --surfaces mcp judges go-sdk
// servers (revision 2026-07-28, stateless, in both answer forms) as the
// limiter in front of them deserves: the contract's sliding log passes,
// decided, with the configured limit observed; x/time/rate's token bucket
// fails on rolling, named and decided, refusals not counted. The servers
// run on simulated time (the SDK's handlers are http.Handlers; the
// limiters take the time as an argument): what a real go-sdk server says
// on the wire is TestSDKServerOfRevision20251125's,
// TestNegotiationFromTheLimitAddress's and TestAttackAgainstSDKServers'.
func TestVerifyAgainstSDKServers(t *testing.T) {
	t.Parallel()
	for _, mode := range []sdkserver.Mode{sdkserver.StatelessJSON, sdkserver.StatelessSSE} {
		for _, kind := range []limiterKind{slidingLog, tokenBucket} {
			t.Run(fmt.Sprintf("%s/%s", mode, kind), func(t *testing.T) {
				t.Parallel()
				w := simWorld(t, hostsim.Quiet, 1, simTarget(verifyWindow, nil), nil)
				var rec *sdkRecorder
				w.Target, rec = sdkTarget(t, mode, kind, sdkLimit, verifyWindow, w.Clock.Since, w.Clock.Now)
				code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--target", simrun.URL, "--surfaces", "mcp", "--mcp-limit", fmt.Sprint(sdkLimit), "--checks", "limits,isolation")
				if len(v.Surfaces) != 1 {
					t.Fatalf("exit %d, surfaces %+v\n%s", code, v.Surfaces, stderr)
				}
				s := v.Surfaces[0]
				if s.MCPRevision != mcpwire.Latest {
					t.Errorf("mcp_revision %q, want %s (the SDK's newest)", s.MCPRevision, mcpwire.Latest)
				}
				if n := rec.count("127.0.0.1", "server/discover"); n != 0 {
					t.Errorf("the limit address sent %d server/discover: negotiation must not spend its budget", n)
				}
				if kind == tokenBucket {
					judgeForeign(t, code, v, stderr, "token-bucket")
					return
				}
				if code != exitOK || s.Verdict != "pass" || s.ObservedLimit == nil || *s.ObservedLimit != sdkLimit {
					t.Errorf("exit %d, observed limit %v; want a pass observing %d\n%s", code, s.ObservedLimit, sdkLimit, surfacesSaid(v))
				}
				decidedDocumented(t, v, stderr)
			})
		}
	}
}

// sdkModes are the go-sdk servers attack speaks to, each in its
// revision.
var sdkModes = []struct {
	mode     sdkserver.Mode
	revision string
}{
	{sdkserver.StatelessJSON, mcpwire.Latest},
	{sdkserver.StatelessSSE, mcpwire.Latest},
	{sdkserver.Stateful20251125, mcpwire.Revision20251125},
}

// TestSimAttackAgainstSDKServers: attack runs the mcp-limit profile
// against go-sdk servers behind the contract's limiter as the profile's
// expectations say (122 admitted, 15 refused: the burst's 120 and the two
// probes after it aged out), in each server's revision, on simulated time
// on a quiet host: the counts are a verdict on timing, which the real
// clock of a loaded machine moves (a burst sent on time, held 1.5 s by
// the host before the server read it, ages out after the probe at 1.1w).
func TestSimAttackAgainstSDKServers(t *testing.T) {
	t.Parallel()
	for _, tt := range sdkModes {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			window := 4 * time.Second
			w := simWorld(t, hostsim.Quiet, 1, simTarget(window, nil), nil)
			var rec *sdkRecorder
			w.Target, rec = sdkTarget(t, tt.mode, slidingLog, 120, window, w.Clock.Since, w.Clock.Now)
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := attackBy(context.Background(), []string{"--profile", "../../profiles/mcp-limit.yaml", "--window", window.String(), "--target", simrun.URL, "--out", out}, &stdout, &stderr, simrun.Executor(w))
			if code != exitOK {
				t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
			}
			if n := rec.count("127.0.0.1", "tools/call"); n != 137 {
				t.Errorf("127.0.0.1 sent %d tools/call, want 137", n)
			}
		})
	}
}

// TestAttackAgainstSDKServers: attack speaks to real go-sdk servers, on
// the real clock, as each expects: 137 tools/call from the limit address,
// each answered 200 or 429 with nothing else, no handshake from that
// address, every request at the server's revision; the stateful server
// of 2025-11-25 is spoken to in one session, opened from an address the
// budget under test does not use, carried with MCP-Protocol-Version by
// every later request. What the counts must be is
// TestSimAttackAgainstSDKServers': here a loaded host may hold the burst
// past a probe, and the profile's expectations then fail, as they should.
func TestAttackAgainstSDKServers(t *testing.T) {
	t.Parallel()
	for _, tt := range sdkModes {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			window := 4 * time.Second
			url, rec := startSDKServer(t, tt.mode, slidingLog, 120, window)
			out := t.TempDir()
			code, stdout, stderr := runCmd(t, "attack", "--profile", "../../profiles/mcp-limit.yaml", "--window", window.String(), "--target", url, "--out", out)
			t.Logf("%s%s", stdout, stderr)
			rs, info := readArchive(t, onlyRun(t, out))
			switch code {
			case exitOK:
			case exitCheckFailed:
				t.Logf("the expectations failed on this host's timing: %s", sentTimes(rs))
			default:
				t.Fatalf("exit %d, want %d or, where the host moved the burst, %d", code, exitOK, exitCheckFailed)
			}
			codes := map[uint16]int{}
			for _, r := range rs {
				codes[r.Code]++
			}
			if len(rs) != 137 || codes[200]+codes[429] != 137 || codes[200] < 120 {
				t.Errorf("answers %v of %d results; want 137, each 200 or 429, at least the limit's 120 admitted", codes, len(rs))
			}
			mcp, _ := info["mcp"].(map[string]any)
			stateful := tt.mode == sdkserver.Stateful20251125
			if info["mcp_revision"] != tt.revision || (mcp["session"] == true) != stateful || mcp["handshakes"] != 1.0 {
				t.Errorf("run.json mcp_revision %v, mcp %v; want %s, a session: %v, one handshake", info["mcp_revision"], mcp, tt.revision, stateful)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			limitAddr := rec.byAddr["127.0.0.1"]
			if limitAddr["initialize"]+limitAddr["server/discover"]+limitAddr["notifications/initialized"] != 0 || limitAddr["tools/call"] != 137 {
				t.Errorf("127.0.0.1 sent %v; want 137 tools/call and no handshake", limitAddr)
			}
			if stateful && (rec.noSession != 0 || rec.versions[mcpwire.Revision20251125] != 137+1) { // and notifications/initialized
				t.Errorf("%d requests without a session; protocol versions %v: want every request after initialize in the session, at 2025-11-25", rec.noSession, rec.versions)
			}
			if !stateful && rec.versions[mcpwire.Latest] != 137+1 { // and server/discover
				t.Errorf("protocol versions %v: want every request at %s", rec.versions, mcpwire.Latest)
			}
		})
	}
}

// TestSDKServerOfRevision20251125: against a stateful go-sdk server that
// speaks only 2025-11-25, verify's limit and isolation checks pass, in
// that revision (deservedPass).
func TestSDKServerOfRevision20251125(t *testing.T) {
	t.Parallel()
	window := verifyWindow
	{
		url, _ := startSDKServer(t, sdkserver.Stateful20251125, slidingLog, sdkLimit, window)
		code, v, stderr := runVerifyJSON(t, window, "--target", url, "--surfaces", "mcp", "--mcp-limit", fmt.Sprint(sdkLimit), "--checks", "limits,isolation")
		if len(v.Surfaces) != 1 {
			t.Fatalf("exit %d, surfaces %+v\n%s", code, v.Surfaces, stderr)
		}
		s := v.Surfaces[0]
		if s.MCPRevision != mcpwire.Revision20251125 {
			t.Errorf("mcp_revision %q, want 2025-11-25", s.MCPRevision)
		}
		deservedPass(t, code, v, stderr)
	}
}

// TestNegotiationFromTheLimitAddress: with one source address, verify
// negotiates from the limit address itself, then waits a window so that
// the handshake is out of the budget under test: the onset still sees
// the configured limit. At 8 s, as the other go-sdk sliding log: at 4 s,
// beside the suite, a third of its requests were indeterminate (p99 of a
// go-sdk server in this process under load), and with one address there
// is no isolation burst to tell the log from a counter.
func TestNegotiationFromTheLimitAddress(t *testing.T) {
	t.Parallel()
	window := 8 * time.Second
	{
		url, rec := startSDKServer(t, sdkserver.StatelessJSON, slidingLog, sdkLimit, window)
		code, v, stderr := runVerifyJSON(t, window, "--target", url, "--surfaces", "mcp", "--mcp-limit", fmt.Sprint(sdkLimit), "--checks", "limits", "--sources", "127.0.0.1")
		if n := rec.count("127.0.0.1", "server/discover"); n != 1 || !strings.Contains(stderr, "waited "+window.String()) {
			t.Fatalf("127.0.0.1 sent %d server/discover; want 1, then a wait of a window\n%s", n, stderr)
		}
		deservedPass(t, code, v, stderr)
		if s := v.Surfaces[0]; s.ObservedLimit == nil || *s.ObservedLimit != sdkLimit && s.Timing == "" {
			t.Errorf("window %v: observed limit %v, want %d\n%s", window, s.ObservedLimit, sdkLimit, surfacesSaid(v))
		}
	}
}

// bindSessions makes next a server that binds each session to the address
// that opened it: a request carrying the session from another address is
// answered 404, as a session the server does not know.
func bindSessions(next http.Handler) http.Handler {
	var mu sync.Mutex
	owner := map[string]string{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := refserver.ClientAddr(r)
		if id := r.Header.Get(mcpwire.HeaderSessionID); id != "" {
			mu.Lock()
			o, known := owner[id]
			mu.Unlock()
			if known && o != addr {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		}
		sw := &sessionWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if id := sw.Header().Get(mcpwire.HeaderSessionID); id != "" {
			mu.Lock()
			if _, known := owner[id]; !known {
				owner[id] = addr
			}
			mu.Unlock()
		}
	})
}

// sessionWriter passes an answer through and lets its headers be read
// after (Flush kept for event streams).
type sessionWriter struct{ http.ResponseWriter }

func (w *sessionWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestSessionsBoundToAnAddress: against a target that binds sessions to
// the address that opened them, each source address gets one handshake of
// its own after its first 404, counted in run.json, and its later requests
// are answered in its own session.
func TestSessionsBoundToAnAddress(t *testing.T) {
	t.Parallel()
	h, err := sdkserver.Handler(sdkserver.Config{Mode: sdkserver.Stateful20251125})
	if err != nil {
		t.Fatal(err)
	}
	rec := &sdkRecorder{byAddr: map[string]map[string]int{}, versions: map[string]int{}}
	ts := httptest.NewServer(rec.wrap(bindSessions(h)))
	defer ts.Close()
	profile := filepath.Join(t.TempDir(), "bound.yaml")
	if err := os.WriteFile(profile, []byte(`name: bound
policy: {surface: mcp, window: 4s}
sources: [127.0.0.1, 127.0.0.2]
streams:
  - name: steady
    surface: mcp
    requests: [{rpc: tools/call, params: {name: search, arguments: {query: rate limits}}}]
    pacer: {type: constant, rate: 10/w, duration: 1w}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "attack", "--profile", profile, "--target", ts.URL, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	rs, info := readArchive(t, onlyRun(t, out))
	mcp, _ := info["mcp"].(map[string]any)
	bound, _ := mcp["bound_sources"].([]any)
	if mcp["handshakes"] != 3.0 || len(bound) != 2 {
		t.Errorf("run.json mcp %v; want 3 handshakes (the negotiation, then one from each address) and both addresses bound", mcp)
	}
	last := map[string]uint16{}
	notFound := 0
	for _, r := range rs {
		last[archive.ParseLabel(r.Attack, r.URL).Source] = r.Code
		if r.Code == http.StatusNotFound {
			notFound++
		}
	}
	t.Logf("run.json mcp %v; %d results, %d of them 404\n%s", mcp, len(rs), notFound, stderr)
	if !strings.Contains(stderr, "bound its sessions to") {
		t.Errorf("stderr does not report the addresses bound:\n%s", stderr)
	}
	if last["127.0.0.1"] != http.StatusOK || last["127.0.0.2"] != http.StatusOK || notFound > 4 {
		t.Errorf("last answers %v, %d 404s: want each address answered in its own session after its first 404 or so", last, notFound)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, addr := range []string{"127.0.0.1", "127.0.0.2"} {
		if n := rec.byAddr[addr]["initialize"]; n != 1 {
			t.Errorf("%s sent %d initialize; want 1", addr, n)
		}
	}
}

// sentTimes says when each result of rs was sent, in milliseconds from
// the first, with its status and latency: what a run's timing was.
func sentTimes(rs []vegeta.Result) string {
	if len(rs) == 0 {
		return "no results\n"
	}
	var b strings.Builder
	t0 := rs[0].Timestamp
	for _, r := range rs {
		if r.Timestamp.Before(t0) {
			t0 = r.Timestamp
		}
	}
	for i, r := range rs {
		fmt.Fprintf(&b, "%d:+%dms %d %dms  ", i, r.Timestamp.Sub(t0).Milliseconds(), r.Code, r.Latency.Milliseconds())
	}
	return b.String() + "\n"
}
