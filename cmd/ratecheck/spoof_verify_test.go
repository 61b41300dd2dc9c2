package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/refserver"
)

// spoofWindow is the compressed window of these end-to-end runs.
const spoofWindow = 6 * time.Second

// TestVerifySpoofAgainstOtherLimiters: a token bucket of x/time/rate keyed
// on the peer (burst 240, refilling 240 per window) admits forged and plain
// probes alike: spoof does not fail. A target that keys on X-Forwarded-For
// fails spoof, naming that header. A target that refuses nothing leaves
// spoof and independence inconclusive (onset and rolling fail, as they
// should: 240 is not enforced).
func TestVerifySpoofAgainstOtherLimiters(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("end-to-end verdicts, checked by the plain run")
	}
	unlimited := func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1<<30, 1<<30 }
	xff := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ip := r.Header.Get("X-Forwarded-For"); ip != "" {
				r.RemoteAddr = net.JoinHostPort(ip, "1")
			}
			next.ServeHTTP(w, r)
		})
	}
	t.Run("x/time/rate", func(t *testing.T) {
		t.Parallel()
		url := startTarget(t, spoofWindow, unlimited, func(h http.Handler) http.Handler { return tokenBucketLimit(h, 240, spoofWindow) })
		_, v, stderr := runVerifyJSON(t, spoofWindow, "--target", url, "--surfaces", "rest", "--checks", "isolation")
		if verdict, detail := checkOf(v, "rest", "spoof"); verdict == "fail" || verdict == "" {
			t.Errorf("spoof %s: %s\n%s", verdict, detail, stderr)
		} else {
			t.Logf("spoof %s: %s", verdict, detail)
		}
	})
	t.Run("trusts X-Forwarded-For", func(t *testing.T) {
		t.Parallel()
		url := startTarget(t, spoofWindow, nil, xff)
		code, v, stderr := runVerifyJSON(t, spoofWindow, "--target", url, "--checks", "isolation")
		for _, sf := range []string{"rest", "mcp"} {
			verdict, detail := checkOf(v, sf, "spoof")
			if verdict != "fail" || !strings.Contains(detail, "X-Forwarded-For (") || strings.Contains(detail, "X-Real-IP (") || code != exitCheckFailed {
				t.Errorf("%s: exit %d, spoof %s: %s\n%s", sf, code, verdict, detail, stderr)
			}
		}
	})
	t.Run("nothing refused", func(t *testing.T) {
		t.Parallel()
		url := startTarget(t, spoofWindow, func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = 1000, 500 }, nil)
		_, v, stderr := runVerifyJSON(t, spoofWindow, "--target", url)
		for _, sf := range []string{"rest", "mcp"} {
			for _, check := range []string{"spoof", "independence"} {
				if verdict, detail := checkOf(v, sf, check); verdict != "inconclusive" {
					t.Errorf("%s/%s %s: %s\n%s", sf, check, verdict, detail, stderr)
				}
			}
		}
	})
}

// TestVerifyFreshStart: a second verify run against the same target with
// the same --out right after the first waits for the first run's requests
// to leave the window, or with --no-wait starts at once; neither fails. A
// target whose budget for the limit address was spent before the run is
// inconclusive, never failed, and says the follow-up burst proved the
// budget spent rather than the limit lower. At verifyWindow, not spoofWindow: no run
// here sends the spoof probes, and the back-to-back pairs wait out a window
// between their runs.
func TestVerifyFreshStart(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("end-to-end verdicts, checked by the plain run")
	}
	// Back to back: a second run right after a first one waits for the
	// first one's requests to leave the window, or with --no-wait starts
	// at once and says so; neither fails. Each against a target and a
	// first run of its own, side by side.
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
			holdSlot(t) // the second run follows the first at once
			url := startTarget(t, verifyWindow, nil, nil)
			out := t.TempDir()
			verify := func(extra ...string) (int, string, string) {
				args := append([]string{"verify", "--json", "--out", out, "--window", verifyWindow.String(), "--target", url, "--checks", "limits,isolation"}, extra...)
				return runCmd(t, args...)
			}
			if code, _, stderr := verify(); code == exitCheckFailed {
				t.Fatalf("first run failed\n%s", stderr)
			}
			if code, _, stderr := verify(tt.args...); code == exitCheckFailed || !strings.Contains(stderr, tt.want) {
				t.Errorf("a run right after a run (%v): exit %d, want no failure and %q\n%s", tt.args, code, tt.want, stderr)
			}
		})
	}
	t.Run("spent before the run", func(t *testing.T) {
		t.Parallel()
		// Spent before the run: the limit address sent 100 requests just
		// before verify, which does not know of them.
		holdSlot(t)
		url := startTarget(t, verifyWindow, nil, nil)
		for range 100 {
			resp, err := http.Get(url + "/api/public/search?q=x")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		code, v, stderr := runVerifyJSON(t, verifyWindow, "--target", url, "--surfaces", "rest", "--checks", "limits")
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
