package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// contractTarget is the reference target serving the contract file at
// path changed by mutate (nil: as written), every window verifyWindow:
// what a simulated API enforces, right or wrong.
func contractTarget(t *testing.T, path string, mutate func(*scenario.Contract)) refserver.Config {
	t.Helper()
	c, err := scenario.LoadContract(path)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(c)
	}
	// Every window verifyWindow, a stacked limit's as many times longer
	// as the contract says (what verify's embedded target serves).
	// The keys are TestMain's: a quota per tier needs them to tell the
	// tiers apart.
	served, err := (&verifyContract{c: c, stacked: stackedOf(c)}).embedded(verifyWindow, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := simTarget(verifyWindow, nil)
	cfg.Rules = served.Rules
	return cfg
}

// TestSimVerifyContract: verify --contract proves another API's limits,
// each as a surface named after it, on simulated time. A target serving
// the contract passes, each limit decided the reference target's sliding
// log counting refusals, on a quiet and a busy host; a target that serves
// it wrongly fails naming the limit and the check: a lower quota onset, a
// refusal of another body shape, a limit counted for everybody instead of
// per address isolation.
func TestSimVerifyContract(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "examples", "contracts", "orders.yaml")
	limit := func(name string) func(*scenario.Contract) *scenario.Limit {
		return func(c *scenario.Contract) *scenario.Limit {
			return &c.Limits[slices.IndexFunc(c.Limits, func(l scenario.Limit) bool { return l.Name == name })]
		}
	}
	orders := limit("orders")
	for _, tc := range []struct {
		name   string
		host   hostsim.Host
		serve  func(*scenario.Contract)
		failed map[string][]string // limit → its failing checks (nil: a pass)
	}{
		{name: "as documented, quiet", host: hostsim.Quiet},
		{name: "as documented, busy", host: hostsim.Busy},
		{name: "orders at 20 a window", host: hostsim.Quiet, serve: func(c *scenario.Contract) { orders(c).Quota.N = 20 },
			failed: map[string][]string{"orders": {"onset", "rolling"}}},
		{name: "orders refused with the documented API's body", host: hostsim.Quiet,
			serve: func(c *scenario.Contract) {
				orders(c).Refused.Body = map[string]any{"error": map[string]any{"code": "rate_limited"}}
			},
			failed: map[string][]string{"orders": {"shape"}}},
		{name: "orders counted for everybody", host: hostsim.Quiet, serve: func(c *scenario.Contract) { orders(c).Key = scenario.Key{Kind: scenario.KeyGlobal} },
			failed: map[string][]string{"orders": {"isolation"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, tc.host, 1, contractTarget(t, file, tc.serve), nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--contract", file)
			var names []string
			for _, s := range v.Surfaces {
				names = append(names, s.Surface)
			}
			if !slices.Equal(names, []string{"orders", "export"}) {
				t.Fatalf("surfaces %v, want the contract's limits orders, export\n%s", names, stderr)
			}
			if tc.failed == nil {
				if code != exitOK || v.Verdict != "pass" {
					t.Fatalf("exit %d, verdict %s, failing %v; want 0 and pass\n%s", code, v.Verdict, failing(v), stderr)
				}
				// The contract says no family: the fit's best is the
				// target's sliding log, counting refusals as it does. (At
				// quotas of 30 and 10 the plan leaves a token bucket and a
				// sliding-window counter open beside it: its separations
				// are laid out for the documented 240 and 120.)
				for _, s := range v.Surfaces {
					if s.Model != "sliding-log" || s.RejectedCount == nil || !*s.RejectedCount {
						t.Errorf("%s: model %s (alternatives %v), rejected_count %v; want sliding-log counting refusals", s.Surface, s.Model, s.Alternatives, s.RejectedCount)
					}
				}
				for _, s := range v.Surfaces {
					if want := map[string]int{"orders": 30, "export": 10}[s.Surface]; s.ExpectedLimit != want || s.ObservedLimit == nil || *s.ObservedLimit != want {
						t.Errorf("%s: expected %d, observed %v; want the contract's %d both", s.Surface, s.ExpectedLimit, s.ObservedLimit, want)
					}
				}
				return
			}
			if code != exitCheckFailed || v.Verdict != "fail" {
				t.Fatalf("exit %d, verdict %s; want 1 and fail\n%s", code, v.Verdict, stderr)
			}
			var want []string
			for name, checks := range tc.failed {
				for _, c := range checks {
					want = append(want, name+"/"+c)
				}
			}
			slices.Sort(want)
			got := slices.Sorted(slices.Values(failing(v)))
			if !slices.Equal(got, want) {
				t.Errorf("failing %v, want %v\n%s", got, want, strings.TrimSpace(stderr))
			}
			// The run folder, judged again by analyze, says the same: the
			// contract it recorded gives each limit its quota and refusal.
			code2, stdout, stderr2 := runCmd(t, "analyze", "--json", v.Run)
			var again verdictJSON
			if err := json.Unmarshal([]byte(stdout), &again); err != nil {
				t.Fatalf("analyze %s: exit %d, %v\n%s", v.Run, code2, err, stderr2)
			}
			if code2 != code || again.Verdict != v.Verdict || !slices.Equal(slices.Sorted(slices.Values(failing(again))), got) {
				t.Errorf("analyze of the run: exit %d, verdict %s, failing %v; verify said exit %d, %s, %v", code2, again.Verdict, failing(again), code, v.Verdict, got)
			}
		})
	}
}

// TestSimVerifyContractByKey: a limit counted by API key
// (examples/contracts/by-key.yaml: 30 a window per X-Api-Key), on
// simulated time. A target counting each key passes, isolation proving
// the key is what is counted: key-2 from the limit address admitted while
// key-1 was over its limit, and key-1 from the second address refused as
// from the limit address. A target that counts otherwise fails naming
// the limit and isolation: by client address (key-2 shares key-1's
// budget), by key and address (key-1 from the second address has a budget
// of its own), for everybody (key-2 shares it); one with a lower quota
// fails onset.
func TestSimVerifyContractByKey(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "examples", "contracts", "by-key.yaml")
	verifyLimitCases(t, file, "search", 30, "isolation", []limitCase{
		{name: "per key, quiet", host: hostsim.Quiet, detail: "key:key-1 sent from a second address was refused as from the limit address"},
		{name: "per key, busy", host: hostsim.Busy, detail: "the budget is the key's"},
		{name: "per client address", host: hostsim.Quiet, serve: func(c *scenario.Contract) { c.Limits[0].Key = scenario.Key{Kind: scenario.KeyClientAddress} },
			failed: []string{"isolation"}, detail: "another key shares the budget of key:key-1"},
		{name: "per key and address", host: hostsim.Quiet, addr: true,
			failed: []string{"isolation"}, detail: "the target counts key:key-1 per address, not by header X-Api-Key alone"},
		{name: "for everybody", host: hostsim.Quiet, serve: func(c *scenario.Contract) { c.Limits[0].Key = scenario.Key{Kind: scenario.KeyGlobal} },
			failed: []string{"isolation"}, detail: "another key shares the budget of key:key-1"},
		{name: "at 20 a window", host: hostsim.Quiet, serve: func(c *scenario.Contract) { c.Limits[0].Quota.N = 20 },
			failed: []string{"onset", "rolling"}},
	})
}

// A limitCase is one target a contract of one limit is verified against
// on simulated time: the contract served (changed by serve; addr counts
// each key per address too, which no contract can say), on host, and
// what the verdict must be: failed, the limit's failing checks (nil: a
// pass, decided the target's sliding log at the limit's quota), and
// detail, a part of check's detail.
type limitCase struct {
	name   string
	host   hostsim.Host
	serve  func(*scenario.Contract)
	addr   bool
	failed []string
	detail string
}

// verifyLimitCases runs verify --contract file, whose one limit is
// limit with quota, against each case's target, holding check's detail
// and the verdict as the case says.
func verifyLimitCases(t *testing.T, file, limit string, quota int, check string, cases []limitCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			target := contractTarget(t, file, tc.serve)
			target.Rules.Limits[0].Key.PerAddress = tc.addr
			w := simWorld(t, tc.host, 1, target, nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--contract", file)
			if len(v.Surfaces) != 1 || v.Surfaces[0].Surface != limit {
				t.Fatalf("exit %d, %d surfaces; want %s\n%s", code, len(v.Surfaces), limit, stderr)
			}
			got := v.Surfaces[0]
			verdict, detail := checkOf(v, limit, check)
			if tc.detail != "" && !strings.Contains(detail, tc.detail) {
				t.Errorf("%s %s: %q\nlacks %q", check, verdict, detail, tc.detail)
			}
			if tc.failed == nil {
				if code != exitOK || v.Verdict != "pass" || verdict != "pass" {
					t.Fatalf("exit %d, verdict %s, %s %s, failing %v; want 0, pass\n%s\n%s", code, v.Verdict, check, verdict, failing(v), surfacesSaid(v), stderr)
				}
				if got.ObservedLimit == nil || *got.ObservedLimit != quota || got.Model != "sliding-log" || got.Faults != 0 {
					t.Errorf("%s: observed %v, model %s, %d faults; want %d, the target's sliding log, no fault", limit, got.ObservedLimit, got.Model, got.Faults, quota)
				}
				return
			}
			var want []string
			for _, c := range tc.failed {
				want = append(want, limit+"/"+c)
			}
			if got := slices.Sorted(slices.Values(failing(v))); code != exitCheckFailed || !slices.Equal(got, want) {
				t.Errorf("exit %d, failing %v; want 1 and %v\n%s\n%s", code, got, want, surfacesSaid(v), stderr)
			}
		})
	}
}

// TestSimVerifyContractGlobal: a limit counted for everybody
// (testdata/verify-contract/global.yaml: 20 a window, refused with 503),
// on simulated time. A target counting one budget passes, isolation
// proving the second address shares it: its probes among the spoof
// probes refused as the limit address's plain ones beside them. One that
// counts each address apart fails isolation; one with a lower quota fails
// onset.
func TestSimVerifyContractGlobal(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "verify-contract", "global.yaml")
	verifyLimitCases(t, file, "export", 20, "isolation", []limitCase{
		{name: "for everybody, quiet", host: hostsim.Quiet, detail: "requests from a second address were refused as from the limit address"},
		{name: "for everybody, busy", host: hostsim.Busy, detail: "the budget is everybody's"},
		{name: "per client address", host: hostsim.Quiet, serve: func(c *scenario.Contract) { c.Limits[0].Key = scenario.Key{Kind: scenario.KeyClientAddress} },
			failed: []string{"isolation"}, detail: "the target counts each address apart, not one budget for everybody"},
		{name: "at 12 a window", host: hostsim.Quiet, serve: func(c *scenario.Contract) { c.Limits[0].Quota.N = 12 },
			failed: []string{"onset", "rolling"}},
	})
}

// TestSimVerifyContractShared: a budget two routes share
// (examples/contracts/shared.yaml: 30 a window over search and list), on
// simulated time. A target counting one budget passes, independence
// proving list draws on it: its probes, sent while searches had spent the
// budget, refused as the searches beside them. One with a budget per
// route fails independence naming list; one with a lower quota fails
// onset.
func TestSimVerifyContractShared(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "examples", "contracts", "shared.yaml")
	verifyLimitCases(t, file, "reads", 30, "independence", []limitCase{
		{name: "one budget, quiet", host: hostsim.Quiet, detail: "probes of route list (0 of 10) from 127.0.0.1 were refused as the"},
		{name: "one budget, busy", host: hostsim.Busy, detail: "the routes share one budget"},
		{name: "a budget per route", host: hostsim.Quiet,
			serve: func(c *scenario.Contract) {
				list := c.Limits[0]
				list.Name, list.Routes = "list", []string{"list"}
				c.Limits[0].Routes = []string{"search"}
				c.Limits = append(c.Limits, list)
			},
			failed: []string{"independence"}, detail: "the routes do not share one budget"},
		{name: "at 20 a window", host: hostsim.Quiet, serve: func(c *scenario.Contract) { c.Limits[0].Quota.N = 20 },
			failed: []string{"onset", "rolling"}},
	})
}

// TestSimVerifyContractTiers: a quota per tier
// (examples/contracts/tiers.yaml: 10 a window for a free key, 30 for a
// paid one), on simulated time. verify judges each tier as a limit of its
// own, search:free and search:paid, each with two keys of the tier. A
// target serving the quotas passes both; one serving the paid tier at the
// free tier's quota fails search:paid on onset, search:free still passing.
func TestSimVerifyContractTiers(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "examples", "contracts", "tiers.yaml")
	for _, tc := range []struct {
		name   string
		serve  func(*scenario.Contract)
		failed []string
	}{
		{name: "as documented"},
		{name: "paid at the free quota", serve: func(c *scenario.Contract) { c.Limits[0].Quota.Tiers["paid"] = 10 }, failed: []string{"search:paid/onset", "search:paid/rolling"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, hostsim.Quiet, 1, contractTarget(t, file, tc.serve), nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--contract", file)
			if len(v.Surfaces) != 2 || v.Surfaces[0].Surface != "search:free" || v.Surfaces[1].Surface != "search:paid" {
				t.Fatalf("exit %d, %d surfaces; want search:free, search:paid\n%s", code, len(v.Surfaces), stderr)
			}
			for i, want := range []int{10, 30} {
				if s := v.Surfaces[i]; s.ExpectedLimit != want {
					t.Errorf("%s: expected limit %d, want the tier's %d", s.Surface, s.ExpectedLimit, want)
				}
			}
			if tc.failed == nil {
				if code != exitOK || v.Verdict != "pass" {
					t.Fatalf("exit %d, verdict %s, failing %v; want 0, pass\n%s\n%s", code, v.Verdict, failing(v), surfacesSaid(v), stderr)
				}
				for i, want := range []int{10, 30} {
					if s := v.Surfaces[i]; s.ObservedLimit == nil || *s.ObservedLimit != want {
						t.Errorf("%s: observed %v, want %d", s.Surface, s.ObservedLimit, want)
					}
				}
				return
			}
			if got := slices.Sorted(slices.Values(failing(v))); code != exitCheckFailed || !slices.Equal(got, tc.failed) || v.Surfaces[0].Verdict != "pass" {
				t.Errorf("exit %d, failing %v, search:free %s; want 1, %v, search:free passing\n%s\n%s", code, got, v.Surfaces[0].Verdict, tc.failed, surfacesSaid(v), stderr)
			}
		})
	}
}

// TestSimVerifyContractRefusalsCount: rejected-count holds each limit to
// what its contract's refusals_count says, on simulated time
// (examples/contracts/orders.yaml: orders says true, export says nothing).
// Against the reference target (a log counting refusals) orders passes
// and export's check is a skip that says what it found; with orders
// saying false it fails. Against a log forgetting refusals
// (refserver.AdmittedOnly) orders saying false passes, and saying true
// fails.
func TestSimVerifyContractRefusalsCount(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "examples", "contracts", "orders.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	saysFalse := filepath.Join(t.TempDir(), "orders-forgets.yaml")
	if err := os.WriteFile(saysFalse, []byte(strings.Replace(string(data), "refusals_count: true", "refusals_count: false", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		limiter    refserver.LimiterMode
		orders     string // orders' rejected-count
		detail     string
	}{
		{"counting, as said", file, refserver.Rolling, "pass", "as documented"},
		{"counting, said not to", saysFalse, refserver.Rolling, "fail", "refusals count (the contract says they do not)"},
		{"forgetting, as said", saysFalse, refserver.AdmittedOnly, "pass", "refusals do not count, as the contract says"},
		{"forgetting, said to count", file, refserver.AdmittedOnly, "fail", "refusals do not count (the contract says they do)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			target := contractTarget(t, file, nil)
			target.Limiter = tc.limiter
			w := simWorld(t, hostsim.Quiet, 1, target, nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--contract", tc.file)
			if len(v.Surfaces) != 2 {
				t.Fatalf("exit %d, %d surfaces; want orders and export\n%s", code, len(v.Surfaces), stderr)
			}
			if verdict, detail := checkOf(v, "orders", "rejected-count"); verdict != tc.orders || !strings.Contains(detail, tc.detail) {
				t.Errorf("orders/rejected-count: %s, want %s with %q: %s\n%s", verdict, tc.orders, tc.detail, detail, surfacesSaid(v))
			}
			// export says nothing: what was found is said, not held.
			if verdict, detail := checkOf(v, "export", "rejected-count"); verdict != "skip" || !strings.Contains(detail, "the contract does not say whether they do") {
				t.Errorf("export/rejected-count: %s, want skip saying what it found: %s", verdict, detail)
			}
		})
	}
}

// TestSimVerifyContractRefusalStatus: a limit's refusal is the status its
// contract names (testdata/verify-contract/refused-503.yaml: orders
// refused with a 503, as nginx's limit_req refuses by default), on
// simulated time. A target refusing orders with 503 passes: its 503s are
// the limit's refusals. One refusing them with 429 fails orders on onset,
// which names the 429 it got instead: a 429 is not that limit's refusal,
// nothing refused it, and the window admitted its quota. export, refused
// with 429 as its contract says, passes either way.
func TestSimVerifyContractRefusalStatus(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "verify-contract", "refused-503.yaml")
	for _, tc := range []struct {
		name  string
		serve func(*scenario.Contract)
		code  int
	}{
		{name: "refused with 503, as documented", code: exitOK},
		{name: "refused with 429", serve: func(c *scenario.Contract) { c.Limits[0].Refused.Status = 429 }, code: exitCheckFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, hostsim.Quiet, 1, contractTarget(t, file, tc.serve), nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--contract", file)
			if code != tc.code || len(v.Surfaces) != 2 {
				t.Fatalf("exit %d, verdict %s, %d surfaces, failing %v; want exit %d with orders and export\n%s\n%s", code, v.Verdict, len(v.Surfaces), failing(v), tc.code, surfacesSaid(v), stderr)
			}
			orders, export := v.Surfaces[0], v.Surfaces[1]
			if export.Verdict != "pass" {
				t.Errorf("export: %s, failing %v; want pass (refused with 429, as documented)", export.Verdict, failing(v))
			}
			if tc.code == exitOK {
				if orders.Verdict != "pass" || orders.Refused == 0 || orders.Faults != 0 || orders.Model != "sliding-log" {
					t.Errorf("orders: %s, %d refused, %d faults, model %s; want pass, its 503s refusals and none a fault, the target's sliding log", orders.Verdict, orders.Refused, orders.Faults, orders.Model)
				}
				return
			}
			onset, detail := checkOf(v, "orders", "onset")
			if orders.Verdict != "fail" || orders.Refused != 0 || onset != "fail" {
				t.Fatalf("orders: %s, %d refused, onset %s; want fail, no refusal, onset failed\n%s", orders.Verdict, orders.Refused, onset, stderr)
			}
			for _, want := range []string{"no 503 at all from 127.0.0.1", "not with 503: /v1/orders answers 429"} {
				if !strings.Contains(detail, want) {
					t.Errorf("onset: %q\nlacks %q", detail, want)
				}
			}
		})
	}
}

// TestSimVerifyStackedContract: a route held to 30 a minute and 1 000 an
// hour (examples/contracts/stacked.yaml), on simulated time. verify probes
// the minute's limit; the run sends the route fewer than 1 000 requests
// (the plan's 225 and a follow-up's 145 at most), so it cannot reach the
// hour's, which is inconclusive, never passed, saying how many went and
// how long a run would prove it (3.5 of its windows: 14 s here, 3h30m at
// the contract's hour). A target serving the contract passes the minute's
// limit decided and ends inconclusive; one that serves the minute's at 20
// fails it on onset, the hour's still inconclusive.
func TestSimVerifyStackedContract(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "examples", "contracts", "stacked.yaml")
	for _, tc := range []struct {
		name   string
		serve  func(*scenario.Contract)
		code   int
		minute string // the per-minute surface's verdict
	}{
		{name: "as documented", code: exitInconclusive, minute: "pass"},
		{name: "per-minute at 20", serve: func(c *scenario.Contract) { c.Limits[0].Quota.N = 20 }, code: exitCheckFailed, minute: "fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, hostsim.Quiet, 1, contractTarget(t, file, tc.serve), nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--contract", file)
			if code != tc.code || len(v.Surfaces) != 2 || v.Surfaces[0].Surface != "per-minute" || v.Surfaces[1].Surface != "per-hour" {
				t.Fatalf("exit %d, verdict %s, surfaces %d; want exit %d with per-minute, per-hour\n%s", code, v.Verdict, len(v.Surfaces), tc.code, stderr)
			}
			minute, hour := v.Surfaces[0], v.Surfaces[1]
			// At a quota of 30 the family may stay open beside the
			// target's log (TestSimVerifyContract): its best fit is the log.
			if minute.Verdict != tc.minute || tc.minute == "pass" && (minute.Model != "sliding-log" || minute.RejectedCount == nil || !*minute.RejectedCount) {
				t.Errorf("per-minute: %s, model %s decided %v, rejected_count %v, failing %v; want %s", minute.Verdict, minute.Model, minute.Decided, minute.RejectedCount, failing(v), tc.minute)
			}
			if tc.minute == "fail" && !contains(failing(v), "per-minute/onset") {
				t.Errorf("failing %v, want per-minute/onset among them", failing(v))
			}
			if hour.Verdict != "inconclusive" || hour.ExpectedLimit != 1000 {
				t.Errorf("per-hour: %s, expected %d; want inconclusive, 1000", hour.Verdict, hour.ExpectedLimit)
			}
			for _, c := range hour.Checks {
				if c.Verdict != "inconclusive" {
					t.Errorf("per-hour/%s: %s, want inconclusive (no probe of its own)", c.Name, c.Verdict)
				}
			}
			// The hour is 60 of the minute's windows: 4m0s at the
			// run's 4 s.
			for _, want := range []string{"limit per-hour (1000 per 4m0s) is stacked on per-minute over route search, and the run never reached it", "a run of about 14m0s (3.5 of its windows)"} {
				if !strings.Contains(hour.Missing, want) {
					t.Errorf("per-hour: %q\nlacks %q", hour.Missing, want)
				}
			}
			// What went to the route from the limit address: the plan's
			// 225 at L = 30 (contract check's figures), and at most a
			// follow-up's 145 more; the second address's 60 not among them.
			m := regexp.MustCompile(`it sent (\d+) requests to the route from 127\.0\.0\.1, fewer than 1000`).FindStringSubmatch(hour.Missing)
			if m == nil {
				t.Fatalf("per-hour: %q says not how many requests went to the route", hour.Missing)
			}
			if n, _ := strconv.Atoi(m[1]); n < 225 || n > 225+145 || n > minute.Requests-60 {
				t.Errorf("per-hour counts %d requests from the limit address; the plan sends 225 to 370 from it, and per-minute counts %d from both addresses", n, minute.Requests)
			}
		})
	}
}

// TestDiscoverThenVerify: a contract drafted from what a target advertises
// is held to the evidence by verify. discover reads the reference target's
// RateLimit-Policy ("rest";q=100;w=10, on the real clock: one request) and
// drafts a limit of 100 per 10 s; verify --contract of the draft, on
// simulated time, passes the target that enforces what it advertises and
// fails, on onset, the one that advertises 100 and enforces 83 (five sixths:
// the reference target's lying mode).
func TestDiscoverThenVerify(t *testing.T) {
	t.Parallel()
	advertising := func(mode refserver.Advertise) refserver.Config {
		cfg := simTarget(10*time.Second, func(c *refserver.Config) { c.RESTLimit, c.Advertise = 100, mode })
		return cfg
	}
	srv, err := refserver.New(advertising(refserver.AdvertiseDraft))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	draft := filepath.Join(t.TempDir(), "draft.yaml")
	if code, _, stderr := runCmd(t, "contract", "discover", "--target", ts.URL, "--out", draft); code != exitOK {
		t.Fatalf("discover: exit %d\n%s", code, stderr)
	}
	for _, tc := range []struct {
		mode    refserver.Advertise
		code    int
		failing string // a check that must fail ("": a pass)
	}{
		{refserver.AdvertiseDraft, exitOK, ""},
		{refserver.AdvertiseLying, exitCheckFailed, "rest/onset"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, hostsim.Quiet, 1, advertising(tc.mode), nil)
			code, v, stderr := simVerifyJSON(t, w, 10*time.Second, "--contract", draft)
			if code != tc.code || len(v.Surfaces) != 1 || v.Surfaces[0].Surface != "rest" || v.Surfaces[0].ExpectedLimit != 100 {
				t.Fatalf("exit %d, verdict %s, failing %v, surfaces %+v; want exit %d on the draft's one limit rest of 100\n%s", code, v.Verdict, failing(v), v.Surfaces, tc.code, stderr)
			}
			for _, c := range v.Surfaces[0].Checks {
				t.Logf("%s %s: %s", c.Name, c.Verdict, c.Detail)
			}
			if tc.failing != "" && !slices.Contains(failing(v), tc.failing) {
				t.Errorf("failing %v, want %s among them\n%s", failing(v), tc.failing, stderr)
			}
		})
	}
}

// TestSimVerifyStackedOnset: a stacked limit the run can reach under the
// limit it is stacked on (testdata/verify-contract/stacked-reachable.yaml:
// 1600 in ten minutes beside 240 a minute), on simulated time. With
// --max-duration of nine windows its onset is probed from the third
// address, paced at four fifths of the minute's limit: a target serving
// the contract refuses it after exactly 1600, onset passes and the rest of
// the limit is inconclusive, never passed, saying why; served at 1400 or
// at 2000, its onset fails and per-minute still passes. At the default
// --max-duration the onset is out of reach: the limit is inconclusive,
// saying what --max-duration probes it.
func TestSimVerifyStackedOnset(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "verify-contract", "stacked-reachable.yaml")
	long := []string{"--max-duration", (9 * verifyWindow).String()}
	for _, tc := range []struct {
		name  string
		quota int      // the ten minutes' quota served
		args  []string // verify's flags besides --contract
		code  int
		onset string // per-10-minutes/onset's verdict, or "" where the run has no evidence of it
	}{
		{"as documented", 1600, long, exitInconclusive, "pass"},
		{"served at 1400", 1400, long, exitCheckFailed, "fail"},
		{"served at 2000", 2000, long, exitCheckFailed, "fail"},
		{"at the default --max-duration", 1600, nil, exitInconclusive, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, hostsim.Quiet, 1, contractTarget(t, file, func(c *scenario.Contract) { c.Limits[1].Quota.N = tc.quota }), nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, append([]string{"--contract", file}, tc.args...)...)
			if code != tc.code || len(v.Surfaces) != 2 || v.Surfaces[0].Surface != "per-minute" || v.Surfaces[1].Surface != "per-10-minutes" {
				t.Fatalf("exit %d, verdict %s, %d surfaces; want exit %d with per-minute, per-10-minutes\n%s\n%s", code, v.Verdict, len(v.Surfaces), tc.code, surfacesSaid(v), stderr)
			}
			if minute := v.Surfaces[0]; minute.Verdict != "pass" {
				t.Errorf("per-minute: %s, failing %v; want pass (the onset probe goes out from an address of its own, under its limit)\n%s", minute.Verdict, failing(v), surfacesSaid(v))
			}
			stacked := v.Surfaces[1]
			if tc.onset == "" {
				if want := "verify --max-duration 34s probes it"; stacked.Verdict != "inconclusive" || !strings.Contains(stacked.Missing, want) {
					t.Errorf("per-10-minutes: %s, %q; want inconclusive saying %q", stacked.Verdict, stacked.Missing, want)
				}
				return
			}
			if verdict, detail := checkOf(v, "per-10-minutes", "onset"); verdict != tc.onset {
				t.Errorf("per-10-minutes/onset: %s, want %s: %s", verdict, tc.onset, detail)
			}
			if tc.onset == "fail" && !slices.Equal(failing(v), []string{"per-10-minutes/onset"}) {
				t.Errorf("failing %v, want per-10-minutes/onset alone", failing(v))
			}
			for _, c := range stacked.Checks {
				if judged := slices.Contains([]string{"onset", "shape", "headers"}, c.Name); !judged && (c.Verdict != "inconclusive" || !strings.Contains(c.Detail, "the run probes its onset alone")) {
					t.Errorf("per-10-minutes/%s: %s, %q; want inconclusive, its onset alone probed", c.Name, c.Verdict, c.Detail)
				}
			}
		})
	}
}

// TestSimVerifyContractWindows: limits of different windows on different
// routes (testdata/verify-contract/two-windows.yaml: 240 a minute on
// search, 120 in two minutes on export), on simulated time. The run goes
// by the shorter window; export's probes keep their places in its own,
// twice as long, and it is judged at its own window, which its verdict
// says (window_ms). A target serving the contract passes, each limit's
// sliding log decided. One serving export at 100 fails export's onset
// (refusals a window and more into the run with fewer than 120 in its
// window), its other checks left to that premise; one serving export
// over one minute fails export's rolling window.
func TestSimVerifyContractWindows(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "verify-contract", "two-windows.yaml")
	for _, tc := range []struct {
		name   string
		host   hostsim.Host
		serve  func(*scenario.Contract)
		failed []string
	}{
		{name: "as documented, quiet", host: hostsim.Quiet},
		{name: "as documented, busy", host: hostsim.Busy},
		{name: "export at 100", host: hostsim.Quiet, serve: func(c *scenario.Contract) { c.Limits[1].Quota.N = 100 }, failed: []string{"export/onset"}},
		{name: "export over a minute", host: hostsim.Quiet, serve: func(c *scenario.Contract) { c.Limits[1].Window = c.Limits[0].Window }, failed: []string{"export/rolling"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, tc.host, 1, contractTarget(t, file, tc.serve), nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow, "--contract", file)
			if len(v.Surfaces) != 2 || v.Surfaces[0].Surface != "search" || v.Surfaces[1].Surface != "export" {
				t.Fatalf("exit %d, %d surfaces; want search, export\n%s", code, len(v.Surfaces), stderr)
			}
			search, export := v.Surfaces[0], v.Surfaces[1]
			if v.WindowMS != verifyWindow.Milliseconds() || search.WindowMS != 0 || export.WindowMS != 2*verifyWindow.Milliseconds() {
				t.Errorf("windows: run %d ms, search %d, export %d; want %d, the run's, and twice it", v.WindowMS, search.WindowMS, export.WindowMS, verifyWindow.Milliseconds())
			}
			if tc.failed == nil {
				for _, s := range v.Surfaces {
					if s.Verdict != "pass" || s.Model != "sliding-log" || !s.Decided {
						t.Errorf("%s: %s, model %s (decided %v); want pass, the target's sliding log decided\n%s", s.Surface, s.Verdict, s.Model, s.Decided, surfacesSaid(v))
					}
				}
				if code != exitOK {
					t.Errorf("exit %d, want 0\n%s", code, stderr)
				}
				return
			}
			if got := slices.Sorted(slices.Values(failing(v))); code != exitCheckFailed || !slices.Equal(got, tc.failed) {
				t.Errorf("exit %d, failing %v; want 1 and %v\n%s", code, got, tc.failed, surfacesSaid(v))
			}
		})
	}
}
