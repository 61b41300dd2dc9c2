package jitter

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// This file holds the tests of the waves: each wave's collisions, busiest
// ε-bin and re-collisions held to bounds simulated from independent draws
// of the claimed strategy, sharing one false-alarm rate.

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
	case !labeled && !lockstepFails(rep.Waves):
		// Without the delays the clients drew there is no KS test, and
		// where independent jitter itself collides in full at ε, the
		// bounds sit at the most a fleet can collide: a fleet in
		// lockstep would pass them too.
		return check("jitter", analyze.Inconclusive, "ε %v is as wide as the fleet's retries: independent %s collides as fully as clients in lockstep would (collision ratio %.2f, re-collision %.0f%%), so no fleet could fail here; give --epsilon, or run where the shared 429s are written closer together (a busy host spreads them)",
			cfg.Epsilon, null, rep.CollisionRatio, 100*rep.RecollisionRate)
	case len(failed) > 0 && !ksFailed && cfg.Stall > cfg.Epsilon:
		// Arrival times are the host's where the target stalled longer
		// than ε: a stall gathers the arrivals it held up as re-collisions
		// do, so the waves' bounds do not prove the clients at fault (a
		// suite run's Node full-jitter fleet: the target stalled 476 ms,
		// and wave 2 broke its bounds at collision ratio 2.57). The
		// delays the clients drew, untouched by the host, passed.
		return check("jitter", analyze.Inconclusive, "waves %s broke the bounds of independent %s (collision ratio %.2f, re-collision %.0f%%), but the target stalled for %v while the clients retried, more than ε (%v): a stall gathers arrivals as re-collisions do, so this does not prove the clients at fault",
			strings.Join(failed, ", "), null, rep.CollisionRatio, 100*rep.RecollisionRate, cfg.Stall.Round(time.Millisecond), cfg.Epsilon)
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

// lockstepFails reports whether a fleet retrying in lockstep (every
// client of a wave at once: every pair colliding, all in one ε-bin, every
// colliding pair again) would break some wave's bounds: whether the
// waves' tests can fail at all.
func lockstepFails(waves []Wave) bool {
	for _, w := range waves {
		if w.Clients*(w.Clients-1)/2 > w.Bound || w.Clients > w.PeakBound || w.recollPairs > w.RecollBound {
			return true
		}
	}
	return false
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
	out.LateP99MS = clock.Millis(quantile(late, 0.99) / 1e6)
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
