package analyze

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// The p99 test: how many slices of time a run is cut into (at most 64),
// how many random splits, at most how many latencies of a run take part,
// and the seed of the splits (fixed: one pair of runs, one answer).
const (
	p99Slices = 32
	p99Splits = 2000
	p99MaxN   = 10000
	p99Seed1  = 0x9e3779b97f4a7c15
	p99Seed2  = 0x243f6a8885a308d3
)

// p99 returns the 99th percentile of sorted by tachymeter's rule (the
// sample at rank ⌊0.99·n + 0.5⌋), the one the tables show.
func p99(sorted []time.Duration) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[p99Rank(len(sorted))]
}

// p99Rank returns the index of the 99th percentile in n sorted samples.
func p99Rank(n int) int { return min(max(int(float64(n)*0.99+0.5)-1, 0), n-1) }

// p99Test compares the p99 latencies of two runs of one plan with a
// paired permutation test over time. Latencies close in time share their
// fate: a stall of the host or the target slows every request in flight,
// and the p99 of a few hundred requests is often a handful of requests
// sent at one moment. So each run's timeline (from its first send) is cut
// into p99Slices slices of equal length, slice k of the run is paired with
// slice k of the baseline, and the slices, not the requests, are the
// units: if the run's latencies are the baseline's scaled by θ, then run
// slice k and baseline slice k scaled by θ are exchangeable, and the ratio
// of the two runs' p99s is no more extreme than that of runs made by
// swapping random pairs. A stall at one moment of one run is one pair,
// swapped half the time; a slower build is slower in every pair. Inverting
// the test over θ gives an interval of the ratio. The swaps are drawn once
// (common to every θ), from a fixed seed. Only the largest latencies of a
// slice can be a p99, so each slice keeps those alone; a split's two p99s
// are found in one walk down every slice's kept latencies, largest first.
type p99Test struct {
	run, base []block  // per slice
	swaps     []uint64 // per split: bit k swaps pair k
	ratios    []float64
	observed  float64 // the ratio of the runs as they are
	// runTop and baseTop are every slice's kept latencies, largest first;
	// merged is both, the baseline's scaled by mergedTheta.
	runTop, baseTop []kept
	merged          []kept
	mergedTheta     float64
}

// block is a slice's largest latencies, descending, and its size.
type block struct {
	top []time.Duration
	n   int
}

// kept is one kept latency (scaled by θ if the baseline's), and the pair
// its slice belongs to.
type kept struct {
	v    float64
	pair int32
	base bool
}

// newP99Test prepares the test from both runs' latencies and send times
// (offsets from the first send, in the same order); ok is false when
// either run has no latencies or no send times.
func newP99Test(base, baseSent, run, runSent []time.Duration) (t *p99Test, ok bool) {
	if len(base) == 0 || len(run) == 0 || len(baseSent) != len(base) || len(runSent) != len(run) {
		return nil, false
	}
	base, baseSent, run, runSent = thin(base), thin(baseSent), thin(run), thin(runSent)
	span := max(slices.Max(baseSent), slices.Max(runSent)) + 1
	bs, rs := slicesOf(base, baseSent, span), slicesOf(run, runSent, span)
	largest := 0 // the most latencies a split's run can hold
	for k := range p99Slices {
		largest += max(len(bs[k]), len(rs[k]))
	}
	keep := largest - p99Rank(largest)
	t = &p99Test{base: blocks(bs, keep), run: blocks(rs, keep)}
	t.runTop, t.baseTop = descending(t.run, false), descending(t.base, true)
	rng := rand.New(rand.NewPCG(p99Seed1, p99Seed2))
	t.swaps = make([]uint64, p99Splits)
	for s := range t.swaps {
		t.swaps[s] = rng.Uint64() & (1<<p99Slices - 1)
	}
	t.ratios = make([]float64, p99Splits)
	t.observed = t.splitRatio(0, 1)
	return t, true
}

// descending returns the kept latencies of every block, largest first.
func descending(bs []block, base bool) []kept {
	var out []kept
	for k, b := range bs {
		for _, d := range b.top {
			out = append(out, kept{v: float64(d), pair: int32(k), base: base})
		}
	}
	slices.SortFunc(out, func(x, y kept) int { return cmp.Compare(y.v, x.v) })
	return out
}

// thin keeps every k-th of a run longer than p99MaxN, in order.
func thin(xs []time.Duration) []time.Duration {
	step := (len(xs) + p99MaxN - 1) / p99MaxN
	if step <= 1 {
		return xs
	}
	out := make([]time.Duration, 0, len(xs)/step+1)
	for i := 0; i < len(xs); i += step {
		out = append(out, xs[i])
	}
	return out
}

// slicesOf sorts latencies into p99Slices slices of span by send time.
func slicesOf(lat, sent []time.Duration, span time.Duration) [][]time.Duration {
	out := make([][]time.Duration, p99Slices)
	for i, d := range lat {
		k := min(max(int(int64(sent[i])*p99Slices/int64(span)), 0), p99Slices-1)
		out[k] = append(out[k], d)
	}
	return out
}

// blocks keeps each slice's keep largest, descending.
func blocks(sl [][]time.Duration, keep int) []block {
	out := make([]block, len(sl))
	for k, b := range sl {
		slices.SortFunc(b, func(x, y time.Duration) int { return cmp.Compare(y, x) })
		out[k] = block{top: b[:min(keep, len(b))], n: len(b)}
	}
	return out
}

// ratio is the observed p99 ratio, run over baseline.
func (t *p99Test) ratio() float64 { return t.observed }

// splitRatio is the p99 ratio of the two runs made by swapping the pairs
// of swap, with the baseline's latencies scaled by theta.
func (t *p99Test) splitRatio(swap uint64, theta float64) float64 {
	run, base := t.splitP99s(swap, theta)
	return run / math.Max(base, 1)
}

// splitRatios returns, for every split, its p99 ratio when the baseline's
// latencies are scaled by theta (sorted).
func (t *p99Test) splitRatios(theta float64) []float64 {
	for s, swap := range t.swaps {
		t.ratios[s] = t.splitRatio(swap, theta)
	}
	slices.Sort(t.ratios)
	return t.ratios
}

// pUpper returns the p-value of "the run's p99 is at most theta times the
// baseline's" against a higher one; pLower that of "at least" against a
// lower one.
//
// A split that swaps no pair that matters has the observed ratio itself,
// computed in another order: ratios within tie of each other are equal.
func (t *p99Test) pUpper(theta float64) float64 {
	rs, obs := t.splitRatios(theta), t.ratio()/theta
	below, _ := slices.BinarySearch(rs, obs*(1-tie)) // splits with a ratio under obs
	return float64(1+len(rs)-below) / float64(1+len(rs))
}

func (t *p99Test) pLower(theta float64) float64 {
	rs, obs := t.splitRatios(theta), t.ratio()/theta
	n, _ := slices.BinarySearch(rs, obs*(1+tie)) // splits with a ratio at most obs
	return float64(1+n) / float64(1+len(rs))
}

// tie is the relative difference below which two ratios are equal.
const tie = 1e-9

// interval returns the central interval of confidence conf of the ratio:
// the θ neither one-sided test rejects at (1 − conf)/2, found by bisection
// on log θ.
func (t *p99Test) interval(conf float64) (lo, hi float64) {
	tail := (1 - conf) / 2
	r := t.ratio()
	// pUpper rises with θ: lo is where it passes tail.
	lo = bisect(r/1e3, r*1e3, func(theta float64) bool { return t.pUpper(theta) > tail })
	// pLower falls with θ: hi is where it drops to tail.
	hi = bisect(r/1e3, r*1e3, func(theta float64) bool { return t.pLower(theta) <= tail })
	return lo, hi
}

// bisect returns the least θ in [a, b] (to 0.1 %) at which above holds,
// for an above that holds from some θ on.
func bisect(a, b float64, above func(float64) bool) float64 {
	la, lb := math.Log(a), math.Log(b)
	for lb-la > 1e-3 {
		m := (la + lb) / 2
		if above(math.Exp(m)) {
			lb = m
		} else {
			la = m
		}
	}
	return math.Exp(lb)
}

// splitP99s returns the p99 of the run made of the run's slices, but for
// the pairs of swap, which take the baseline's slice scaled by theta, and
// the p99 of the baseline made of the other slice of every pair. Each kept
// latency belongs to one of the two; walking them largest first, a run's
// p99 is its r-th, r its count of latencies above its p99's rank.
func (t *p99Test) splitP99s(swap uint64, theta float64) (run, base float64) {
	n1, n2 := 0, 0
	for k := range p99Slices {
		if swap&(1<<k) != 0 {
			n1, n2 = n1+t.base[k].n, n2+t.run[k].n
		} else {
			n1, n2 = n1+t.run[k].n, n2+t.base[k].n
		}
	}
	r1, r2 := 0, 0
	if n1 > 0 {
		r1 = n1 - p99Rank(n1)
	}
	if n2 > 0 {
		r2 = n2 - p99Rank(n2)
	}
	c1, c2 := 0, 0
	for _, e := range t.mergedAt(theta) {
		if (swap>>uint(e.pair)&1 != 0) == e.base {
			if c1++; c1 == r1 {
				run = e.v
			}
		} else if c2++; c2 == r2 {
			base = e.v
		}
		if c1 >= r1 && c2 >= r2 {
			break
		}
	}
	return run, base
}

// mergedAt returns every kept latency, largest first, the baseline's
// scaled by theta: a merge of the two runs' (scaling keeps their order).
func (t *p99Test) mergedAt(theta float64) []kept {
	if t.merged != nil && t.mergedTheta == theta {
		return t.merged
	}
	t.merged, t.mergedTheta = t.merged[:0], theta
	i, j := 0, 0
	for i < len(t.runTop) || j < len(t.baseTop) {
		if j == len(t.baseTop) || (i < len(t.runTop) && t.runTop[i].v >= t.baseTop[j].v*theta) {
			t.merged = append(t.merged, t.runTop[i])
			i++
			continue
		}
		e := t.baseTop[j]
		e.v *= theta
		t.merged = append(t.merged, e)
		j++
	}
	return t.merged
}
