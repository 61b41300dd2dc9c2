package analyze

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// JitterConfig is what a fleet was asked to do, and how strictly to judge it.
type JitterConfig struct {
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
	// (0: 0.01): each of its m tests is held to Alpha/m (Bonferroni).
	Alpha float64
	// Sims is the number of simulated fleets each wave's bounds come
	// from (0: 4·⌈m/Alpha⌉ − 1, so that a bound is the 4th largest
	// simulated figure); never fewer than ⌈m/Alpha⌉ − 1, the fewest with
	// which a test can fail at all. Seed seeds them.
	Sims int
	Seed uint64
}

// withDefaults returns cfg with its zero fields set (Sims is set once the
// number of tests is known).
func (cfg JitterConfig) withDefaults() JitterConfig {
	if cfg.Epsilon <= 0 {
		cfg.Epsilon = cfg.Base / 50
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 4
	}
	if cfg.Alpha <= 0 {
		cfg.Alpha = 0.01
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

// JitterReport is the verdict on a fleet (fleet --json).
type JitterReport struct {
	Verdict         string  `json:"verdict"`
	CollisionRatio  float64 `json:"collision_ratio"`
	RecollisionRate float64 `json:"recollision_rate"`
	KSP             float64 `json:"ks_p"`
	EpsilonMS       float64 `json:"epsilon_ms"`
	Alpha           float64 `json:"alpha"`
	// Null is the strategy whose independent draws the waves were judged
	// against; Sims the number of simulated fleets per wave.
	Null         string  `json:"null"`
	Sims         int     `json:"sims"`
	Clients      int     `json:"clients"`
	Requests     int     `json:"requests"`
	AttemptsMean float64 `json:"attempts_mean"`
	AttemptsMax  int     `json:"attempts_max"`
	Waves        []Wave  `json:"waves"`
	Checks       []Check `json:"checks"`
}

// add appends a check; a failed one fails the report.
func (rep *JitterReport) add(c Check) {
	rep.Checks = append(rep.Checks, c)
	if c.Verdict == Fail {
		rep.Verdict = Fail
	}
}

// check builds a check with its evidence formatted.
func check(name, verdict, format string, args ...any) Check {
	return Check{Name: name, Verdict: verdict, Detail: fmt.Sprintf(format, args...)}
}

// Jitter judges the retry timing of a fleet's results, in four phases:
// it groups the attempts by client and request; lays the first request's
// retries out in attempt waves on each client's own timeline; tests every
// wave against simulated fleets whose clients draw independently by the
// claimed strategy (collisions, the busiest ε-bin, the re-collision of the
// pairs that collided at the wave before, and a Kolmogorov–Smirnov test of
// the delays over their ranges); then checks the shared 429 the fleet
// started from and the retry discipline (attempts per request, retried
// answers, the attempt cap, the slow-down). The timing tests together
// hold a false-alarm rate of at most Alpha.
func Jitter(in *archive.Input, cfg JitterConfig) *JitterReport {
	cfg = cfg.withDefaults()
	rep := &JitterReport{Verdict: Pass, EpsilonMS: ms(cfg.Epsilon), Alpha: cfg.Alpha, Null: nullOf(cfg.Strategy)}
	f := groupFleet(in)
	if len(f.clients) == 0 {
		rep.add(check("fleet", Fail, "no fleet results (labels with client= and attempt=)"))
		return rep
	}
	rep.Clients = len(f.fleet)
	jitter := judgeWaves(rep, f.waves(cfg), cfg)
	rep.add(sharedRefusal(in, f))
	rep.add(jitter)
	discipline(rep, f, cfg)
	return rep
}

// fleetAttempt is one attempt, in a client's request.
type fleetAttempt struct {
	rec *archive.Record
	tag *archive.FleetTag
}

// fleetRun is a fleet's results grouped by client and request.
type fleetRun struct {
	requests map[int]map[int][]fleetAttempt // client → request → attempts in order
	clients  []int                          // every client, ascending
	fleet    []int                          // the fleet proper: not the failure-table probes
}

// groupFleet groups the fleet results of in (phase 1).
func groupFleet(in *archive.Input) *fleetRun {
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
		if as := f.requests[c][1]; len(as) > 0 && in.Tables().Labels(as[0].rec).Stream == archive.StreamFleet {
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
	late     time.Duration // the gap observed minus the delay drawn
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
func (f *fleetRun) waves(cfg JitterConfig) []wave {
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
	timeline := map[int][]int64{}      // when each attempt was sent
	drawn := map[int][]time.Duration{} // the delay before each attempt
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
		if len(w.pts) >= 2 {
			out = append(out, w)
		}
	}
	return out
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
func judgeWaves(rep *JitterReport, waves []wave, cfg JitterConfig) Check {
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
		if w.Verdict == Fail {
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
		return check("jitter", Fail, "no client retried, so the fleet shows nothing about its jitter")
	case len(failed) > 0 || ksFailed:
		what := "the delays are not distributed as drawn by independent " + null
		if len(failed) > 0 {
			what = "waves " + strings.Join(failed, ", ") + " broke the bounds of independent " + null
		}
		return check("jitter", Fail, "%s (collision ratio %.2f, re-collision %.0f%% against about %.0f%% expected, KS p %.2g; ε %v, false-alarm rate %.2g over %d tests, %d simulated fleets)",
			what, rep.CollisionRatio, 100*rep.RecollisionRate, 100*sumRecollExp/float64(max(sumPairs, 1)), rep.KSP, cfg.Epsilon, cfg.Alpha, tests, t.sims)
	default:
		return check("jitter", Pass, "every wave is within the bounds of independent %s (collision ratio %.2f, re-collision %.0f%%, KS p %.2g; ε %v, false-alarm rate %.2g over %d tests, %d simulated fleets)",
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
func newWaveTests(cfg JitterConfig, tests int) *waveTests {
	tests = max(tests, 1)
	perTest := cfg.Alpha / float64(tests)
	least := int(math.Ceil(float64(tests)/cfg.Alpha-1e-9)) - 1
	sims := cfg.Sims
	if sims <= 0 {
		sims = 4*(least+1) - 1
	}
	sims = max(sims, least)
	return &waveTests{eps: int64(cfg.Epsilon), perTest: perTest, sims: sims,
		rank: max(int(perTest*float64(sims+1)+1e-9), 1), rng: rand.New(rand.NewPCG(cfg.Seed, 0x6a177e5))}
}

// judge tests one wave, and the re-collision at this wave of the pairs
// that collided at the one before (prev, nil for the first).
func (t *waveTests) judge(w wave, prev *Wave) Wave {
	pts := w.pts
	out := Wave{Attempt: w.attempt, Clients: len(pts), Verdict: Pass}
	lo, hi, t0 := pts[0].lo, pts[0].hi, pts[0].from
	times := make([]int64, len(pts))
	late := make([]float64, len(pts))
	out.us = make([]float64, len(pts))
	for i, p := range pts {
		lo, hi, t0 = min(lo, p.lo), max(hi, p.hi), min(t0, p.from)
		times[i], late[i] = p.at, float64(p.late)
		out.us[i] = place(p)
	}
	out.RangeLowMS, out.RangeMS = ms(lo), ms(hi)
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
		out.Verdict = Fail
	}
	if prev != nil && len(pairs) > 0 {
		prev.recollPairs = len(pairs)
		prev.Recollided = again
		prev.RecollisionRate = float64(again) / float64(len(pairs))
		prev.RecollisionMax = mean(rc) / float64(len(pairs))
		prev.RecollBound = int(t.bound(rc))
		if again > prev.RecollBound {
			prev.Verdict = Fail
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
	bins := &binner{eps: t.eps}
	for s := range t.sims {
		for i, p := range pts {
			sim[i] = p.from + int64(p.lo) + int64(t.rng.Float64()*float64(p.hi-p.lo))
		}
		n := 0
		for _, pr := range pairs {
			if abs64(sim[pr[0]]-sim[pr[1]]) <= t.eps {
				n++
			}
		}
		c, p := bins.figures(sim, t0)
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
func sharedRefusal(in *archive.Input, f *fleetRun) Check {
	refusedN, let, firstFrom, firstTo := 0, 0, int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range f.fleet {
		a := f.requests[c][1][0].rec
		switch {
		case refused(a):
			refusedN++
		case admitted(a):
			let++
		}
		firstFrom, firstTo = min(firstFrom, a.Start), max(firstTo, a.Start)
	}
	var primeFrom, primeTo int64 = math.MaxInt64, math.MinInt64
	for i := range in.Records {
		if r := &in.Records[i]; in.Tables().Labels(r).Stream == archive.StreamPrime && in.Tables().Labels(r).Fleet == nil {
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
		return check("shared-429", Pass, "no client's first attempt was admitted: %d of %d were refused together (%s)", refusedN, len(f.fleet), setup)
	}
	return check("shared-429", Fail, "%d of %d clients' first attempts were admitted (%s): the address's budget came back before they arrived, so the fleet was not driven into a shared 429; the host stalled for longer than the window allows, or something else spent or freed the budget: re-run with a longer --window (the target's)", let, len(f.fleet), setup)
}

// discipline checks every request's retries (phase 4): no answer
// retried, no request over the attempt cap, and a pause of at least
// SlowDown before the next request after one that ended on repeated 429s.
func discipline(rep *JitterReport, f *fleetRun, cfg JitterConfig) {
	var retriedAnswers, overCap, total, attempts int
	var slowDue, slowOK int
	var slowWorst time.Duration = -1
	for _, c := range f.clients {
		reqs := f.requests[c]
		ids := make([]int, 0, len(reqs))
		for id := range reqs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for i, id := range ids {
			as := reqs[id]
			total++
			attempts += len(as)
			rep.AttemptsMax = max(rep.AttemptsMax, len(as))
			if len(as) > cfg.Attempts {
				overCap++
			}
			for j := 0; j+1 < len(as); j++ {
				if !Retryable(as[j].rec.Code) {
					retriedAnswers++
				}
			}
			n := len(as)
			if cfg.SlowDown > 0 && i+1 < len(ids) && n >= 2 && as[n-1].rec.Code == 429 && as[n-2].rec.Code == 429 {
				slowDue++
				gap := time.Duration(reqs[ids[i+1]][0].rec.Start - as[n-1].rec.End)
				if slowWorst < 0 || gap < slowWorst {
					slowWorst = gap
				}
				if gap >= cfg.SlowDown*9/10 { // timers may fire a hair early on some clocks
					slowOK++
				}
			}
		}
	}
	rep.Requests = total
	rep.AttemptsMean = float64(attempts) / float64(max(total, 1))
	if retriedAnswers > 0 {
		rep.add(check("retry-answers", Fail, "an answer was retried %d times: only 429, 5xx and transport faults may be", retriedAnswers))
	} else {
		rep.add(check("retry-answers", Pass, "no answer was retried (%d requests, %.2f attempts each on average)", total, rep.AttemptsMean))
	}
	if overCap > 0 {
		rep.add(check("attempt-cap", Fail, "%d requests took more than %d attempts (at most %d)", overCap, cfg.Attempts, rep.AttemptsMax))
	} else {
		rep.add(check("attempt-cap", Pass, "every request stopped within %d attempts (at most %d)", cfg.Attempts, rep.AttemptsMax))
	}
	switch {
	case cfg.SlowDown <= 0:
		rep.add(check("slow-down", Skip, "no slow-down pause configured to check"))
	case slowDue == 0:
		rep.add(check("slow-down", Skip, "no client ended a request on repeated 429s and then sent another"))
	case slowOK < slowDue:
		rep.add(check("slow-down", Fail, "%d of %d clients sent their next request after repeated 429s without slowing down (shortest pause %v, want %v)", slowDue-slowOK, slowDue, slowWorst.Round(time.Millisecond), cfg.SlowDown))
	default:
		rep.add(check("slow-down", Pass, "all %d clients that met repeated 429s paused at least %v before their next request (shortest %v)", slowDue, cfg.SlowDown, slowWorst.Round(time.Millisecond)))
	}
}
