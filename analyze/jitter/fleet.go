package jitter

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Config is what a fleet was asked to do, and how strictly to judge it.
type Config struct {
	// Base and Cap are the backoff's: retry k (from 0) of full jitter
	// draws from [0, min(Cap, Base·2^k)].
	Base, Cap time.Duration
	// Strategy is the backoff the clients claim: full (also ""), equal,
	// decorrelated or none. Every wave is judged against independent
	// draws of that strategy, from the ranges package client draws from;
	// none draws nothing, so it is judged against full jitter, the
	// contract's advice (and fails).
	Strategy string
	// Epsilon is the distance that counts as a collision (0: Base/50).
	Epsilon time.Duration
	// Attempts is the cap on attempts per request (0: 4).
	Attempts int
	// SlowDown is the least pause a client must take before its next
	// request after one ended on repeated 429s (0: not checked).
	SlowDown time.Duration
	// Alpha is the false-alarm rate of the run's timing tests together
	// (0: DefaultAlpha): each of its m tests is held to Alpha/m
	// (Bonferroni).
	Alpha float64
	// Sims is the number of simulated fleets each wave's bounds come
	// from (0: 2·⌈m/Alpha⌉ − 1, so that a bound is the 2nd largest
	// simulated figure); never fewer than ⌈m/Alpha⌉ − 1, the fewest with
	// which a test can fail at all. Seed seeds them.
	Sims int
	Seed uint64
	// Clients and Requests, when set, are the client programs started and
	// the logical requests each was asked to make (fleet --client-cmd): a
	// run with fewer is inconclusive.
	Clients, Requests int
	// Stall is the longest the target stalled while the clients retried
	// (0: not measured); more than ε makes the run inconclusive.
	Stall time.Duration
}

// DefaultAlpha is a fleet's false-alarm rate: the chance that a fleet
// whose clients draw independently by the strategy claimed fails its
// timing tests. A client's retry library draws from its own random
// source, so no run of it can be repeated: each must stand alone, and a
// release gate or test suite that judges a dozen such fleets would fail
// a correct one in about one run of ten at 0.01.
const DefaultAlpha = 1e-4

// withDefaults returns cfg with its zero fields set (Sims is set once the
// number of tests is known).
func (cfg Config) withDefaults() Config {
	if cfg.Epsilon <= 0 {
		cfg.Epsilon = cfg.Base / 50
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 4
	}
	if cfg.Alpha <= 0 {
		cfg.Alpha = DefaultAlpha
	}
	return cfg
}

// Wave is the figures of one attempt wave: every client's attempt N of its
// first request.
type Wave struct {
	Attempt int `json:"attempt"`
	Clients int `json:"clients"`
	// RangeLowMS and RangeMS are the least and the greatest delay the
	// null draws from at this wave (for decorrelated jitter, over every
	// client's own range).
	RangeLowMS      float64 `json:"range_low_ms"`
	RangeMS         float64 `json:"range_ms"`
	Collisions      int     `json:"collisions"`
	Expected        float64 `json:"expected"`
	Bound           int     `json:"bound"`
	CollisionRatio  float64 `json:"collision_ratio"`
	Recollided      int     `json:"recollided"`
	RecollisionRate float64 `json:"recollision_rate"`
	RecollisionMax  float64 `json:"recollision_expected"`
	RecollBound     int     `json:"recollision_bound"`
	// KSP is the p-value of a KS test of this wave's delays over their
	// ranges, reported; the run's over every wave is the one judged.
	KSP       float64 `json:"ks_p"`
	PeakBin   int     `json:"peak_bin"`
	PeakBound int     `json:"peak_bound"`
	LateP99MS float64 `json:"late_p99_ms"`
	Verdict   string  `json:"verdict"`

	pairs       [][2]int  // colliding client pairs, for the next wave
	recollPairs int       // of those, how many were both in the next wave
	us          []float64 // each delay's place in its null range, in [0, 1]
}

// Report is the verdict on a fleet (fleet --json).
type Report struct {
	Verdict         string  `json:"verdict"`
	CollisionRatio  float64 `json:"collision_ratio"`
	RecollisionRate float64 `json:"recollision_rate"`
	KSP             float64 `json:"ks_p"`
	EpsilonMS       float64 `json:"epsilon_ms"`
	Alpha           float64 `json:"alpha"`
	// Null is the strategy whose independent draws the waves were judged
	// against; Sims the number of simulated fleets per wave.
	Null string `json:"null"`
	Sims int    `json:"sims"`
	// EpsilonBasis says how ε was reached when it came from the data.
	EpsilonBasis string          `json:"epsilon_basis,omitempty"`
	Clients      int             `json:"clients"`
	Requests     int             `json:"requests"`
	AttemptsMean float64         `json:"attempts_mean"`
	AttemptsMax  int             `json:"attempts_max"`
	Waves        []Wave          `json:"waves"`
	Checks       []analyze.Check `json:"checks"`
	// Notes say what a person should know beside the checks.
	Notes []string `json:"notes"`
}

// add appends a check: a failed one fails the report, an inconclusive one
// makes it inconclusive unless another failed.
func (rep *Report) add(c analyze.Check) {
	rep.Checks = append(rep.Checks, c)
	rep.Verdict = analyze.Worse(rep.Verdict, c.Verdict)
}

// check builds a check with its evidence formatted.
func check(name, verdict, format string, args ...any) analyze.Check {
	return analyze.Check{Name: name, Verdict: verdict, Detail: fmt.Sprintf(format, args...)}
}

// Jitter judges the retry timing of a fleet's results: it groups the
// attempts by client and request; lays the first request's retries out in
// attempt waves on each client's own timeline; tests every wave against
// simulated fleets whose clients draw independently by the claimed
// strategy (collisions, the busiest ε-bin, the re-collision of the pairs
// that collided at the wave before, and a Kolmogorov–Smirnov test of the
// delays over their ranges); counts each request's retries; then judges
// the fleet's checks (fleetChecks) on that evidence. The timing tests
// together hold a false-alarm rate of at most Alpha.
func Judge(in *decode.Input, cfg Config) *Report {
	cfg = cfg.withDefaults()
	rep := &Report{Verdict: analyze.Pass, Alpha: cfg.Alpha, Null: nullOf(cfg.Strategy), Notes: []string{}}
	f := groupFleet(in)
	if len(f.clients) == 0 {
		rep.EpsilonMS = clock.Ms(cfg.Epsilon)
		if cfg.Clients > 0 { // client programs that sent nothing: no evidence
			v, d := judgeClients(&fleetEvidence{f: f, cfg: cfg, rep: rep, discipline: disciplineCounts{perClient: map[int]int{}}})
			rep.add(analyze.Check{Name: "clients", Verdict: v, Detail: d})
			return rep
		}
		rep.add(check("fleet", analyze.Fail, "no fleet results (labels with client= and attempt=)"))
		return rep
	}
	rep.Clients = len(f.fleet)
	f.splitPolled(cfg)
	if cfg.Base <= 0 && cfg.Epsilon <= 0 { // a client program's records: ε from the data
		cfg.Epsilon, rep.EpsilonBasis = f.epsilonFromRelease()
	}
	rep.EpsilonMS = clock.Ms(cfg.Epsilon)
	e := &fleetEvidence{in: in, f: f, cfg: cfg, rep: rep}
	e.jitter = judgeWaves(rep, f.waves(cfg), cfg)
	e.discipline = f.discipline(cfg)
	rep.Requests, rep.AttemptsMax = e.discipline.total, e.discipline.attemptsMax
	rep.AttemptsMean = float64(e.discipline.attempts) / float64(max(e.discipline.total, 1))
	for _, c := range fleetChecks() {
		if v, d := c.judge(e); v != "" {
			rep.add(analyze.Check{Name: c.name, Verdict: v, Detail: d})
		}
	}
	return rep
}

// fleetCheckDef is one check of a fleet: its name, the evidence it needs
// (said when it is missing) and its judge, which returns no verdict when
// the check does not apply to the run.
type fleetCheckDef struct {
	name, needs string
	judge       func(e *fleetEvidence) (verdict, detail string)
}

// fleetEvidence is what a fleet's checks weigh.
type fleetEvidence struct {
	in         *decode.Input
	f          *fleetRun
	cfg        Config
	rep        *Report
	jitter     analyze.Check
	discipline disciplineCounts
}

// fleetChecks lists the checks of a fleet in report order. Adding a check
// is adding one here; tables, JSON and JUnit render what they return.
func fleetChecks() []fleetCheckDef {
	return []fleetCheckDef{
		{"clients", "every client's requests, as many as asked", judgeClients},
		{"target", "a target that kept time while the clients retried", judgeStall},
		{"shared-429", "every client's first attempt refused together", func(e *fleetEvidence) (string, string) {
			c := sharedRefusal(e.in, e.f)
			return c.Verdict, c.Detail
		}},
		{"jitter", "retries of the first request in waves of at least two clients", func(e *fleetEvidence) (string, string) {
			return e.jitter.Verdict, e.jitter.Detail
		}},
		{"retry-answers", "requests whose answers the clients could retry", judgeRetriedAnswers},
		{"attempt-cap", "requests that met retryable failures", judgeAttemptCap},
		{"faults-retried", "requests that met a transport fault or a 5xx", judgeFaultsRetried},
		{"slow-down", "a client that ended a request on repeated 429s and sent another", judgeSlowDown},
	}
}

// fleetAttempt is one attempt, in a client's request.
type fleetAttempt struct {
	rec *decode.Record
	tag *archive.FleetTag
}

// fleetRun is a fleet's results grouped by client and request.
type fleetRun struct {
	requests map[int]map[int][]fleetAttempt // client → request → attempts in order
	clients  []int                          // every client, ascending
	fleet    []int                          // the fleet proper: not the failure-table probes
	// split: chains of one request read as that many requests of at most
	// the cap (see splitPolled), and the clients they were of
	split, splitClients int
}

// splitPolled reads, for client programs (Config.Requests set), a chain
// of attempts of one request past the attempt cap as consecutive requests
// of at most the cap, when that explains exactly the requests the client
// was asked to make and did not otherwise: a client that polls one
// request sends the same bytes for its next request after giving up on
// one, which the server cannot tell from a retry. Only chains of
// retryable failures (429, 5xx, no answer) are split: an answer inside
// one is a retried answer.
func (f *fleetRun) splitPolled(cfg Config) {
	if cfg.Requests <= 0 || cfg.Attempts <= 0 {
		return
	}
	for _, c := range f.clients {
		reqs := f.requests[c]
		ids := slices.Sorted(maps.Keys(reqs))
		extra := 0
		for _, id := range ids {
			if as := reqs[id]; len(as) > cfg.Attempts && allRetryable(as[:len(as)-1]) {
				extra += (len(as) - 1) / cfg.Attempts
			}
		}
		if extra == 0 || len(ids)+extra != cfg.Requests {
			continue
		}
		out := map[int][]fleetAttempt{}
		for _, id := range ids {
			as := reqs[id]
			if len(as) <= cfg.Attempts || !allRetryable(as[:len(as)-1]) {
				out[len(out)+1] = as
				continue
			}
			f.split++
			for len(as) > 0 {
				n := min(cfg.Attempts, len(as))
				chunk := make([]fleetAttempt, n)
				for i := range chunk {
					t := *as[i].tag
					t.Request, t.Attempt = len(out)+1, i+1
					chunk[i] = fleetAttempt{as[i].rec, &t}
				}
				out[len(out)+1], as = chunk, as[n:]
			}
		}
		f.requests[c] = out
		f.splitClients++
	}
}

// allRetryable reports whether every attempt met a retryable failure.
func allRetryable(as []fleetAttempt) bool {
	for _, a := range as {
		if !method.Retryable(a.rec.Code) {
			return false
		}
	}
	return true
}

// groupFleet groups the fleet results of in (phase 1).
func groupFleet(in *decode.Input) *fleetRun {
	f := &fleetRun{requests: map[int]map[int][]fleetAttempt{}}
	for i := range in.Records {
		r := &in.Records[i]
		tag := in.Tables().Labels(r).Fleet
		if tag == nil {
			continue
		}
		c := f.requests[tag.Client]
		if c == nil {
			c = map[int][]fleetAttempt{}
			f.requests[tag.Client] = c
		}
		c[tag.Request] = append(c[tag.Request], fleetAttempt{r, tag})
	}
	for c, reqs := range f.requests {
		f.clients = append(f.clients, c)
		for _, as := range reqs {
			slices.SortFunc(as, func(a, b fleetAttempt) int { return cmp.Compare(a.tag.Attempt, b.tag.Attempt) })
		}
	}
	slices.Sort(f.clients)
	for _, c := range f.clients {
		if as := f.requests[c][1]; len(as) > 0 && in.Tables().Labels(as[0].rec).Stream == method.StreamFleet {
			f.fleet = append(f.fleet, c)
		}
	}
	return f
}

// point is one client's retry in a wave, on its own timeline.
type point struct {
	client   int
	from, at int64         // its previous answer, and when it sent
	delay    time.Duration // the delay it drew (its label), else the gap observed
	lo, hi   time.Duration // the range the null draws that delay from
	// smear, when set, is how much of that range is the host's noise
	// rather than the client's draw: the null draws over hi−lo−smear and
	// adds a uniform noise of up to smear (a client program judged from
	// the server's records, whose arrivals carry its host's wake-up).
	smear time.Duration
	late  time.Duration // the gap observed minus the delay drawn
}

// wave is the retries of one attempt number.
type wave struct {
	attempt int
	labeled bool // delays are the clients' own draws, not observed gaps
	pts     []point
}

// waves lays out the retries of every fleet client's first request in
// waves of one attempt number (phase 2).
//
// Each client's attempts are placed on its own timeline: attempt 1 at the
// fleet's release (its earliest first send), then each retry its drawn
// delay plus the wave's median latency after the one before. This judges
// the clients' schedule, not the machine: the spread of the first sends
// (goroutines released together start milliseconds apart) and of each
// answer's latency, and timers that run late, are the host's noise, on
// the scale of ε; on observed times they would split lockstep clients
// apart, and move a run's collision count from run to run for one and the
// same set of draws. On this timeline the figures are a function of the
// draws alone. Without delay labels (plain Vegeta results) the observed
// times are used.
func (f *fleetRun) waves(cfg Config) []wave {
	maxAttempt, labeled, release := 0, true, int64(math.MaxInt64)
	for _, c := range f.fleet {
		as := f.requests[c][1]
		maxAttempt = max(maxAttempt, len(as))
		release = min(release, as[0].rec.Start)
		for _, a := range as[1:] {
			labeled = labeled && a.tag.Delay >= 0
		}
	}
	medLat := make([]int64, maxAttempt)
	for n := range medLat {
		var lat []float64
		for _, c := range f.fleet {
			if as := f.requests[c][1]; len(as) > n {
				lat = append(lat, float64(as[n].rec.End-as[n].rec.Start))
			}
		}
		medLat[n] = int64(quantile(lat, 0.5))
	}
	timeline, drawn := f.timelines(labeled, release, medLat)
	var out []wave
	for n := 2; n <= maxAttempt; n++ {
		w := wave{attempt: n, labeled: labeled}
		for _, c := range f.fleet {
			as := f.requests[c][1]
			if len(as) < n {
				continue
			}
			observed := time.Duration(as[n-1].rec.Start - as[n-2].rec.End)
			p := point{client: c, at: timeline[c][n-1], delay: drawn[c][n-1]}
			p.from, p.late = p.at-int64(p.delay), observed-p.delay
			// Retry n−2 (from 0) draws after the delay drawn before
			// the previous attempt (none before the first retry).
			p.lo, p.hi = drawRange(cfg, n-2, drawn[c][n-2])
			w.pts = append(w.pts, p)
		}
		if cfg.Base <= 0 && len(w.pts) > 0 {
			// The clients' backoff is unknown (a client program judged
			// from the server's records): each wave is judged against
			// independent draws over the range it showed, [0, its
			// longest delay]. Lockstep clients show a range as long as
			// their common delay and crowd one end of it.
			var hi time.Duration
			for _, p := range w.pts {
				hi = max(hi, p.delay)
			}
			// The host's noise on each arrival (a process's wake-up, up to
			// about ε) is laid over the null's draws too, so that it does
			// not pass for clustering.
			for i := range w.pts {
				w.pts[i].lo, w.pts[i].hi = 0, max(hi, time.Millisecond)
				w.pts[i].smear = min(cfg.Epsilon, w.pts[i].hi/2)
			}
		}
		if len(w.pts) >= 2 {
			out = append(out, w)
		}
	}
	return out
}

// timelines places each fleet client's attempts on its own timeline (see
// waves): when each attempt was sent, and the delay before it. Without
// delay labels they are the observed sends and gaps.
func (f *fleetRun) timelines(labeled bool, release int64, medLat []int64) (timeline map[int][]int64, drawn map[int][]time.Duration) {
	timeline, drawn = map[int][]int64{}, map[int][]time.Duration{}
	for _, c := range f.fleet {
		as := f.requests[c][1]
		v, d := make([]int64, len(as)), make([]time.Duration, len(as))
		for n, a := range as {
			switch {
			case !labeled:
				v[n] = a.rec.Start
				if n > 0 {
					d[n] = time.Duration(a.rec.Start - as[n-1].rec.End)
				}
			case n == 0:
				v[n] = release
			default:
				d[n] = a.tag.Delay
				v[n] = v[n-1] + medLat[n-1] + int64(d[n])
			}
		}
		timeline[c], drawn[c] = v, d
	}
	return timeline, drawn
}

// waveTests is what the tests of every wave share.
type waveTests struct {
	eps     int64
	perTest float64 // each test's share of Alpha
	sims    int
	rank    int // a figure fails above the rank-th largest of its simulated ones
	rng     *rand.Rand
}

// judgeWaves tests every wave (phase 3), fills rep's waves and totals, and
// returns the jitter check.
func judgeWaves(rep *Report, waves []wave, cfg Config) analyze.Check {
	// Per wave: collisions and the peak; per pair of waves:
	// re-collision; over all waves' delays drawn by the clients
	// (labelled): one KS test, since each delay's place in its null range
	// is uniform and independent of the others.
	tests := 3*len(waves) - 1
	labeled := len(waves) > 0 && waves[0].labeled
	if labeled {
		tests++
	}
	t := newWaveTests(cfg, tests)
	rep.Sims = t.sims
	for _, w := range waves {
		var prev *Wave
		if len(rep.Waves) > 0 {
			prev = &rep.Waves[len(rep.Waves)-1]
		}
		rep.Waves = append(rep.Waves, t.judge(w, prev))
	}
	var sumObs, sumExp, sumRecollExp float64
	var sumRecoll, sumPairs int
	var allU []float64
	var failed []string
	for _, w := range rep.Waves {
		sumObs += float64(w.Collisions)
		sumExp += w.Expected
		sumRecoll += w.Recollided
		sumPairs += w.recollPairs
		sumRecollExp += w.RecollisionMax * float64(w.recollPairs)
		allU = append(allU, w.us...)
		if w.Verdict == analyze.Fail {
			failed = append(failed, strconv.Itoa(w.Attempt))
		}
	}
	rep.CollisionRatio = sumObs / math.Max(sumExp, 1e-9)
	rep.RecollisionRate = float64(sumRecoll) / float64(max(sumPairs, 1))
	rep.KSP = ksUniform(allU)
	ksFailed := labeled && rep.KSP < t.perTest
	null := rep.Null + " jitter"
	switch {
	case len(rep.Waves) == 0:
		return check("jitter", analyze.Fail, "no client retried, so the fleet shows nothing about its jitter")
	case len(failed) > 0 || ksFailed:
		what := "the delays are not distributed as drawn by independent " + null
		if len(failed) > 0 {
			what = "waves " + strings.Join(failed, ", ") + " broke the bounds of independent " + null
		}
		return check("jitter", analyze.Fail, "%s (collision ratio %.2f, re-collision %.0f%% against about %.0f%% expected, KS p %.2g; ε %v, false-alarm rate %.2g over %d tests, %d simulated fleets)",
			what, rep.CollisionRatio, 100*rep.RecollisionRate, 100*sumRecollExp/float64(max(sumPairs, 1)), rep.KSP, cfg.Epsilon, cfg.Alpha, tests, t.sims)
	default:
		return check("jitter", analyze.Pass, "every wave is within the bounds of independent %s (collision ratio %.2f, re-collision %.0f%%, KS p %.2g; ε %v, false-alarm rate %.2g over %d tests, %d simulated fleets)",
			null, rep.CollisionRatio, 100*rep.RecollisionRate, rep.KSP, cfg.Epsilon, cfg.Alpha, tests, t.sims)
	}
}

// newWaveTests shares cfg.Alpha among tests and sizes the simulation.
//
// Each test is a Monte Carlo test: the observed figure and the S simulated
// ones are exchangeable under the null, so a figure above the r-th
// largest simulated one has probability at most r/(S+1). With r the
// largest integer not above (Alpha/m)·(S+1), each test's false-alarm rate
// is at most Alpha/m exactly, however few the simulations: their number
// only sets how sharp the bound is.
func newWaveTests(cfg Config, tests int) *waveTests {
	tests = max(tests, 1)
	perTest := cfg.Alpha / float64(tests)
	least := int(math.Ceil(float64(tests)/cfg.Alpha-1e-9)) - 1
	sims := cfg.Sims
	if sims <= 0 {
		sims = 2*(least+1) - 1
	}
	sims = max(sims, least)
	return &waveTests{eps: int64(cfg.Epsilon), perTest: perTest, sims: sims,
		rank: max(int(perTest*float64(sims+1)+1e-9), 1), rng: rand.New(rand.NewPCG(cfg.Seed, 0x6a177e5))}
}

// judge tests one wave, and the re-collision at this wave of the pairs
// that collided at the one before (prev, nil for the first).
func (t *waveTests) judge(w wave, prev *Wave) Wave {
	pts := w.pts
	out := Wave{Attempt: w.attempt, Clients: len(pts), Verdict: analyze.Pass}
	lo, hi, t0 := pts[0].lo, pts[0].hi, pts[0].from
	times := make([]int64, len(pts))
	late := make([]float64, len(pts))
	out.us = make([]float64, len(pts))
	for i, p := range pts {
		lo, hi, t0 = min(lo, p.lo), max(hi, p.hi), min(t0, p.from)
		times[i], late[i] = p.at, float64(p.late)
		out.us[i] = place(p)
	}
	out.RangeLowMS, out.RangeMS = clock.Ms(lo), clock.Ms(hi)
	out.LateP99MS = quantile(late, 0.99) / 1e6
	out.pairs = collidingPairs(pts, func(p point) int64 { return p.at }, func(p point) int { return p.client }, t.eps)
	out.Collisions = len(out.pairs)
	slices.Sort(times)
	out.PeakBin = peakBin(times, t0, t.eps)
	pairs, again := t.followed(prev, pts)

	coll, peak, rc := t.simulate(pts, pairs, t0)
	out.Expected = mean(coll)
	out.CollisionRatio = float64(out.Collisions) / math.Max(out.Expected, 1e-9)
	out.Bound = int(t.bound(coll))
	out.PeakBound = int(t.bound(peak))
	out.KSP = ksUniform(out.us)
	if out.Collisions > out.Bound || out.PeakBin > out.PeakBound {
		out.Verdict = analyze.Fail
	}
	if prev != nil && len(pairs) > 0 {
		prev.recollPairs = len(pairs)
		prev.Recollided = again
		prev.RecollisionRate = float64(again) / float64(len(pairs))
		prev.RecollisionMax = mean(rc) / float64(len(pairs))
		prev.RecollBound = int(t.bound(rc))
		if again > prev.RecollBound {
			prev.Verdict = analyze.Fail
		}
	}
	return out
}

// followed returns the pairs that collided at the wave before (as indices
// in pts) whose clients both retried again, and how many of them collide
// again.
func (t *waveTests) followed(prev *Wave, pts []point) (pairs [][2]int, again int) {
	if prev == nil || len(prev.pairs) == 0 {
		return nil, 0
	}
	at := map[int]int{} // client → index in pts
	for i, p := range pts {
		at[p.client] = i
	}
	for _, pr := range prev.pairs {
		a, okA := at[pr[0]]
		b, okB := at[pr[1]]
		if okA && okB {
			pairs = append(pairs, [2]int{a, b})
			if abs64(pts[a].at-pts[b].at) <= t.eps {
				again++
			}
		}
	}
	return pairs, again
}

// simulate draws t.sims fleets in which every client of pts draws its
// delay independently from its null range after its own previous answer,
// and returns for each the collisions, the busiest ε-bin from t0 and how
// many of pairs collide.
func (t *waveTests) simulate(pts []point, pairs [][2]int, t0 int64) (coll, peak, rc []float64) {
	coll, peak, rc = make([]float64, t.sims), make([]float64, t.sims), make([]float64, t.sims)
	sim := make([]int64, len(pts))
	bins, again := &binner{eps: t.eps}, newPairCounter(pairs, len(pts), t.eps)
	for s := range t.sims {
		for i, p := range pts {
			sim[i] = p.from + int64(p.lo) + int64(t.rng.Float64()*float64(p.hi-p.lo-p.smear))
			if p.smear > 0 {
				sim[i] += int64(t.rng.Float64() * float64(p.smear))
			}
		}
		c, p := bins.figures(sim, t0)
		n := again.count(sim, bins.idx)
		coll[s], peak[s], rc[s] = float64(c), float64(p), float64(n)
	}
	return coll, peak, rc
}

// bound returns the rank-th largest of the simulated figures xs (it sorts
// xs): an observed figure above it is a failure.
func (t *waveTests) bound(xs []float64) float64 {
	slices.Sort(xs)
	return xs[max(len(xs)-t.rank, 0)]
}

// sharedRefusal checks the experiment's premise: every client's first
// attempt was refused together. A host stall longer than the window lets
// the primer's requests age out first, and the clients' first attempts
// are admitted.
func sharedRefusal(in *decode.Input, f *fleetRun) analyze.Check {
	refusedN, let, firstFrom, firstTo := 0, 0, int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range f.fleet {
		a := f.requests[c][1][0].rec
		switch {
		case a.Refused():
			refusedN++
		case a.Admitted():
			let++
		}
		firstFrom, firstTo = min(firstFrom, a.Start), max(firstTo, a.Start)
	}
	var primeFrom, primeTo int64 = math.MaxInt64, math.MinInt64
	for i := range in.Records {
		if r := &in.Records[i]; in.Tables().Labels(r).Stream == method.StreamPrime && in.Tables().Labels(r).Fleet == nil {
			primeFrom, primeTo = min(primeFrom, r.Start), max(primeTo, r.End)
		}
	}
	setup := fmt.Sprintf("first attempts sent over %v", time.Duration(firstTo-firstFrom).Round(time.Millisecond))
	if primeFrom <= primeTo {
		setup = fmt.Sprintf("the primer took %v, then the %s", time.Duration(primeTo-primeFrom).Round(time.Millisecond), setup)
	}
	if faults := len(f.fleet) - refusedN - let; faults > 0 {
		setup += fmt.Sprintf("; %d met a fault instead (5xx or no answer)", faults)
	}
	if let == 0 {
		return check("shared-429", analyze.Pass, "no client's first attempt was admitted: %d of %d were refused together (%s)", refusedN, len(f.fleet), setup)
	}
	return check("shared-429", analyze.Fail, "%d of %d clients' first attempts were admitted (%s): the address's budget came back before they arrived, so the fleet was not driven into a shared 429; the host stalled for longer than the window allows, or something else spent or freed the budget: re-run with a longer --window (the target's)", let, len(f.fleet), setup)
}

// disciplineCounts is how the fleet's clients retried their requests.
type disciplineCounts struct {
	total, attempts, attemptsMax int
	retriedAnswers, overCap      int
	retriedCodes                 map[uint16]int // the answers retried, by status
	// faults: requests that met a retryable fault (no answer, 5xx) other
	// than a 429; faultsDropped: of those, ended on it with attempts left.
	faults, faultsDropped int
	// slowDue: requests after one that ended on repeated 429s; slowOK:
	// of those, sent after at least SlowDown; slowWorst: the shortest
	// pause, pauses: every pause.
	slowDue, slowOK int
	slowWorst       time.Duration
	pauses          []float64
	// perClient: logical requests of each fleet client.
	perClient map[int]int
	// session, origin: clients that sent Mcp-Session-Id or Origin (from
	// the labels of a harness's records).
	session, origin int
	// repeats: requests that repeated one answered with a failure-table
	// answer, from a client that polls (a retry of it, or the next
	// request: the harness cannot tell)
	repeats int
}

// discipline counts every request's retries (phase 4): answers retried,
// requests over the attempt cap, faults not retried, and the pause before
// the next request after one that ended on repeated 429s.
func (f *fleetRun) discipline(cfg Config) disciplineCounts {
	d := disciplineCounts{slowWorst: -1, perClient: map[int]int{}, retriedCodes: map[uint16]int{}}
	for _, c := range f.clients {
		reqs := f.requests[c]
		ids := make([]int, 0, len(reqs))
		for id := range reqs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		d.perClient[c] = len(ids)
		for i, id := range ids {
			as := reqs[id]
			if as[0].tag.Repeat {
				d.repeats++
			}
			d.total++
			d.attempts += len(as)
			d.attemptsMax = max(d.attemptsMax, len(as))
			if len(as) > cfg.Attempts {
				d.overCap++
			}
			faulted := false
			for j := range as {
				code := as[j].rec.Code
				if j+1 < len(as) && !method.Retryable(code) {
					d.retriedAnswers++
					d.retriedCodes[code]++
				}
				faulted = faulted || code == 0 || code >= 500
			}
			if faulted {
				d.faults++
				if last := as[len(as)-1].rec.Code; (last == 0 || last >= 500) && len(as) < cfg.Attempts {
					d.faultsDropped++
				}
			}
			n := len(as)
			if i+1 < len(ids) && n >= 2 && as[n-1].rec.Code == 429 && as[n-2].rec.Code == 429 {
				gap := time.Duration(reqs[ids[i+1]][0].rec.Start - as[n-1].rec.End)
				d.pauses = append(d.pauses, float64(gap))
				if cfg.SlowDown > 0 {
					d.slowDue++
					if d.slowWorst < 0 || gap < d.slowWorst {
						d.slowWorst = gap
					}
					if gap >= cfg.SlowDown*9/10 { // timers may fire a hair early on some clocks
						d.slowOK++
					}
				}
			}
		}
	}
	return d
}

func judgeRetriedAnswers(e *fleetEvidence) (string, string) {
	d := e.discipline
	if d.retriedAnswers > 0 {
		codes := slices.Sorted(maps.Keys(d.retriedCodes))
		var what []string
		for _, c := range codes {
			what = append(what, fmt.Sprintf("%d× a %d", d.retriedCodes[c], c))
		}
		return analyze.Fail, fmt.Sprintf("an answer was retried %d times (%s): only 429, 5xx and transport faults may be (a 4xx, or a JSON-RPC error or tool error on a 200, repeats whatever the client does)", d.retriedAnswers, strings.Join(what, ", "))
	}
	if d.repeats > 0 {
		return analyze.Inconclusive, fmt.Sprintf("%d requests repeated, byte for byte, one answered with a failure-table answer, from clients that poll one request: a retry of the answer cannot be told from the next request, so those copies are inconclusive; make each logical request differ (a query parameter, or an argument of the tool call, naming it) to judge them", d.repeats)
	}
	return analyze.Pass, fmt.Sprintf("no answer was retried (%d requests, %.2f attempts each on average)", d.total, e.rep.AttemptsMean)
}

func judgeAttemptCap(e *fleetEvidence) (string, string) {
	d := e.discipline
	split := ""
	if f := e.f; f.split > 0 {
		split = fmt.Sprintf("; %d chains of one request repeated past the cap by %d clients that poll one request were read as consecutive requests of at most %d attempts, which explains exactly the %d requests each was asked to make (the server cannot tell a poller's next request from a retry: make each logical request differ to judge them apart)",
			f.split, f.splitClients, e.cfg.Attempts, e.cfg.Requests)
	}
	if d.overCap > 0 {
		return analyze.Fail, fmt.Sprintf("%d requests took more than %d attempts (at most %d)%s", d.overCap, e.cfg.Attempts, d.attemptsMax, split)
	}
	return analyze.Pass, fmt.Sprintf("every request stopped within %d attempts (at most %d)%s", e.cfg.Attempts, d.attemptsMax, split)
}

// judgeFaultsRetried reports the requests that met a transport fault or a
// 5xx and were not retried though attempts were left: the contract says
// to retry them, but a client may have reasons (a deadline), so it is
// reported, not failed.
func judgeFaultsRetried(e *fleetEvidence) (string, string) {
	d := e.discipline
	switch {
	case d.faults == 0:
		return analyze.Skip, "no request met a transport fault or a 5xx"
	case d.faultsDropped > 0:
		return analyze.Pass, fmt.Sprintf("reported: %d of %d requests that met a fault (reset, timeout, 5xx) were not retried although attempts were left; the contract says a fault is worth retrying", d.faultsDropped, d.faults)
	}
	return analyze.Pass, fmt.Sprintf("all %d requests that met a fault (reset, timeout, 5xx) were retried", d.faults)
}

func judgeSlowDown(e *fleetEvidence) (string, string) {
	d, cfg := e.discipline, e.cfg
	switch {
	case cfg.SlowDown <= 0 && len(d.pauses) > 0:
		return analyze.Pass, fmt.Sprintf("reported: after a request that ended on repeated 429s, clients paused %v (median; shortest %v) before their next request", time.Duration(quantile(slices.Clone(d.pauses), 0.5)).Round(time.Millisecond), time.Duration(slices.Min(d.pauses)).Round(time.Millisecond))
	case cfg.SlowDown <= 0:
		return analyze.Skip, "no slow-down pause configured to check, and no request ended on repeated 429s"
	case d.slowDue == 0:
		return analyze.Skip, "no client ended a request on repeated 429s and then sent another"
	case d.slowOK < d.slowDue:
		return analyze.Fail, fmt.Sprintf("%d of %d clients sent their next request after repeated 429s without slowing down (shortest pause %v, want %v)", d.slowDue-d.slowOK, d.slowDue, d.slowWorst.Round(time.Millisecond), cfg.SlowDown)
	}
	return analyze.Pass, fmt.Sprintf("all %d clients that met repeated 429s paused at least %v before their next request (shortest %v)", d.slowDue, cfg.SlowDown, d.slowWorst.Round(time.Millisecond))
}

// judgeClients: a run where a client sent fewer logical requests than
// asked, or none, cannot show how it retries: inconclusive, naming which.
func judgeClients(e *fleetEvidence) (string, string) {
	cfg := e.cfg
	if cfg.Clients <= 0 && cfg.Requests <= 0 {
		return "", "" // a fleet of this tool's own clients: nothing to count
	}
	var short []string
	missing := 0
	for c := 1; c <= cfg.Clients; c++ {
		n, ok := e.discipline.perClient[c]
		switch {
		case !ok:
			missing++
		case n < cfg.Requests && len(short) < 5:
			short = append(short, fmt.Sprintf("client %d sent %d of %d", c, n, cfg.Requests))
		case n < cfg.Requests:
			short = append(short, "…")
		}
	}
	switch {
	case missing == cfg.Clients:
		return analyze.Inconclusive, fmt.Sprintf("none of the %d clients sent a request", cfg.Clients)
	case missing > 0 || len(short) > 0:
		what := strings.Join(short, ", ")
		if missing > 0 {
			what = strings.TrimPrefix(fmt.Sprintf("%s, %d clients sent nothing", what, missing), ", ")
		}
		return analyze.Inconclusive, fmt.Sprintf("clients made fewer requests than asked (%s): a client that stops early shows nothing of how it retries", what)
	}
	return analyze.Pass, fmt.Sprintf("all %d clients made the %d requests asked", cfg.Clients, cfg.Requests)
}

// judgeStall: a target that stalled while the clients retried moved their
// arrival times by more than ε, so the timing figures are not the clients'.
func judgeStall(e *fleetEvidence) (string, string) {
	switch stall, eps := e.cfg.Stall, e.cfg.Epsilon; {
	case stall <= 0:
		return "", "" // not measured (the target is not in this process)
	case stall > eps:
		return analyze.Inconclusive, fmt.Sprintf("the target stalled for %v while the clients retried, more than ε (%v): arrival times are the host's, not the clients' (start fewer clients, or on a quieter host)", stall.Round(time.Millisecond), eps)
	default:
		return analyze.Pass, fmt.Sprintf("the target kept time within %v (ε %v)", stall.Round(100*time.Microsecond), eps)
	}
}

// epsilonFromRelease returns the collision distance for a fleet judged
// from the server's records (client programs, whose drawn delays are
// unknown): twice the spread over which the fleet's shared 429s were
// written, at least 50 ms, so that clients answered together and retrying
// after the same delay count as colliding however their host scheduled
// them; and how it was reached.
func (f *fleetRun) epsilonFromRelease() (time.Duration, string) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range f.fleet {
		end := f.requests[c][1][0].rec.End
		lo, hi = min(lo, end), max(hi, end)
	}
	spread := time.Duration(max(hi-lo, 0))
	eps := max(50*time.Millisecond, 2*spread)
	return eps, fmt.Sprintf("from the data: the shared 429s were written over %v; ε is twice that, at least 50ms", spread.Round(time.Microsecond))
}
