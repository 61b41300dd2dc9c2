package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
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
func (tr planTruth) world(h hostsim.Host, seed uint64) (*simrun.World, error) {
	cfg := simTarget(planW, tr.cfg)
	w, err := newSimWorld(h, seed, cfg, tr.wrap)
	if err != nil || tr.replicas <= 1 {
		return w, err
	}
	targets := []http.Handler{w.Target}
	for range tr.replicas - 1 {
		cfg.Clock, cfg.Sleep = w.Clock.Since, w.Clock.Sleep
		srv, err := refserver.New(cfg)
		if err != nil {
			return nil, err
		}
		targets = append(targets, srv)
	}
	w.Target = roundRobin(targets)
	return w, nil
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
	// per surface, left undecided: the families it named (the model and
	// its alternatives; none for "unknown")
	named [][]string
	why   string
}

// judgeOutcome holds run v (stderr its stderr) to truth tr.
func judgeOutcome(tr planTruth, v verdictJSON, stderr string) planOutcome {
	o := planOutcome{verdict: v.Verdict, followedUp: strings.Contains(stderr, "follow-up on")}
	o.right = tr.pass == (o.verdict == "pass") && (tr.pass || o.verdict == "fail")
	for _, s := range v.Surfaces {
		fam, named := s.Model, []string(nil)
		if !s.Decided {
			fam = "undecided"
			if s.Model != "unknown" {
				named = append([]string{s.Model}, s.Alternatives...)
			}
		}
		o.named = append(o.named, named)
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
// than the truth's, or left its family open between families none of
// which is the truth's: either says something false of the target.
func (o planOutcome) wrongFamily(tr planTruth) bool {
	for k, f := range o.family {
		if tr.family == "" || f == "unknown" {
			continue
		}
		if f != "undecided" && f != tr.family || f == "undecided" && len(o.named[k]) > 0 && !slices.Contains(o.named[k], tr.family) {
			return true
		}
	}
	return false
}

// planCell is one truth on one host: its runs' outcomes counted.
type planCell struct {
	Truth, Host                                                    string
	Runs, Right, Pass, Fail, Inconclusive, WrongFamily, FollowedUp int
	Families                                                       map[string]int
	// FirstWrong is the first run not right, FirstWrongFamily the first
	// that said a wrong family (see wrongFamily).
	FirstWrong, FirstWrongFamily string
}

// runCell runs runs [from, to) of truth tr on host h, the cell seeded with
// seed (see cellSeed), each archived under dir: run i is the same whichever
// others run.
func runCell(tr planTruth, h hostsim.Host, from, to int, seed uint64, dir string) (planCell, error) {
	c := planCell{Truth: tr.name, Families: map[string]int{}}
	for i := from; i < to; i++ {
		w, err := tr.world(h, seed<<20|uint64(i))
		if err != nil {
			return c, err
		}
		out, err := os.MkdirTemp(dir, "run")
		if err != nil {
			return c, err
		}
		_, v, _, stderr, err := simVerdict(w, out, planW, "--report=false", "--seed", fmt.Sprint(seed<<20|uint64(i)+1))
		os.RemoveAll(out)
		if err != nil {
			return c, fmt.Errorf("%s, run %d: %v\n%s", tr.name, i, err, stderr)
		}
		o := judgeOutcome(tr, v, stderr)
		c.Runs++
		switch o.verdict {
		case "pass":
			c.Pass++
		case "fail":
			c.Fail++
		default:
			c.Inconclusive++
		}
		if o.followedUp {
			c.FollowedUp++
		}
		if o.right {
			c.Right++
		} else if c.FirstWrong == "" {
			c.FirstWrong = fmt.Sprintf("run %d: %s %v %v %v: %s", i, o.verdict, o.family, o.rc, o.failed, o.why)
		}
		if o.wrongFamily(tr) {
			c.WrongFamily++
			if c.FirstWrongFamily == "" {
				c.FirstWrongFamily = fmt.Sprintf("run %d: %s %v named %v: %s", i, o.verdict, o.family, o.named, o.why)
			}
		}
		for k, s := range []string{method.REST, method.MCP} {
			if k < len(o.family) {
				c.Families[s+" "+o.family[k]]++
			}
		}
	}
	return c, nil
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

// planSelected reports whether the matrix runs truth tr on host: with no
// -plan.cells, every truth on the quiet and busy hosts, on the loaded one
// the limiters a CI machine running the suite beside the run must tell
// apart, and on the starved one nginx's leaky bucket, which a run there
// once named among no families left open (see analyze's orderedShare);
// else the cells -plan.cells matches.
func planSelected(tr planTruth, host string) bool {
	if *planCells != "" {
		return regexp.MustCompile(*planCells).MatchString(tr.name + " | " + host)
	}
	loaded := regexp.MustCompile(`^(sliding log|fixed window$|sliding-window counter|token bucket, L per W)`)
	return host == "quiet" || host == "busy" || host == "loaded" && loaded.MatchString(tr.name) ||
		host == "starved" && strings.HasPrefix(tr.name, "leaky bucket")
}

// planMatrix runs runs runs of every selected cell, as many cells at once
// as the machine has cores, and returns them in the order of planTruths
// and planHosts.
func planMatrix(runs int) ([]planCell, error) {
	dir, err := os.MkdirTemp("", "ratecheck-plan")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	type job struct{ ti, hi int }
	var jobs []job
	for ti, tr := range planTruths {
		for hi, host := range planHosts {
			if planSelected(tr, host.name) {
				jobs = append(jobs, job{ti, hi})
			}
		}
	}
	cells := make([]planCell, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cells[k], errs[k] = runCell(planTruths[j.ti], planHosts[j.hi].h, 0, runs, cellSeed(j.ti, j.hi), dir)
			cells[k].Host = planHosts[j.hi].name
		})
	}
	wg.Wait()
	return cells, errors.Join(errs...)
}

// planMatrixEnv, set in a child's environment, makes the test binary run
// the matrix (planMatrix) and print its cells as JSON on stdout instead of
// its tests (see TestMain).
const planMatrixEnv = "RATECHECK_PLAN_MATRIX"

// runPlanMatrix is the test binary run as the matrix's child: it prints
// the cells of -plan.runs runs each as JSON, and returns the exit code.
func runPlanMatrix() int {
	cells, err := planMatrix(*planRuns)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(cells); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestPlanConfusion, which runs planMatrix, is in waits_test.go.

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

// TestPlanKnownRuns replays the matrix's runs that once said something
// false of their target or left open what they could decide, each as
// the matrix runs it (truth, host, run), and holds each to its truth: on
// the starved host, nginx's leaky bucket decided a fixed window from 13
// refusals each held a sixth to a third of the window (run 245), named a
// fixed window and a log from six such (run 0), and decided no limiter
// where nothing was refused although a bucket of L explained the run
// (runs 538 and 687); on the busy host, one MCP refusal a heavy tail held
// 31.5 ms had every admission replayed behind the refusals sent after
// it, and the bucket was left open against a counter (run 74).
func TestPlanKnownRuns(t *testing.T) {
	t.Parallel()
	leaky := slices.IndexFunc(planTruths, func(tr planTruth) bool { return strings.HasPrefix(tr.name, "leaky bucket") })
	for _, tc := range []struct {
		host, run int // in planHosts, in the cell
		decided   bool
	}{{3, 245, false}, {3, 0, false}, {3, 538, false}, {3, 687, false}, {1, 74, true}} {
		t.Run(fmt.Sprintf("%s/%d", planHosts[tc.host].name, tc.run), func(t *testing.T) {
			t.Parallel()
			tr, seed := planTruths[leaky], cellSeed(leaky, tc.host)
			w, err := tr.world(planHosts[tc.host].h, seed<<20|uint64(tc.run))
			if err != nil {
				t.Fatal(err)
			}
			_, v, _, stderr, err := simVerdict(w, t.TempDir(), planW, "--report=false", "--seed", fmt.Sprint(seed<<20|uint64(tc.run)+1))
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			o := judgeOutcome(tr, v, stderr)
			if o.wrongFamily(tr) || o.verdict != "fail" || tc.decided && !o.right {
				t.Errorf("%s %v named %v (want fail, %s decided on both surfaces, or left open naming it where the host cannot tell): %s", o.verdict, o.family, o.named, tr.family, o.why)
			}
		})
	}
}
