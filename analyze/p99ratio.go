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
// slice can be a p99, so each slice keeps those alone, and a split's p99
// is found by merging its slices'.
type p99Test struct {
	run, base []block  // per slice
	swaps     []uint64 // per split: bit k swaps pair k
	heap      []head
	ratios    []float64
}

// block is a slice's largest latencies, descending, and its size.
type block struct {
	top []time.Duration
	n   int
}

// head is the largest not yet taken of one slice in a merge.
type head struct {
	v      float64
	block  int32 // the pair, plus p99Slices for the baseline's slice
	offset int32
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
	rng := rand.New(rand.NewPCG(p99Seed1, p99Seed2))
	t.swaps = make([]uint64, p99Splits)
	for s := range t.swaps {
		t.swaps[s] = rng.Uint64() & (1<<p99Slices - 1)
	}
	t.heap = make([]head, 0, 2*p99Slices)
	t.ratios = make([]float64, p99Splits)
	return t, true
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
func (t *p99Test) ratio() float64 { return t.splitRatio(0, 1) }

// splitRatio is the p99 ratio of the two runs made by swapping the pairs
// of swap, with the baseline's latencies scaled by theta.
func (t *p99Test) splitRatio(swap uint64, theta float64) float64 {
	return t.splitP99(swap, theta) / math.Max(t.splitP99(^swap, theta), 1)
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

// splitP99 returns the p99 of the run made of the run's slices, but for
// the pairs of swap, which take the baseline's slice scaled by theta: the
// r-th largest of their lists, by popping a max-heap of their heads.
func (t *p99Test) splitP99(swap uint64, theta float64) float64 {
	h, n := t.heap[:0], 0
	for k := range p99Slices {
		id := int32(k)
		if swap&(1<<k) != 0 {
			id += p99Slices
		}
		if b, scale := t.blockOf(id, theta); len(b.top) > 0 {
			n += b.n
			h = append(h, head{v: float64(b.top[0]) * scale, block: id})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	if n == 0 {
		return 0
	}
	r := n - p99Rank(n)
	for taken := 1; ; taken++ {
		top := h[0]
		if taken == r {
			return top.v
		}
		b, scale := t.blockOf(top.block, theta)
		if next := top.offset + 1; int(next) < len(b.top) {
			h[0] = head{v: float64(b.top[next]) * scale, block: top.block, offset: next}
		} else {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		siftDown(h, 0)
	}
}

// blockOf returns slice id (the run's below p99Slices, else the
// baseline's) and the factor its latencies take.
func (t *p99Test) blockOf(id int32, theta float64) (block, float64) {
	if id < p99Slices {
		return t.run[id], 1
	}
	return t.base[id-p99Slices], theta
}

// siftDown restores the max-heap order of h below i.
func siftDown(h []head, i int) {
	for {
		big, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].v > h[big].v {
			big = l
		}
		if r < len(h) && h[r].v > h[big].v {
			big = r
		}
		if big == i {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}
