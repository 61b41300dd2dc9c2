package main

import (
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
	"github.com/connectbyjbrh/ratecheck/internal/simrun"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// The verdicts of verify against targets of our own, each a deterministic
// run on simulated time (sim_test.go): the command's own plan, follow-up
// and analysis, against the reference target's limiters and proxies in
// front of them, on a simulated quiet host unless a test says otherwise.

// forwardedFor is a proxy in front of the target that trusts
// X-Forwarded-For: the target sees the address it names.
func forwardedFor(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ip := r.Header.Get("X-Forwarded-For"); ip != "" {
			r.RemoteAddr = simrun.Addr(ip)
		}
		next.ServeHTTP(w, r)
	})
}

// TestVerifyFailsOnWrongTargets: against a target that breaks one property,
// verify exits 1 with that property's check failing, and the family of
// its limiter decided.
func TestVerifyFailsOnWrongTargets(t *testing.T) {
	t.Parallel()
	oneBucket := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.RemoteAddr, "127.0.0.3:") { // keep the contract probes apart
				r.RemoteAddr = simrun.Addr("127.0.0.1")
			}
			next.ServeHTTP(w, r)
		})
	}
	wrongRow := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/api/public/pages/no-such") {
				w.WriteHeader(http.StatusBadRequest) // documented: 404 not_found
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	tests := []struct {
		name   string
		mutate func(*refserver.Config)
		wrap   func(http.Handler) http.Handler
		args   []string
		want   []string // checks that must fail (surface/check), every one of them
		family string   // the family both surfaces must decide ("": not asserted)
	}{
		{"fixed-window", limiter(refserver.FixedWindow), nil, nil, []string{"rest/rolling", "mcp/rolling"}, "fixed-window"},
		{"fixed-window-per-address", limiter(refserver.FixedWindowPerAddress), nil, nil, []string{"rest/rolling", "mcp/rolling"}, "fixed-window"},
		{"token-bucket", limiter(refserver.TokenBucket), nil, nil, []string{"rest/rolling", "mcp/rolling"}, "token-bucket"},
		{"leaky-bucket", limiter(refserver.LeakyBucket), nil, nil, []string{"rest/rolling", "mcp/rolling", "rest/rejected-count", "mcp/rejected-count"}, "token-bucket"},
		{"admitted-only", limiter(refserver.AdmittedOnly), nil, nil, []string{"rest/rejected-count", "mcp/rejected-count", "rest/rolling", "mcp/rolling"}, "sliding-log"},
		{"off-by-one", limiter(refserver.OffByOne), nil, nil, []string{"rest/onset", "mcp/onset", "rest/rolling", "mcp/rolling"}, "sliding-log"},
		{"sliding-window-counter", limiter(refserver.SlidingWindowCounter), nil, nil, []string{"rest/rolling", "mcp/rolling"}, "sliding-window-counter"},
		{"counter-with-refusals", limiter(refserver.CounterWithRefusals), nil, nil, []string{"rest/rolling", "mcp/rolling"}, "sliding-window-counter"},
		{"shared-budget", limiter(refserver.SharedBudget), nil, nil, []string{"rest/isolation", "mcp/isolation"}, ""},
		{"no limit", func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1<<30, 1<<30 }, nil, nil, []string{"rest/onset", "mcp/onset"}, "none"},
		// 5/6 of the documented limits: MCP's first burst refused 20 early
		// is a spent budget's doing or a lower limit's, and where nothing
		// later in the plan proves the limit lower, the follow-up burst
		// once the run's requests have aged out does.
		{"a lower limit", func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 200, 100 }, nil, nil, []string{"rest/onset", "mcp/onset"}, "sliding-log"},
		{"window twice as long", func(c *refserver.Config) { c.Window *= 2 }, nil, nil, []string{"rest/rolling", "mcp/rolling"}, "sliding-log"},
		{"trusts X-Forwarded-For", nil, forwardedFor, []string{"--checks", "isolation"}, []string{"rest/spoof", "mcp/spoof"}, ""},
		{"one bucket for every address", nil, oneBucket, []string{"--checks", "isolation"}, []string{"rest/isolation", "mcp/isolation"}, ""},
		{"a wrong failure-table row", nil, wrongRow, []string{"--checks", "contract"}, []string{"rest/contract"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, hostsim.Quiet, 1, simTarget(verifyWindow, tt.mutate), tt.wrap)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, tt.args...)
			holdsEvidence(t, v)
			got := failing(v)
			for _, want := range tt.want {
				if !slices.Contains(got, want) {
					t.Errorf("%s did not fail; failing %v", want, got)
				}
			}
			if code != exitCheckFailed || v.Verdict != "fail" {
				t.Errorf("exit %d, verdict %s; want exit 1", code, v.Verdict)
			}
			for _, s := range v.Surfaces {
				if tt.family != "" && (s.Model != tt.family || !s.Decided) {
					t.Errorf("%s: model %s decided %v (alternatives %v); want %s decided", s.Surface, s.Model, s.Decided, s.Alternatives, tt.family)
				}
			}
			if t.Failed() {
				t.Logf("%s\nstderr: %s", surfacesSaid(v), stderr)
			}
		})
	}
}

// TestVerifyNoFalseAlarmUnderDelay: latency noise (every answer held up
// to 20 ms more by the target, at a 4 s window) neither fails a correct
// target nor leaves it undecided: the plan's probes are timed windows
// apart, not milliseconds.
func TestVerifyNoFalseAlarmUnderDelay(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		host := hostsim.Quiet
		host.Add = 20 * time.Millisecond
		w := simWorld(t, host, seed, simTarget(verifyWindow, nil), nil)
		code, v, stderr := simVerifyJSON(t, w, verifyWindow)
		if code != exitOK || v.Verdict != "pass" {
			t.Fatalf("seed %d: exit %d, verdict %s, failing %v\n%s\nstderr: %s", seed, code, v.Verdict, failing(v), surfacesSaid(v), stderr)
		}
		decidedDocumented(t, v, stderr)
	}
}

// TestVerifyUnderFaults: against a correct target that resets, fails and
// delays requests (a tenth each reset and 503, every one delayed up to
// 200 ms before the limiter counts it), verify archives every request the
// target received and counts no fault as a leak or a false throttle:
// faults are retryable, not answers: it passes, decided.
func TestVerifyUnderFaults(t *testing.T) {
	t.Parallel()
	received := 0
	w := simWorld(t, hostsim.Quiet, 1, simTarget(verifyWindow, func(c *refserver.Config) {
		c.Faults = refserver.Faults{Reset: 0.1, ServerError: 0.1, DelayMax: 200 * time.Millisecond}
	}), func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			received++
			h.ServeHTTP(w, r)
		})
	})
	code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--checks", "limits,isolation", "--abort-at", "0")
	if code != exitOK || v.Verdict != "pass" {
		t.Errorf("faults on a correct target: exit %d, verdict %s, failing %v\n%s", code, v.Verdict, failing(v), surfacesSaid(v))
	}
	decidedDocumented(t, v, stderr)
	holdsEvidence(t, v)
	rs, info := readArchive(t, v.Run)
	faults := faultsIn(rs)
	if got := received - int(handshakeRequests(info)); got != len(rs) || faults == 0 {
		t.Errorf("%d received, %d archived with %d faults: want every received request archived, some faults\n%s", got, len(rs), faults, stderr)
	}
}

// TestVerifyFreshStart: a second verify run against the same target with
// the same --out right after the first waits for the first run's
// requests to leave the window, or with --no-wait starts at once and
// says so; neither fails. A target whose budget for the limit address was
// spent before the run is inconclusive, never failed, and says the
// follow-up burst proved the budget spent rather than the limit lower.
func TestVerifyFreshStart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"back to back", nil, "waiting"},
		{"back to back, --no-wait", []string{"--no-wait"}, "starting anyway (--no-wait)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, hostsim.Quiet, 1, simTarget(verifyWindow, nil), nil)
			out := t.TempDir()
			args := []string{"--out", out, "--window", verifyWindow.String(), "--checks", "limits,isolation"}
			if code, stdout, stderr := simVerify(t, w, args...); code != exitOK {
				t.Fatalf("first run: exit %d\n%s%s", code, stdout, stderr)
			}
			code, stdout, stderr := simVerify(t, w, append(args, tt.args...)...)
			if code == exitCheckFailed || !strings.Contains(stderr, tt.want) {
				t.Errorf("a run right after a run (%v): exit %d, want no failure and %q\n%s%s", tt.args, code, tt.want, stdout, stderr)
			}
		})
	}
	t.Run("spent before the run", func(t *testing.T) {
		t.Parallel()
		// The limit address sent 100 requests just before verify, which
		// does not know of them.
		w := simWorld(t, hostsim.Quiet, 1, simTarget(verifyWindow, nil), nil)
		for range 100 {
			req, _ := http.NewRequest(http.MethodGet, simrun.URL+"/api/public/search?q=x", nil)
			w.Serve(req, "127.0.0.1")
		}
		w.Clock.Advance(100 * time.Millisecond)
		code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--surfaces", "rest", "--checks", "limits")
		verdict, detail := checkOf(v, "rest", "onset")
		missing := ""
		if len(v.Surfaces) == 1 {
			missing = v.Surfaces[0].Missing
		}
		// The follow-up burst, once the run's own requests have aged out,
		// tells the spent budget from a lower limit: it is admitted in full.
		if code != exitInconclusive || verdict != "inconclusive" || !strings.Contains(missing, "the address's budget was already spent:") || !strings.Contains(missing, "was admitted in full, so the limit is not lower") || !strings.Contains(missing, "wait a window or use other --sources") {
			t.Errorf("spent budget: exit %d, onset %s: %s; missing %q\n%s", code, verdict, detail, missing, stderr)
		}
	})
}

// TestSpentOrLowerFollowUp: MCP's first burst is refused early, on a
// correct sliding log whose limit address sent 30 calls half a window
// before the run, and on one whose limit is 100 instead of 120. Nothing
// in the plan may tell them apart (on a busy host the lower limit's
// refusals a window after the start are not provably below 120), and the
// premise must not name either alone; the follow-up burst, once the run's
// own requests have aged out, must: the spent budget stays inconclusive,
// naming it as proved (on REST too), and the lower limit, which the first
// burst had in full, fails onset with REST passing, on the quiet, busy and
// loaded hosts.
func TestSpentOrLowerFollowUp(t *testing.T) {
	t.Parallel()
	const w = 6 * time.Second
	for _, tr := range []struct {
		name   string
		mutate func(*refserver.Config)
		spent  int
	}{
		{"a budget spent before the run", nil, 30},
		{"a lower limit", func(c *refserver.Config) { c.MCPLimit = 100 }, 0},
	} {
		for _, host := range []struct {
			name string
			h    hostsim.Host
		}{{"quiet", hostsim.Quiet}, {"busy", hostsim.Busy}, {"loaded", hostsim.Loaded}} {
			t.Run(tr.name+"/"+host.name, func(t *testing.T) {
				t.Parallel()
				for seed := range uint64(4) {
					world := simWorld(t, host.h, seed, simTarget(w, tr.mutate), nil)
					for range tr.spent {
						req, _ := http.NewRequest(http.MethodPost, simrun.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
						world.Serve(req, "127.0.0.1")
					}
					world.Clock.Advance(w / 2)
					code, v, stderr := simVerifyJSON(t, world, w)
					if !strings.Contains(stderr, "mcp: the first burst was refused before 120 were admitted") || strings.Contains(stderr, "follow-up on rest") {
						t.Errorf("seed %d: want MCP's aged-out burst alone followed up\n%s", seed, stderr)
					}
					if len(v.Surfaces) != 2 {
						t.Fatalf("seed %d: %d surfaces\n%s", seed, len(v.Surfaces), stderr)
					}
					rest, mcp := v.Surfaces[0], v.Surfaces[1]
					onset, _ := checkOf(v, "mcp", "onset")
					if tr.spent == 0 {
						// The burst met a limit of 100, which the first
						// burst had in full: no budget was spent, and both
						// surfaces are judged on the whole run. REST's
						// correct limit passes, or, where the host's
						// timing left a check open, says so (its timing
						// note) with nothing failed.
						restRight := rest.Verdict == "pass" || rest.Verdict == "inconclusive" && rest.Timing != "" && !slices.ContainsFunc(failing(v), func(f string) bool { return strings.HasPrefix(f, "rest/") })
						if code != exitCheckFailed || mcp.Verdict != "fail" || onset != "fail" || mcp.Missing != "" || !restRight {
							t.Errorf("seed %d: mcp %s, onset %s, missing %q; rest %s, missing %q; want onset failed, nothing missing, rest passed\n%s", seed, mcp.Verdict, onset, mcp.Missing, rest.Verdict, rest.Missing, surfacesSaid(v))
						}
						continue
					}
					// REST's own first burst was whole; it is held to a
					// spent budget where MCP's is proved one (the address
					// sent before the run: another job may still be sending).
					if code != exitInconclusive || mcp.Verdict != "inconclusive" || !strings.Contains(mcp.Missing, "the address's budget was already spent:") || !strings.Contains(mcp.Missing, "was admitted in full, so the limit is not lower") || rest.Verdict != "inconclusive" || rest.Missing != mcp.Missing {
						t.Errorf("seed %d: mcp %s, missing %q; rest %s, missing %q; want both inconclusive, the spent budget proved\n%s", seed, mcp.Verdict, mcp.Missing, rest.Verdict, rest.Missing, surfacesSaid(v))
					}
				}
			})
		}
	}
}

// TestFollowUpFromALateSecondBurst: a host that stalls for 0.4 W while the
// flood is answered sends the second burst that much late (it waits for
// the flood's last answer), and every rival gives capacity back that much
// later. The follow-up is timed from the burst as it went out, so a
// correct sliding log still passes with its family decided, and a
// sliding-window counter still fails, decided.
func TestFollowUpFromALateSecondBurst(t *testing.T) {
	t.Parallel()
	const w = 6 * time.Second
	host := hostsim.Quiet
	host.Fixed = []hostsim.Stall{{At: w * 6 / 100, D: w * 4 / 10}}
	for _, tc := range []struct {
		name   string
		mutate func(*refserver.Config)
		family string
	}{
		{"sliding log, refusals counted (documented)", nil, "sliding-log"},
		{"sliding-window counter", limiter(refserver.SlidingWindowCounter), "sliding-window-counter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(3) {
				world := simWorld(t, host, seed, simTarget(w, tc.mutate), nil)
				code, v, stderr := simVerifyJSON(t, world, w)
				want := exitCheckFailed
				if tc.mutate == nil {
					want = exitOK
				}
				if code != want {
					t.Errorf("seed %d: exit %d, want %d\n%s\n%s", seed, code, want, surfacesSaid(v), stderr)
				}
				for _, s := range v.Surfaces {
					if s.Model != tc.family || !s.Decided {
						t.Errorf("seed %d: %s: model %s decided %v (alternatives %v), want %s decided", seed, s.Surface, s.Model, s.Decided, s.Alternatives, tc.family)
					}
				}
			}
		})
	}
}

// TestVerifySpoofAgainstOtherLimiters: a token bucket of x/time/rate keyed
// on the peer (burst 240, refilling 240 per window) admits forged and
// plain probes alike: spoof does not fail. A target that keys on
// X-Forwarded-For fails spoof, naming that header and no other. A target
// that refuses nothing leaves spoof and independence inconclusive (onset
// and rolling fail, as they should: 240 is not enforced).
func TestVerifySpoofAgainstOtherLimiters(t *testing.T) {
	t.Parallel()
	const w = 6 * time.Second
	t.Run("x/time/rate", func(t *testing.T) {
		t.Parallel()
		world := simWorld(t, hostsim.Quiet, 1, simTarget(time.Minute, func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1<<30, 1<<30 }), nil)
		world.Target = xTimeRate(world.Target, world.Clock, 240, w)
		_, v, stderr := simVerifyJSON(t, world, w, "--surfaces", "rest", "--checks", "isolation")
		if verdict, detail := checkOf(v, "rest", "spoof"); verdict != "pass" {
			t.Errorf("spoof %s: %s\n%s", verdict, detail, stderr)
		}
	})
	t.Run("trusts X-Forwarded-For", func(t *testing.T) {
		t.Parallel()
		world := simWorld(t, hostsim.Quiet, 1, simTarget(w, nil), forwardedFor)
		code, v, stderr := simVerifyJSON(t, world, w, "--checks", "isolation")
		for _, sf := range []string{"rest", "mcp"} {
			verdict, detail := checkOf(v, sf, "spoof")
			if verdict != "fail" || !strings.Contains(detail, "X-Forwarded-For (") || strings.Contains(detail, "X-Real-IP (") || code != exitCheckFailed {
				t.Errorf("%s: exit %d, spoof %s: %s\n%s", sf, code, verdict, detail, stderr)
			}
		}
	})
	t.Run("nothing refused", func(t *testing.T) {
		t.Parallel()
		world := simWorld(t, hostsim.Quiet, 1, simTarget(w, func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1000, 500 }), nil)
		_, v, stderr := simVerifyJSON(t, world, w)
		for _, sf := range []string{"rest", "mcp"} {
			for _, check := range []string{"spoof", "independence"} {
				if verdict, detail := checkOf(v, sf, check); verdict != "inconclusive" {
					t.Errorf("%s/%s %s: %s\n%s", sf, check, verdict, detail, stderr)
				}
			}
		}
	})
}

// xTimeRate is golang.org/x/time/rate's token bucket in front of next,
// one per peer address and surface (burst l, refilling l per window on
// REST, half that on MCP), on the simulated clock: by its documentation a
// bucket "initially full and refilled at rate r tokens per second", whose
// Allow spends a token only on an admitted event, and AllowN(t, n) takes
// the time as an argument.
func xTimeRate(next http.Handler, clk *simrun.Clock, l int, window time.Duration) http.Handler {
	buckets := map[string]*rate.Limiter{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := l
		if r.URL.Path == "/mcp" {
			n = l / 2
		}
		key := r.URL.Path[:4] + peer(r)
		lim := buckets[key]
		if lim == nil {
			lim = rate.NewLimiter(rate.Limit(float64(n)/window.Seconds()), n)
			buckets[key] = lim
		}
		if !lim.AllowN(clk.Now(), 1) {
			contract429(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TestVerifyAgainstXTimeRate: golang.org/x/time/rate's Limiter is, by its
// documentation, "a token bucket" of size b "initially full and refilled
// at rate r tokens per second"; Allow spends a token only on an admitted
// event, so refusals cost nothing. With b = L and r = L per window it is
// no sliding log: rolling fails, the model is a token bucket, decided,
// rejected-count fails, and no shared counter or address leak is claimed.
// It runs on simulated time: AllowN takes the time as an argument.
func TestVerifyAgainstXTimeRate(t *testing.T) {
	t.Parallel()
	for _, h := range quietAndBusy {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			world := simWorld(t, h.host, 1, simTarget(time.Minute, func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1<<30, 1<<30 }), nil)
			world.Target = xTimeRate(world.Target, world.Clock, 240, verifyWindow)
			code, v, stderr := simVerifyJSON(t, world, verifyWindow, "--checks", "limits,isolation")
			judgeForeign(t, code, v, stderr, "token-bucket")
		})
	}
}

// TestVerifyAgainstAServerWithoutTheAPIWhoseLimitProbesTimeOut: a server
// without the API that never answers the limit probes (they all time out,
// as a static file server's did when its listen backlog of 5 dropped the
// burst's connections on a busy CI machine) and answers every other probe
// as such a server does (404 or 501, text/html) is still a target without
// the API, said once, exit 4: the other probes' answers show it.
func TestVerifyAgainstAServerWithoutTheAPIWhoseLimitProbesTimeOut(t *testing.T) {
	t.Parallel()
	world := simWorld(t, hostsim.Quiet, 1, simTarget(verifyWindow, nil), nil)
	world.Target = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("q") == "rate limits" || strings.Contains(string(body), `"rate limits"`) {
			_ = world.Clock.Sleep(r.Context(), 10*time.Second) // a limit probe: never answered
			return
		}
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
		} else {
			w.WriteHeader(http.StatusNotImplemented)
		}
		io.WriteString(w, "<html><body>Error</body></html>")
	})
	code, v, stderr := simVerifyJSON(t, world, 2*time.Second, "--target", simrun.URL, "--timeout", "1s")
	if code != exitInconclusive || v.Verdict != "inconclusive" || len(v.Surfaces) != 2 {
		t.Fatalf("exit %d, verdict %s, want 4 and inconclusive\n%s", code, v.Verdict, stderr)
	}
	if !strings.Contains(stderr, "the API is not there on "+simrun.URL) || strings.Contains(stderr, "the target is failing") {
		t.Errorf("stderr does not tell one story (the API is not there, not a failing target):\n%s", stderr)
	}
	want := map[string]*regexp.Regexp{"rest": regexp.MustCompile(`^the API is not there: /api/public/\S+ answers (404|501) text/html`),
		"mcp": regexp.MustCompile(`^the API is not there: /mcp answers (404|501) text/html`)}
	for _, s := range v.Surfaces {
		if !want[s.Surface].MatchString(s.Missing) {
			t.Errorf("%s: missing %q, want %v", s.Surface, s.Missing, want[s.Surface])
		}
	}
}

// TestVerifyHeaders: what serve --advertise sends is held to what it does.
// The documented API advertises nothing: skip. draft and legacy tell the
// truth: pass. lying advertises the configured limit while enforcing five
// sixths of it, a positive remaining count on a 429 and Retry-After: 0:
// fail, naming each field and its evidence.
func TestVerifyHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		advertise refserver.Advertise
		want      string
		names     []string // in the detail
	}{
		{"", "skip", []string{"nothing advertised"}},
		{"draft", "pass", []string{"RateLimit-Policy", "RateLimit"}},
		{"legacy", "pass", []string{"X-RateLimit-Limit", "Retry-After"}},
		{"lying", "fail", []string{"RateLimit r=", "on the 429", "Retry-After=0", "was refused", "RateLimit-Policy q=", "was refused with at most"}},
	}
	for _, tt := range tests {
		t.Run("advertise="+string(tt.advertise), func(t *testing.T) {
			t.Parallel()
			world := simWorld(t, hostsim.Quiet, 1, simTarget(verifyWindow, func(c *refserver.Config) { c.Advertise = tt.advertise }), nil)
			_, v, stderr := simVerifyJSON(t, world, verifyWindow)
			got := headersOf(v)
			if len(got) != 2 {
				t.Fatalf("headers on %d surfaces, want 2: %+v\n%s", len(got), v, stderr)
			}
			for sf, c := range got {
				if c[0] != tt.want {
					t.Errorf("%s: headers %s, want %s: %s", sf, c[0], tt.want, c[1])
				}
				for _, n := range tt.names {
					if !strings.Contains(c[1], n) {
						t.Errorf("%s: detail does not name %q: %s", sf, n, c[1])
					}
				}
			}
		})
	}
}
