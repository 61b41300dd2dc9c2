package analyze

import (
	"github.com/connectbyjbrh/ratecheck/archive"

	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// JitterConfig is what a fleet was asked to do, and how strictly to judge it.
type JitterConfig struct {
	// Base and Cap are the backoff's: retry k (from 0) draws from
	// [0, min(Cap, Base·2^k)] under full jitter, the range every strategy
	// is judged against.
	Base, Cap time.Duration
	// Epsilon is the distance that counts as a collision (0: Base/50).
	Epsilon time.Duration
	// Attempts is the cap on attempts per request (0: 4).
	Attempts int
	// SlowDown is the least pause a client must take before its next
	// request after one ended on repeated 429s (0: not checked).
	SlowDown time.Duration
	// Uniform says the clients claim full jitter, so their delays must be
	// uniform over the wave's range (a KS test); for other strategies the
	// KS p-value is reported, not judged.
	Uniform bool
	// Alpha is the significance of all the run's tests together (0: 0.01).
	Alpha float64
	// Sims is the number of simulated independent fleets the bounds come
	// from (0: 2000); Seed seeds them.
	Sims int
	Seed uint64
}

// Wave is the figures of one attempt wave: every client's attempt N of its
// first request.
type Wave struct {
	Attempt         int     `json:"attempt"`
	Clients         int     `json:"clients"`
	RangeMS         float64 `json:"range_ms"`
	Collisions      int     `json:"collisions"`
	Expected        float64 `json:"expected"`
	Bound           int     `json:"bound"`
	CollisionRatio  float64 `json:"collision_ratio"`
	Recollided      int     `json:"recollided"`
	RecollisionRate float64 `json:"recollision_rate"`
	RecollisionMax  float64 `json:"recollision_expected"`
	RecollBound     int     `json:"recollision_bound"`
	KSP             float64 `json:"ks_p"`
	PeakBin         int     `json:"peak_bin"`
	PeakBound       int     `json:"peak_bound"`
	LateP99MS       float64 `json:"late_p99_ms"`
	Verdict         string  `json:"verdict"`

	pairs [][2]int // colliding client pairs, for the next wave
}

// JitterReport is the verdict on a fleet (fleet --json).
type JitterReport struct {
	Verdict         string  `json:"verdict"`
	CollisionRatio  float64 `json:"collision_ratio"`
	RecollisionRate float64 `json:"recollision_rate"`
	KSP             float64 `json:"ks_p"`
	EpsilonMS       float64 `json:"epsilon_ms"`
	Alpha           float64 `json:"alpha"`
	Clients         int     `json:"clients"`
	Requests        int     `json:"requests"`
	AttemptsMean    float64 `json:"attempts_mean"`
	AttemptsMax     int     `json:"attempts_max"`
	Waves           []Wave  `json:"waves"`
	Checks          []Check `json:"checks"`
}

// fleetAttempt is one attempt, in a client's request.
type fleetAttempt struct {
	rec *archive.Record
	tag *archive.FleetTag
}

// Jitter judges the retry timing of a fleet's results (docs/method.md, Fleet statistics):
// per wave the collision count against simulated independent uniform
// draws over the wave's range from where each client stood, the
// re-collision of pairs that collided at the wave before, a
// Kolmogorov–Smirnov test of the delays over their range, the peak ε-bin
// against a Poisson bound; then attempts per request, retried answers, the
// attempt cap and the slow-down. Bounds hold the run's tests together to
// significance Alpha (Bonferroni). Times are on each client's own
// timeline (its first send, then each attempt's latency plus the delay it
// drew), so a machine that runs timers late is reported (late_p99_ms), not
// blamed on the clients.
func Jitter(in *archive.Input, cfg JitterConfig) *JitterReport {
	if cfg.Epsilon <= 0 {
		cfg.Epsilon = cfg.Base / 50
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 4
	}
	if cfg.Alpha <= 0 {
		cfg.Alpha = 0.01
	}
	if cfg.Sims <= 0 {
		cfg.Sims = 2000
	}
	rep := &JitterReport{Verdict: Pass, EpsilonMS: ms(cfg.Epsilon), Alpha: cfg.Alpha}
	// requests[client][request] = attempts in order
	requests := map[int]map[int][]fleetAttempt{}
	for i := range in.Records {
		r := &in.Records[i]
		tag := in.Tables().Labels(r).Fleet
		if tag == nil {
			continue
		}
		c := requests[tag.Client]
		if c == nil {
			c = map[int][]fleetAttempt{}
			requests[tag.Client] = c
		}
		c[tag.Request] = append(c[tag.Request], fleetAttempt{r, tag})
	}
	clients := make([]int, 0, len(requests))
	for c, reqs := range requests {
		clients = append(clients, c)
		for _, as := range reqs {
			slices.SortFunc(as, func(a, b fleetAttempt) int { return cmp.Compare(a.tag.Attempt, b.tag.Attempt) })
		}
	}
	sort.Ints(clients)
	add := func(name, verdict, format string, args ...any) {
		rep.Checks = append(rep.Checks, Check{Name: name, Verdict: verdict, Detail: fmt.Sprintf(format, args...)})
		if verdict == Fail {
			rep.Verdict = Fail
		}
	}
	if len(clients) == 0 {
		rep.Verdict = Fail
		add("fleet", Fail, "no fleet results (labels with client= and attempt=)")
		return rep
	}

	// Waves of the first request: attempt n+1 of every client that made it.
	maxAttempt := 0
	var fleetClients []int // the fleet proper, not the failure-table probes
	for _, c := range clients {
		if as := requests[c][1]; len(as) > 0 && in.Tables().Labels(as[0].rec).Stream == archive.StreamFleet {
			fleetClients = append(fleetClients, c)
			maxAttempt = max(maxAttempt, len(as))
		}
	}
	rep.Clients = len(fleetClients)
	type point struct {
		client          int
		prevEnd, sched  int64
		delay, observed time.Duration
	}
	var waves [][]point
	// Each client's attempts on its own timeline: attempt 1 when it went
	// out, then each retry its drawn delay plus the wave's median latency
	// after the one before. This judges the clients' schedule, not the
	// machine: timers run late, and the latency of each retry depends on
	// when the late timer let it out, so observed times (or each retry's
	// own latency) would split lockstep clients apart and charge the
	// host's noise to them. Without delay labels (plain Vegeta results)
	// the observed times are used.
	medLat := make([]int64, maxAttempt)
	for n := range medLat {
		var lat []float64
		for _, c := range fleetClients {
			if as := requests[c][1]; len(as) > n {
				lat = append(lat, float64(as[n].rec.End-as[n].rec.Start))
			}
		}
		medLat[n] = int64(quantile(lat, 0.5))
	}
	virtual := map[int][]int64{}
	for _, c := range fleetClients {
		as := requests[c][1]
		v := make([]int64, len(as))
		v[0] = as[0].rec.Start
		for n := 1; n < len(as); n++ {
			if d := as[n].tag.Delay; d >= 0 {
				v[n] = v[n-1] + medLat[n-1] + int64(d)
			} else {
				v[n] = as[n].rec.Start
			}
		}
		virtual[c] = v
	}
	for n := 2; n <= maxAttempt; n++ {
		var pts []point
		for _, c := range fleetClients {
			as := requests[c][1]
			if len(as) < n {
				continue
			}
			prev, cur := as[n-2].rec, as[n-1]
			observed := time.Duration(cur.rec.Start - prev.End)
			v := virtual[c]
			d := observed
			if cur.tag.Delay >= 0 {
				d = cur.tag.Delay
			}
			pts = append(pts, point{client: c, prevEnd: v[n-1] - int64(d), sched: v[n-1], delay: d, observed: observed})
		}
		if len(pts) >= 2 {
			waves = append(waves, pts)
		}
	}
	tests := 0
	for i := range waves {
		tests += 2 // collisions, peak
		if cfg.Uniform {
			tests++
		}
		if i+1 < len(waves) {
			tests++ // re-collision
		}
	}
	perTest := cfg.Alpha / float64(max(tests, 1))
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6a177e5))
	eps := int64(cfg.Epsilon)
	var allU []float64
	var sumObs, sumExp float64
	var sumRecoll, sumPairs int
	var sumRecollExp float64
	var prevWave *Wave
	for wi, pts := range waves {
		k := wi // retry index from 0
		R := ceiling(cfg.Base, cfg.Cap, k)
		w := Wave{Attempt: wi + 2, Clients: len(pts), RangeMS: ms(R), Verdict: Pass}
		times := make([]int64, len(pts))
		var late []float64
		for i, p := range pts {
			times[i] = p.sched
			late = append(late, float64(p.observed-p.delay))
			allU = append(allU, float64(p.delay)/float64(R))
		}
		w.LateP99MS = quantile(late, 0.99) / 1e6
		w.pairs = collidingPairs(pts, func(p point) int64 { return p.sched }, func(p point) int { return p.client }, eps)
		w.Collisions = len(w.pairs)
		// The null: each client draws uniformly over [0, R] from its own
		// previous answer.
		sim := make([]int64, len(pts))
		counts := make([]float64, cfg.Sims)
		for s := range cfg.Sims {
			for i, p := range pts {
				sim[i] = p.prevEnd + int64(rng.Float64()*float64(R))
			}
			counts[s] = float64(countCollisions(sim, eps))
		}
		w.Expected = mean(counts)
		w.Bound = int(quantile(counts, 1-perTest))
		w.CollisionRatio = float64(w.Collisions) / math.Max(w.Expected, 1e-9)
		sumObs += float64(w.Collisions)
		sumExp += w.Expected
		if w.Collisions > w.Bound {
			w.Verdict = Fail
		}
		// Uniformity of this wave's delays over [0, R].
		us := make([]float64, len(pts))
		for i, p := range pts {
			us[i] = float64(p.delay) / float64(R)
		}
		w.KSP = ksUniform(us)
		if cfg.Uniform && w.KSP < perTest {
			w.Verdict = Fail
		}
		// Peak ε-bin against a Poisson bound: bins of width ε fixed from
		// the wave's earliest previous answer; bin b expects λ_b, the sum
		// over clients of the share of their range it covers, and the
		// bound is the least count all bins together exceed with
		// probability at most the test's share of Alpha.
		t0 := pts[0].prevEnd
		for _, p := range pts {
			t0 = min(t0, p.prevEnd)
		}
		w.PeakBin = peakBin(times, t0, eps)
		w.PeakBound = poissonBound(binMeans(pts, func(p point) int64 { return p.prevEnd }, t0, int64(R), eps), perTest)
		if w.PeakBin > w.PeakBound {
			w.Verdict = Fail
		}
		// Re-collision of the pairs that collided at the wave before.
		if prevWave != nil && len(prevWave.pairs) > 0 {
			at := map[int]int{} // client → index in pts
			for i, p := range pts {
				at[p.client] = i
			}
			var pairs [][2]int // indices in pts
			for _, pr := range prevWave.pairs {
				a, okA := at[pr[0]]
				b, okB := at[pr[1]]
				if okA && okB {
					pairs = append(pairs, [2]int{a, b})
				}
			}
			again := 0
			for _, pr := range pairs {
				if abs64(pts[pr[0]].sched-pts[pr[1]].sched) <= eps {
					again++
				}
			}
			rc := make([]float64, cfg.Sims)
			draw := make([]int64, len(pts))
			for s := range cfg.Sims {
				for i, p := range pts {
					draw[i] = p.prevEnd + int64(rng.Float64()*float64(R))
				}
				n := 0
				for _, pr := range pairs {
					if abs64(draw[pr[0]]-draw[pr[1]]) <= eps {
						n++
					}
				}
				rc[s] = float64(n)
			}
			prevWave.Recollided = again
			prevWave.RecollisionRate = float64(again) / float64(max(len(pairs), 1))
			prevWave.RecollisionMax = mean(rc) / float64(max(len(pairs), 1))
			prevWave.RecollBound = int(quantile(rc, 1-perTest))
			if again > prevWave.RecollBound {
				prevWave.Verdict = Fail
			}
			sumRecoll += again
			sumPairs += len(pairs)
			sumRecollExp += mean(rc)
		}
		rep.Waves = append(rep.Waves, w)
		prevWave = &rep.Waves[len(rep.Waves)-1]
	}
	rep.CollisionRatio = sumObs / math.Max(sumExp, 1e-9)
	rep.RecollisionRate = float64(sumRecoll) / float64(max(sumPairs, 1))
	rep.KSP = ksUniform(allU)

	var failedWaves []string
	for _, w := range rep.Waves {
		if w.Verdict == Fail {
			failedWaves = append(failedWaves, strconv.Itoa(w.Attempt))
		}
	}
	// The experiment's premise: every client's first attempt was refused
	// together. A host stall longer than the window lets the primer's
	// requests age out first, and the clients' first attempts are admitted.
	refusedN, let, firstFrom, firstTo := 0, 0, int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range fleetClients {
		a := requests[c][1][0].rec
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
	if faults := len(fleetClients) - refusedN - let; faults > 0 {
		setup += fmt.Sprintf("; %d met a fault instead (5xx or no answer)", faults)
	}
	if let == 0 {
		add("shared-429", Pass, "no client's first attempt was admitted: %d of %d were refused together (%s)", refusedN, len(fleetClients), setup)
	} else {
		add("shared-429", Fail, "%d of %d clients' first attempts were admitted (%s): the address's budget came back before they arrived, so the fleet was not driven into a shared 429; the host stalled for longer than the window allows, or something else spent or freed the budget: re-run with a longer --window (the target's)", let, len(fleetClients), setup)
	}

	switch {
	case len(rep.Waves) == 0:
		add("jitter", Fail, "no client retried, so the fleet shows nothing about its jitter")
	case len(failedWaves) > 0:
		add("jitter", Fail, "waves %s broke the bounds of independent jitter (collision ratio %.2f, re-collision %.0f%% against about %.0f%% expected, KS p %.2g; ε %v, significance %.2g over %d tests)",
			strings.Join(failedWaves, ", "), rep.CollisionRatio, 100*rep.RecollisionRate, 100*sumRecollExp/float64(max(sumPairs, 1)), rep.KSP, cfg.Epsilon, cfg.Alpha, tests)
	default:
		add("jitter", Pass, "every wave is within the bounds of independent jitter (collision ratio %.2f, re-collision %.0f%%, KS p %.2g; ε %v, significance %.2g over %d tests)",
			rep.CollisionRatio, 100*rep.RecollisionRate, rep.KSP, cfg.Epsilon, cfg.Alpha, tests)
	}

	// Retry discipline, attempt cap and slow-down over every request.
	var retriedAnswers, overCap, total, attempts int
	var slowDue, slowOK int
	var slowWorst time.Duration = -1
	for _, c := range clients {
		reqs := requests[c]
		ids := make([]int, 0, len(reqs))
		for id := range reqs {
			ids = append(ids, id)
		}
		sort.Ints(ids)
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
		add("retry-answers", Fail, "an answer was retried %d times: only 429, 5xx and transport faults may be", retriedAnswers)
	} else {
		add("retry-answers", Pass, "no answer was retried (%d requests, %.2f attempts each on average)", total, rep.AttemptsMean)
	}
	if overCap > 0 {
		add("attempt-cap", Fail, "%d requests took more than %d attempts (at most %d)", overCap, cfg.Attempts, rep.AttemptsMax)
	} else {
		add("attempt-cap", Pass, "every request stopped within %d attempts (at most %d)", cfg.Attempts, rep.AttemptsMax)
	}
	switch {
	case cfg.SlowDown <= 0:
		add("slow-down", Skip, "no slow-down pause configured to check")
	case slowDue == 0:
		add("slow-down", Skip, "no client ended a request on repeated 429s and then sent another")
	case slowOK < slowDue:
		add("slow-down", Fail, "%d of %d clients sent their next request after repeated 429s without slowing down (shortest pause %v, want %v)", slowDue-slowOK, slowDue, slowWorst.Round(time.Millisecond), cfg.SlowDown)
	default:
		add("slow-down", Pass, "all %d clients that met repeated 429s paused at least %v before their next request (shortest %v)", slowDue, cfg.SlowDown, slowWorst.Round(time.Millisecond))
	}
	return rep
}

// ceiling returns min(cap, base·2^k), the full-jitter range of retry k.
func ceiling(base, cap time.Duration, k int) time.Duration {
	d := base
	for i := 0; i < k && d < cap; i++ {
		d *= 2
	}
	return min(d, cap)
}

// collidingPairs returns the pairs of distinct clients whose times are
// within eps of each other.
func collidingPairs[P any](pts []P, at func(P) int64, id func(P) int, eps int64) [][2]int {
	s := slices.Clone(pts)
	slices.SortFunc(s, func(a, b P) int { return cmp.Compare(at(a), at(b)) })
	var out [][2]int
	for i := range s {
		for j := i + 1; j < len(s) && at(s[j])-at(s[i]) <= eps; j++ {
			a, b := id(s[i]), id(s[j])
			if a != b {
				out = append(out, [2]int{min(a, b), max(a, b)})
			}
		}
	}
	return out
}

// countCollisions counts the pairs of times within eps of each other; it
// sorts ts.
func countCollisions(ts []int64, eps int64) int {
	slices.Sort(ts)
	n, j := 0, 0
	for i := range ts {
		for ts[i]-ts[j] > eps {
			j++
		}
		n += i - j
	}
	return n
}

// peakBin returns the most times in one bin of width eps from t0.
func peakBin(ts []int64, t0, eps int64) int {
	count := map[int64]int{}
	peak := 0
	for _, t := range ts {
		b := max(t-t0, 0) / eps
		count[b]++
		peak = max(peak, count[b])
	}
	return peak
}

// binMeans returns, per bin of width eps from t0, how many of pts are
// expected in it when each draws uniformly over [from(p), from(p)+r].
func binMeans[P any](pts []P, from func(P) int64, t0, r, eps int64) []float64 {
	var means []float64
	for _, p := range pts {
		lo, hi := from(p)-t0, from(p)-t0+r
		for b := lo / eps; b*eps < hi; b++ {
			for int(b) >= len(means) {
				means = append(means, 0)
			}
			overlap := min(hi, (b+1)*eps) - max(lo, b*eps)
			means[b] += float64(overlap) / float64(r)
		}
	}
	return means
}

// poissonBound returns the least x such that bins with Poisson counts of
// the given means exceed x anywhere with probability at most alpha (a
// union bound over the bins).
func poissonBound(means []float64, alpha float64) int {
	for x := 0; x < 1<<16; x++ {
		p := 0.0
		for _, l := range means {
			p += poissonTail(l, x)
		}
		if p <= alpha {
			return x
		}
	}
	return 1 << 16
}

// poissonTail returns P(Poisson(lambda) > x).
func poissonTail(lambda float64, x int) float64 {
	if lambda <= 0 {
		return 0
	}
	p := math.Exp(-lambda)
	cdf := p
	for k := 1; k <= x; k++ {
		p *= lambda / float64(k)
		cdf += p
	}
	return max(0, 1-cdf)
}

// ksUniform returns the p-value of a Kolmogorov–Smirnov test of us against
// U(0, 1) (asymptotic distribution with Stephens' small-sample correction).
func ksUniform(us []float64) float64 {
	n := len(us)
	if n == 0 {
		return 1
	}
	s := slices.Clone(us)
	slices.Sort(s)
	d := 0.0
	for i, u := range s {
		u = min(max(u, 0), 1)
		d = max(d, float64(i+1)/float64(n)-u, u-float64(i)/float64(n))
	}
	sq := math.Sqrt(float64(n))
	return kolmogorovQ((sq + 0.12 + 0.11/sq) * d)
}

// kolmogorovQ is the complementary Kolmogorov distribution:
// 2 Σ (-1)^(j-1) exp(-2 j² λ²).
func kolmogorovQ(lambda float64) float64 {
	if lambda < 0.2 {
		return 1
	}
	sum, sign := 0.0, 1.0
	for j := 1; j <= 100; j++ {
		term := sign * 2 * math.Exp(-2*float64(j*j)*lambda*lambda)
		sum += term
		if math.Abs(term) < 1e-12 {
			break
		}
		sign = -sign
	}
	return min(max(sum, 0), 1)
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// quantile returns the q-quantile of xs (nearest rank, upper); it sorts xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
