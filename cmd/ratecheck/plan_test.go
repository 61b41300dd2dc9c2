package main

import (
	"flag"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
	"github.com/connectbyjbrh/ratecheck/internal/simrun"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// The plan's specification: verify, exactly as the command runs it (its
// plan, its timeline, its follow-up and its analysis), on a virtual clock
// against every limiter the fit weighs and the premises' rivals, on the
// simulated quiet, busy, loaded and starved hosts of hostsim, counted as a
// confusion matrix: truth × what the run said. bench/plan-matrix.sh runs
// it at 1 000 runs a cell and prints the table docs/method.md shows; the
// suite runs fewer and holds the goals with their binomial margins.

var planRuns = flag.Int("plan.runs", 0, "runs per cell of TestPlanConfusion (0: the suite's size); with -v it prints the matrix")

var planCells = flag.String("plan.cells", "", "a regular expression: TestPlanConfusion runs only the cells whose \"truth | host\" it matches")

// planW is the window of the simulated runs: verify's compressed one,
// where a host's stalls are the largest part of it.
const planW = 6 * time.Second

// A planTruth is a limiter the plan must be judged right against, and what
// right is.
type planTruth struct {
	name string
	// cfg configures the reference target behind it (at the plan's
	// window and the contract's limits before it), and wrap what stands
	// in front of it (nil: nothing); replicas, when above 1, puts that
	// many targets behind a round-robin balancer.
	cfg      func(*refserver.Config)
	wrap     func(http.Handler) http.Handler
	replicas int
	// pass: the run must pass; else fail, with every check of cause failed
	// on both surfaces.
	pass  bool
	cause []string
	// family, when set, must be the decided model of both surfaces; rc,
	// when set, their rejected_count.
	family string
	rc     *bool
}

func limiter(m refserver.LimiterMode) func(*refserver.Config) {
	return func(c *refserver.Config) { c.Limiter = m }
}

func windowTimes(f float64, m refserver.LimiterMode) func(*refserver.Config) {
	return func(c *refserver.Config) { c.Limiter, c.Window = m, time.Duration(f*float64(c.Window)) }
}

var yes, no = true, false

// planTruths are the candidates of the fit and the premises' rivals, each
// made of the reference target's limiters.
var planTruths = []planTruth{
	{name: "sliding log, refusals counted (documented)", pass: true, family: "sliding-log", rc: &yes},
	{name: "sliding log, refusals not counted", cfg: limiter(refserver.AdmittedOnly), cause: []string{method.CheckRejectedCount}, family: "sliding-log", rc: &no},
	{name: "fixed window", cfg: limiter(refserver.FixedWindow), cause: []string{method.CheckRolling}, family: "fixed-window"},
	{name: "fixed window from each address's first request", cfg: limiter(refserver.FixedWindowPerAddress), cause: []string{method.CheckRolling}, family: "fixed-window"},
	{name: "sliding-window counter", cfg: limiter(refserver.SlidingWindowCounter), cause: []string{method.CheckRolling}, family: "sliding-window-counter"},
	{name: "counter counting refusals (HAProxy's http_req_rate)", cfg: limiter(refserver.CounterWithRefusals), cause: []string{method.CheckRolling}, family: "sliding-window-counter"},
	{name: "token bucket, L per W", cfg: limiter(refserver.TokenBucket), cause: []string{method.CheckRolling}, family: "token-bucket", rc: &no},
	{name: "token bucket, L per 4 W", cfg: windowTimes(4, refserver.TokenBucket), cause: []string{method.CheckRolling}, family: "token-bucket"},
	{name: "leaky bucket holding what it delays (nginx's burst and delay)", cfg: limiter(refserver.LeakyBucket), cause: []string{method.CheckRolling}, family: "token-bucket", rc: &no},
	{name: "window 0.5 W", cfg: windowTimes(0.5, refserver.Rolling), cause: []string{method.CheckRolling}, family: "sliding-log"},
	{name: "window 0.8 W", cfg: windowTimes(0.8, refserver.Rolling), cause: []string{method.CheckRolling}, family: "sliding-log"},
	{name: "window 1.25 W", cfg: windowTimes(1.25, refserver.Rolling), cause: []string{method.CheckRolling}, family: "sliding-log"},
	{name: "window 2 W", cfg: windowTimes(2, refserver.Rolling), cause: []string{method.CheckRolling}, family: "sliding-log"},
	{name: "admits L+1", cfg: limiter(refserver.OffByOne), cause: []string{method.CheckOnset}, family: "sliding-log"},
	{name: "a lower limit (5/6 L)", cfg: func(c *refserver.Config) { c.RESTLimit, c.MCPLimit = c.RESTLimit*5/6, c.MCPLimit*5/6 }, cause: []string{method.CheckOnset}},
	{name: "one budget for every address", cfg: limiter(refserver.SharedBudget), cause: []string{method.CheckIsolation}},
	{name: "trusts X-Forwarded-For", wrap: trustXFF, cause: []string{method.CheckSpoof}},
	{name: "2 replicas behind round robin", replicas: 2, cause: []string{method.CheckOnset}},
}

// trustXFF is a proxy in front of the target that trusts X-Forwarded-For:
// the target sees the address it names as the client's.
func trustXFF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
			r.RemoteAddr = simrun.Addr(xff)
		}
		next.ServeHTTP(w, r)
	})
}

// roundRobin is a balancer sending each request to the next of targets.
func roundRobin(targets []http.Handler) http.Handler {
	next := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targets[next%len(targets)].ServeHTTP(w, r)
		next++
	})
}

// world is the simulated world of run seed of truth tr on host h.
func (tr planTruth) world(t testing.TB, h hostsim.Host, seed uint64) *simrun.World {
	cfg := simTarget(planW, tr.cfg)
	w := simWorld(t, h, seed, cfg, tr.wrap)
	if tr.replicas > 1 {
		targets := []http.Handler{w.Target}
		for range tr.replicas - 1 {
			cfg.Clock, cfg.Sleep = w.Clock.Since, w.Clock.Sleep
			srv, err := refserver.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			targets = append(targets, srv)
		}
		w.Target = roundRobin(targets)
	}
	return w
}

// planOutcome is what one run said, against its truth.
type planOutcome struct {
	verdict    string
	right      bool
	followedUp bool
	// per surface: the model's family when decided ("undecided" when
	// not), rejected_count, and the failed checks
	family, rc []string
	failed     [][]string
	why        string
}

// judgeOutcome holds run v (stderr its stderr) to truth tr.
func judgeOutcome(tr planTruth, v verdictJSON, stderr string) planOutcome {
	o := planOutcome{verdict: v.Verdict, followedUp: strings.Contains(stderr, "follow-up on")}
	o.right = tr.pass == (o.verdict == "pass") && (tr.pass || o.verdict == "fail")
	for _, s := range v.Surfaces {
		fam := s.Model
		if !s.Decided {
			fam = "undecided"
		}
		rc := "null"
		if s.RejectedCount != nil {
			rc = fmt.Sprint(*s.RejectedCount)
		}
		var failed []string
		for _, c := range s.Checks {
			if c.Verdict == "fail" {
				failed = append(failed, c.Name)
			}
			if o.why == "" && c.Verdict != "pass" && c.Verdict != "skip" {
				o.why = fmt.Sprintf("%s %s %s: %s", s.Surface, c.Name, c.Verdict, c.Detail)
			}
		}
		o.family, o.rc, o.failed = append(o.family, fam), append(o.rc, rc), append(o.failed, failed)
		if tr.family != "" && fam != tr.family {
			o.right = false
		}
		if tr.rc != nil && rc != fmt.Sprint(*tr.rc) {
			o.right = false
		}
		for _, c := range tr.cause {
			if !slices.Contains(failed, c) {
				o.right = false
			}
		}
	}
	return o
}

// wrongFamily reports whether a surface of the run decided a family other
// than the truth's.
func (o planOutcome) wrongFamily(tr planTruth) bool {
	for _, f := range o.family {
		if tr.family != "" && f != "undecided" && f != tr.family && f != "unknown" {
			return true
		}
	}
	return false
}

// planCell is one truth on one host: its runs' outcomes counted.
type planCell struct {
	runs, right, pass, fail, inconclusive, wrongFamily, followedUp int
	families                                                       map[string]int
	firstWrong                                                     string
}

// runCell runs runs [from, to) of truth tr on host h, the cell seeded with
// seed (see cellSeed): run i is the same whichever others run.
func runCell(t *testing.T, tr planTruth, h hostsim.Host, from, to int, seed uint64) planCell {
	c := planCell{families: map[string]int{}}
	for i := from; i < to; i++ {
		w := tr.world(t, h, seed<<20|uint64(i))
		_, v, stderr := simVerifyJSON(t, w, planW, "--report=false", "--seed", fmt.Sprint(seed<<20|uint64(i)+1))
		o := judgeOutcome(tr, v, stderr)
		c.runs++
		switch o.verdict {
		case "pass":
			c.pass++
		case "fail":
			c.fail++
		default:
			c.inconclusive++
		}
		if o.followedUp {
			c.followedUp++
		}
		if o.right {
			c.right++
		} else if c.firstWrong == "" {
			c.firstWrong = fmt.Sprintf("run %d: %s %v %v %v: %s", i, o.verdict, o.family, o.rc, o.failed, o.why)
		}
		if o.wrongFamily(tr) {
			c.wrongFamily++
		}
		for k, s := range []string{method.REST, method.MCP} {
			if k < len(o.family) {
				c.families[s+" "+o.family[k]]++
			}
		}
	}
	return c
}

// cellSeed seeds the cell of truth ti (in planTruths) on host hi (quiet,
// busy, loaded, starved).
func cellSeed(ti, hi int) uint64 { return uint64(ti*10 + hi + 1) }

// lowerBound99 is the one-sided 99 % Clopper–Pearson lower bound of a
// rate of k in n, by bisection on the binomial tail.
func lowerBound99(k, n int) float64 {
	if k == 0 {
		return 0
	}
	lgammaC := func(n, k int) float64 {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(k + 1))
		c, _ := math.Lgamma(float64(n - k + 1))
		return a - b - c
	}
	lo, hi := 0.0, 1.0
	for range 60 {
		p := (lo + hi) / 2
		tail := 0.0 // P(X ≥ k | p)
		for x := k; x <= n; x++ {
			tail += math.Exp(lgammaC(n, x) + float64(x)*math.Log(p) + float64(n-x)*math.Log1p(-p))
		}
		if tail < 0.01 {
			lo = p
		} else {
			hi = p
		}
	}
	return lo
}

// planHosts are the simulated hosts of the matrix; held says whether a
// host's cells are held to the rate goals (every cell is held to its
// verdicts and to no wrong family).
var planHosts = []struct {
	name string
	h    hostsim.Host
	held bool
}{{"quiet", hostsim.Quiet, true}, {"busy", hostsim.Busy, true}, {"loaded", hostsim.Loaded, false}, {"starved", hostsim.Starved, false}}

// TestPlanConfusion runs verify against every truth on the quiet and the
// busy host and holds the goals: a correct limiter passes, decided
// sliding-log with refusals counted, in at least 99.5 % of runs; a deviant
// fails, for its real cause and with its family decided, in at least 99 %;
// a deviant never passes, a correct limiter never fails, and no run
// decides a wrong family. On the loaded host (hostsim.Loaded) it runs the
// limiters a CI machine running the suite beside the run must tell apart
// and holds their verdicts and families, logging their rates; the starved
// host runs only when -plan.cells asks for it. A rate goal holds unless
// the runs prove it missed: unless even its 99 % upper bound is below the
// goal.
func TestPlanConfusion(t *testing.T) {
	t.Parallel()
	runs := *planRuns
	if runs == 0 {
		runs = 6
		if testing.Short() || raceEnabled {
			runs = 1
		}
	}
	loadedTruths := regexp.MustCompile(`^(sliding log|fixed window$|sliding-window counter|token bucket, L per W)`)
	only := regexp.MustCompile(*planCells)
	skipped := func(tr planTruth, host string) bool {
		if *planCells == "" && (host == "loaded" && !loadedTruths.MatchString(tr.name) || host == "starved") {
			return true
		}
		return !only.MatchString(tr.name + " | " + host)
	}
	cells := make([]planCell, len(planTruths)*len(planHosts))
	// Every cell is independent: they run side by side, as many at once
	// as go test runs parallel tests.
	t.Run("cells", func(t *testing.T) {
		for ti, tr := range planTruths {
			for hi, host := range planHosts {
				if skipped(tr, host.name) {
					continue
				}
				t.Run(tr.name+"|"+host.name, func(t *testing.T) {
					t.Parallel()
					cells[ti*len(planHosts)+hi] = runCell(t, tr, host.h, 0, runs, cellSeed(ti, hi))
				})
			}
		}
	})
	var rows []string
	for ti, tr := range planTruths {
		for hi, host := range planHosts {
			if skipped(tr, host.name) {
				continue
			}
			c := cells[ti*len(planHosts)+hi]
			goal := 0.99
			if tr.pass {
				goal = 0.995
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %d | %d | %d | %d | %d | %.1f %% | %d | %s |", tr.name, host.name, c.followedUp, c.pass, c.fail, c.inconclusive,
				c.right, 100*float64(c.right)/float64(c.runs), c.wrongFamily, top(c.families)))
			if upper := 1 - lowerBound99(c.runs-c.right, c.runs); upper < goal && host.held {
				t.Errorf("%s on the %s host: right in %d of %d runs, below the goal of %.1f %% beyond the runs' margin; first wrong %s", tr.name, host.name, c.right, c.runs, 100*goal, c.firstWrong)
			}
			if tr.pass && c.fail > 0 || !tr.pass && c.pass > 0 {
				t.Errorf("%s on the %s host: %d passes and %d failures; first wrong %s", tr.name, host.name, c.pass, c.fail, c.firstWrong)
			}
			if c.wrongFamily > 0 { // on every host
				t.Errorf("%s on the %s host: %d runs decided a wrong family (%v); first wrong %s", tr.name, host.name, c.wrongFamily, c.families, c.firstWrong)
			}
		}
	}
	t.Logf("%d runs a cell\n| truth | host | followed up | pass | fail | inconclusive | right | right %% | wrong family | families decided |\n|---|---|---|---|---|---|---|---|---|---|\n%s", runs, strings.Join(rows, "\n"))
}

// top lists a cell's counts, largest first.
func top(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
