package main

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-chi/httprate"

	"github.com/connectbyjbrh/ratecheck/refserver"
)

// Limiter libraries this project did not write, in front of the reference
// target (whose own limits it never reaches), one limiter per surface
// keyed on the peer address: what verify names them must follow from
// their documentation and source, not from ratecheck's output.

// contract429 refuses r with the contract's 429 body of its surface.
func contract429(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	if r.URL.Path == "/mcp" {
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","error":{"code":-32603,"message":"rate limited"}}`))
		return
	}
	_, _ = w.Write([]byte(`{"error":{"code":"rate_limited"}}`))
}

// peer is the request's peer address: no forwarding header is trusted.
func peer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// bySurface wraps the target with a limiter per surface (REST 240, MCP
// 120 per window), made by limit.
func bySurface(limit func(l int) func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		rest, mcp := limit(240)(next), limit(120)(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/mcp" {
				mcp.ServeHTTP(w, r)
				return
			}
			rest.ServeHTTP(w, r)
		})
	}
}

// verifyForeign runs verify's limit and isolation checks against the
// reference target wrapped by wrap, and returns the verdict.
func verifyForeign(t *testing.T, window time.Duration, wrap func(http.Handler) http.Handler) (int, verdictJSON, string) {
	t.Helper()
	if raceEnabled {
		t.Skip("timing against a limiter of its own, checked by the plain run")
	}
	target := startTarget(t, time.Minute, func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1<<30, 1<<30 }, wrap)
	return runVerifyJSON(t, window, "--target", target, "--checks", "limits,isolation")
}

// checkOf returns the verdict and detail of check name on surface s.
func checkOf(v verdictJSON, surface, name string) (string, string) {
	for _, s := range v.Surfaces {
		for _, c := range s.Checks {
			if s.Surface == surface && c.Name == name {
				return c.Verdict, c.Detail
			}
		}
	}
	return "", ""
}

// TestVerifyAgainstHttprate: go-chi/httprate's limiter (limiter.go) is a
// sliding-window counter: rate = previous window's count × the share of
// it still in the window + the current window's count, over windows
// aligned to the limiter's start (windowOffset), and a refused request is
// not counted (OnLimit returns before IncrementBy). So: rolling fails,
// the model is a sliding-window counter, decided, and rejected-count
// fails.
func TestVerifyAgainstHttprate(t *testing.T) {
	t.Parallel()
	window := verifyWindow
	code, v, stderr := verifyForeign(t, window, bySurface(func(l int) func(http.Handler) http.Handler {
		return httprate.LimitBy(l, window, func(r *http.Request) (string, error) { return peer(r), nil }, httprate.WithLimitHandler(contract429))
	}))
	judgeForeignReal(t, code, v, stderr, "sliding-window-counter")
	for _, s := range v.Surfaces {
		if s.Model == "sliding-log" && s.Decided {
			t.Errorf("%s: a sliding log decided, for a sliding-window counter", s.Surface)
		}
	}
}

// judgeForeign holds a verdict against a limiter of family want that is
// not the documented sliding log and forgets refusals: a failure, of
// rolling, and per surface the family decided want and rejected-count
// failed (refusals do not count). A real run's timing may leave either
// open only where the verdict says why itself (its timing note: how long
// the answers took against the window, and what would decide it), with
// want among the families it names: nothing decided may be wrong, and
// nothing left open unexplained.
func judgeForeign(t *testing.T, code int, v verdictJSON, stderr, want string) {
	t.Helper()
	got := failing(v)
	if code != exitCheckFailed || !contains(got, "rest/rolling") && !contains(got, "mcp/rolling") {
		t.Fatalf("exit %d, failing %v, want rolling to fail\n%s\n%s", code, got, surfacesSaid(v), stderr)
	}
	judgeForeignChecks(t, v, want)
}

// judgeForeignReal is judgeForeign for a run on the real clock, which may
// also end left open by its timing: inconclusive, nothing failed, and
// every surface saying why itself (its timing: how long its answers took
// against the window, and the window that would decide). A quiet suite
// run's HAProxy case ended so: answers to the limit address took up to
// 696 ms, 17 % of the 4 s window, and the counter's 4 s could not be told
// from a log's 4.84 s. The checks it did judge are held as judgeForeign
// holds them.
func judgeForeignReal(t *testing.T, code int, v verdictJSON, stderr, want string) {
	t.Helper()
	if !openByTiming(code, v) {
		judgeForeign(t, code, v, stderr, want)
		return
	}
	t.Logf("left open by the run's timing, as every surface says:\n%s", surfacesSaid(v))
	judgeForeignChecks(t, v, want)
}

// openByTiming reports whether a run ended inconclusive with nothing
// failed and every surface inconclusive, saying its timing.
func openByTiming(code int, v verdictJSON) bool {
	if code != exitInconclusive || len(failing(v)) > 0 || len(v.Surfaces) == 0 {
		return false
	}
	for _, s := range v.Surfaces {
		if s.Verdict != "inconclusive" || s.Timing == "" {
			return false
		}
	}
	return true
}

// judgeForeignChecks holds each surface's family, rejected-count and
// isolation checks as judgeForeign says.
func judgeForeignChecks(t *testing.T, v verdictJSON, want string) {
	t.Helper()
	for _, s := range v.Surfaces {
		decidedOrTimed(t, s.Surface, s.Model, s.Decided, s.Alternatives, s.Timing, want)
		verdict, detail := checkOf(v, s.Surface, "rejected-count")
		switch {
		case verdict == "fail" && s.RejectedCount != nil && !*s.RejectedCount:
		case verdict == "inconclusive" && s.Timing != "":
		default:
			t.Errorf("%s: rejected-count %s against a limiter that forgets refusals, want fail (rejected_count false), or inconclusive with the run's timing said: %s", s.Surface, verdict, detail)
		}
		for _, name := range []string{"independence", "isolation", "spoof"} {
			if verdict, detail := checkOf(v, s.Surface, name); verdict == "fail" {
				t.Errorf("%s/%s failed against limiters keyed on the peer address, one per surface: %s", s.Surface, name, detail)
			}
		}
	}
	t.Logf("what the run said:\n%s", surfacesSaid(v))
}

// decidedOrTimed holds a surface's family to want: decided want, or, left
// open by a real run's timing, want among the families named (or none
// named: no family explained a run its timing left that open) with the
// verdict's timing note saying why.
func decidedOrTimed(t *testing.T, surface, model string, decided bool, alternatives []string, timing, want string) {
	t.Helper()
	switch {
	case decided && model == want:
	case !decided && (model == want || contains(alternatives, want) || model == "unknown") && timing != "":
	default:
		t.Errorf("%s: model %s decided %v (alternatives %v, timing %q); want %s decided, or named and left open with the timing said", surface, model, decided, alternatives, timing, want)
	}
}
