package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
)

// The families a contract may document, as its family field writes
// them, by name.
var documentedFamilies = map[string]string{
	"sliding-log":            "sliding-log",
	"fixed-window":           "fixed-window",
	"sliding-window-counter": "sliding-window-counter",
	"token-bucket":           "{name: token-bucket, burst: 240, rate: 240/w}",
}

// familyContract is testdata/verify-contract/search-family.yaml with its
// limit documenting family (a name of documentedFamilies).
func familyContract(t *testing.T, family string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "verify-contract", "search-family.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "search-"+family+".yaml")
	if err := os.WriteFile(file, append(data, []byte("    family: "+documentedFamilies[family]+"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestSimVerifyContractFamilies: a contract that documents its limit's
// family (240 a window per client address) holds the limit to that
// limiter, on simulated time. The reference target serving each family
// as documented passes, decided, on a quiet and a busy host, although a
// token bucket, a fixed window and a sliding-window counter each admit
// past a rolling window of 240 (which the same run, documented as a
// sliding log, fails). Served as another family, the run fails rolling
// naming the one it fits; a token bucket served with a burst of 200 fails
// onset (its refusals began before the documented burst was admitted) and
// rolling (no bucket of 240 fits it); one that refuses nothing fails onset
// by the bucket's bound (a bucket admits past 240 in a window by its
// refills, so a rolling window's count proves nothing of it) and rolling.
func TestSimVerifyContractFamilies(t *testing.T) {
	t.Parallel()
	served := func(family string) func(*scenario.Contract) {
		return func(c *scenario.Contract) {
			c.Limits[0].Family = scenario.Family{Name: family}
			if family == "token-bucket" {
				c.Limits[0].Family.Burst, c.Limits[0].Family.Rate = c.Limits[0].Quota.N, scenario.Rate{N: float64(c.Limits[0].Quota.N), Per: scenario.Span{W: 1}}
			}
		}
	}
	type familyCase struct {
		name, documented string
		host             hostsim.Host
		serve            func(*scenario.Contract)
		failed           []string
		detail           string // of the first failed check, or of rolling
	}
	var cases []familyCase
	for _, f := range []string{"token-bucket", "fixed-window", "sliding-window-counter"} {
		// A rolling window counts a bucket's refills during the first
		// burst as admitted past its limit.
		asLog, said := []string{"rolling"}, "leaks"
		if f == "token-bucket" {
			asLog, said = []string{"onset", "rolling"}, "admitted past the limit of 240"
		}
		cases = append(cases,
			familyCase{name: f + " as documented, quiet", documented: f, host: hostsim.Quiet, serve: served(f), detail: "fit the documented"},
			familyCase{name: f + " as documented, busy", documented: f, host: hostsim.Busy, serve: served(f), detail: "fit the documented"},
			familyCase{name: f + " documented, served as a sliding log", documented: f, host: hostsim.Quiet, serve: served("sliding-log"),
				failed: []string{"rolling"}, detail: "sliding-log"},
			familyCase{name: f + " served, documented as a sliding log", documented: "sliding-log", host: hostsim.Quiet, serve: served(f),
				failed: asLog, detail: said})
	}
	cases = append(cases,
		familyCase{name: "a token bucket documented, a fixed window served", documented: "token-bucket", host: hostsim.Quiet, serve: served("fixed-window"),
			failed: []string{"rolling"}, detail: "not the documented token bucket"},
		familyCase{name: "a token bucket of 200 served", documented: "token-bucket", host: hostsim.Quiet,
			serve:  func(c *scenario.Contract) { served("token-bucket")(c); c.Limits[0].Quota.N = 200 },
			failed: []string{"onset", "rolling"}, detail: "began before 240 requests were admitted"},
		familyCase{name: "a token bucket documented, no limit served", documented: "token-bucket", host: hostsim.Quiet,
			serve:  func(c *scenario.Contract) { c.Limits[0].Quota.N = 1 << 20 },
			failed: []string{"onset", "rolling"}, detail: "more than the documented token bucket of 240 refilling 240 per 4s (one every 16.7ms) admits in that span"},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := familyContract(t, tc.documented)
			w := simWorld(t, tc.host, 1, contractTarget(t, file, tc.serve), nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--contract", file)
			if len(v.Surfaces) != 1 || v.Surfaces[0].Surface != "search" {
				t.Fatalf("exit %d, %d surfaces; want search\n%s", code, len(v.Surfaces), stderr)
			}
			check := "rolling"
			if len(tc.failed) > 0 {
				check = tc.failed[0]
			}
			if verdict, detail := checkOf(v, "search", check); !strings.Contains(detail, tc.detail) {
				t.Errorf("%s %s: %q\nlacks %q", check, verdict, detail, tc.detail)
			}
			got := v.Surfaces[0]
			if tc.failed == nil {
				if code != exitOK || v.Verdict != "pass" || got.Model != tc.documented || !got.Decided {
					t.Fatalf("exit %d, verdict %s, model %s (decided %v), failing %v; want 0, pass, %s decided\n%s\n%s", code, v.Verdict, got.Model, got.Decided, failing(v), tc.documented, surfacesSaid(v), stderr)
				}
				return
			}
			var want []string
			for _, c := range tc.failed {
				want = append(want, "search/"+c)
			}
			if got := slices.Sorted(slices.Values(failing(v))); code != exitCheckFailed || !slices.Equal(got, want) {
				t.Errorf("exit %d, failing %v; want 1 and %v\n%s\n%s", code, got, want, surfacesSaid(v), stderr)
			}
		})
	}
}
