package jitter

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"time"
)

// The strategies a fleet may claim, as package client names them.
const (
	strategyFull         = "full"
	strategyEqual        = "equal"
	strategyDecorrelated = "decorrelated"
	strategyNone         = "none"
)

// nullOf returns the strategy whose independent draws a fleet claiming
// strategy is judged against: its own, but full jitter for none (which
// draws nothing) and for an empty or unknown name.
func nullOf(strategy string) string {
	switch strategy {
	case strategyEqual, strategyDecorrelated:
		return strategy
	}
	return strategyFull
}

// drawRange returns the range [lo, hi) the null strategy draws retry k's
// delay from (k from 0), given the delay drawn before the previous attempt
// (zero before the first retry), as package client draws it: full
// uniform over [0, c) with c = min(Cap, Base·2^k); equal c/2 plus a
// uniform draw over the other half; decorrelated uniform over
// [Base, min(Cap, 3·max(prev, Base))).
func drawRange(cfg Config, k int, prev time.Duration) (lo, hi time.Duration) {
	c := ceiling(cfg.Base, cfg.Cap, k)
	switch nullOf(cfg.Strategy) {
	case strategyEqual:
		return c / 2, c
	case strategyDecorrelated:
		return cfg.Base, min(cfg.Cap, 3*max(prev, cfg.Base))
	}
	return 0, c
}

// place returns where p's delay fell in its null range, in [0, 1]: under
// the null it is uniform.
func place(p point) float64 {
	if p.hi == p.lo {
		return 0.5
	}
	return min(max(float64(p.delay-p.lo)/float64(p.hi-p.lo), 0), 1)
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

// pairCounter counts how many of a fixed set of pairs of indices have
// times within eps of each other, for one set of times after another (a
// wave's simulated fleets). Few pairs are tested one by one. Many (a
// fleet in lockstep: every client collided with every other, n²/2 pairs)
// are counted along the times sorted (as a binner leaves them): each
// index is tested against every partner within eps before it at once, as
// a bit set, so a set of times costs about n·n/64 words, not n²/2 tests.
// Both count the same pairs.
type pairCounter struct {
	pairs [][2]int
	eps   int64
	// For the bit sets (nil adj: one by one): pos is each index's
	// position among those in pairs (−1: in none), adj each position's
	// partners, win the positions within eps of the current one.
	pos []int32
	adj [][]uint64
	win []uint64
}

// newPairCounter prepares to count pairs of indices below n, as bit sets
// where there are more pairs than eight per index in them and no pair is
// listed twice.
func newPairCounter(pairs [][2]int, n int, eps int64) *pairCounter {
	c := &pairCounter{pairs: pairs, eps: eps, pos: make([]int32, n)}
	for i := range c.pos {
		c.pos[i] = -1
	}
	k := int32(0)
	for _, pr := range pairs {
		for _, i := range pr {
			if c.pos[i] < 0 {
				c.pos[i] = k
				k++
			}
		}
	}
	if len(pairs) <= 8*int(k) {
		return c
	}
	words := (k + 63) / 64
	c.adj = make([][]uint64, k)
	for i := range c.adj {
		c.adj[i] = make([]uint64, words)
	}
	for _, pr := range pairs {
		a, b := c.pos[pr[0]], c.pos[pr[1]]
		if a == b || c.adj[a][b/64]&(1<<(b%64)) != 0 {
			c.adj = nil // a pair listed twice counts twice: one by one
			return c
		}
		c.adj[a][b/64] |= 1 << (b % 64)
		c.adj[b][a/64] |= 1 << (a % 64)
	}
	c.win = make([]uint64, words)
	return c
}

// oneByOne counts the pairs within eps one by one.
func (c *pairCounter) oneByOne(times []int64) int {
	n := 0
	for _, pr := range c.pairs {
		if abs64(times[pr[0]]-times[pr[1]]) <= c.eps {
			n++
		}
	}
	return n
}

// count returns how many of the pairs have times within eps; order holds
// the indices of times sorted by time.
func (c *pairCounter) count(times []int64, order []int32) int {
	if c.adj == nil {
		return c.oneByOne(times)
	}
	clear(c.win)
	n, j := 0, 0
	for _, i := range order {
		p := c.pos[i]
		if p < 0 {
			continue
		}
		for ; times[i]-times[order[j]] > c.eps; j++ {
			if q := c.pos[order[j]]; q >= 0 {
				c.win[q/64] &^= 1 << (q % 64)
			}
		}
		for w, set := range c.adj[p] {
			n += bits.OnesCount64(set & c.win[w])
		}
		c.win[p/64] |= 1 << (p % 64)
	}
	return n
}

// peakBin returns the most times in one bin of width eps from t0; ts must
// be sorted.
func peakBin(ts []int64, t0, eps int64) int {
	peak, run := 0, 0
	for i, t := range ts {
		if i > 0 && max(t-t0, 0)/eps == max(ts[i-1]-t0, 0)/eps {
			run++
		} else {
			run = 1
		}
		peak = max(peak, run)
	}
	return peak
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

// binner counts the collisions and the busiest ε-bin of many simulated
// fleets' times, and sorts them for a pairCounter: a counting sort into
// bins of ε (the times are spread over a few ranges of ε at most), then
// an insertion sort of what each bin holds, reusing its buffers from one
// fleet to the next; over a range too wide for bins, a sort of the times
// packed with their indices.
type binner struct {
	eps    int64
	count  []int32 // per bin; then where its times go next in sorted
	bin    []int32 // each time's bin: one division per time, not two
	sorted []int64
	idx    []int32 // the indices of sorted's times in ts
	keys   []int64
}

// figures returns the collisions of ts (pairs within eps) and the most
// times in one bin of width eps from t0 (times before t0 count in the
// first), and leaves ts sorted in b.sorted, their indices in b.idx. It
// leaves ts as it was.
func (b *binner) figures(ts []int64, t0 int64) (collisions, peak int) {
	lo, hi := t0, t0
	for _, t := range ts {
		lo, hi = min(lo, t), max(hi, t)
	}
	b.sorted = slices.Grow(b.sorted[:0], len(ts))[:len(ts)]
	b.idx = slices.Grow(b.idx[:0], len(ts))[:len(ts)]
	bins := (hi-t0)/b.eps + 1
	if bins > int64(16*len(ts)+1024) { // a narrow ε over a wide range: sort instead
		b.sortWide(ts, lo, hi)
		return collisionsSorted(b.sorted, b.eps), peakBin(b.sorted, t0, b.eps)
	}
	b.count = slices.Grow(b.count[:0], int(bins))[:bins]
	clear(b.count)
	b.bin = slices.Grow(b.bin[:0], len(ts))[:len(ts)]
	for k, t := range ts {
		i := int32(max(t-t0, 0) / b.eps)
		b.bin[k] = i
		b.count[i]++
	}
	at := int32(0)
	for i, c := range b.count {
		peak = max(peak, int(c))
		b.count[i] = at
		at += c
	}
	for k, t := range ts {
		i := b.bin[k]
		b.sorted[b.count[i]], b.idx[b.count[i]] = t, int32(k)
		b.count[i]++
	}
	s, x := b.sorted, b.idx
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
	return collisionsSorted(s, b.eps), peak
}

// sortWide sorts ts (from lo to hi) into b.sorted and b.idx as integers,
// each time from lo packed with its index in the low bits; a span too
// wide to pack (over a day) is sorted by comparison.
func (b *binner) sortWide(ts []int64, lo, hi int64) {
	shift := uint(bits.Len(uint(len(ts))))
	if hi-lo >= 1<<(63-shift) {
		for k := range b.idx {
			b.idx[k] = int32(k)
		}
		slices.SortFunc(b.idx, func(i, j int32) int { return cmp.Compare(ts[i], ts[j]) })
		for k, i := range b.idx {
			b.sorted[k] = ts[i]
		}
		return
	}
	b.keys = slices.Grow(b.keys[:0], len(ts))[:len(ts)]
	for k, t := range ts {
		b.keys[k] = (t-lo)<<shift | int64(k)
	}
	slices.Sort(b.keys)
	mask := int64(1)<<shift - 1
	for k, key := range b.keys {
		b.sorted[k], b.idx[k] = key>>shift+lo, int32(key&mask)
	}
}

// collisionsSorted counts the pairs of sorted times within eps.
func collisionsSorted(s []int64, eps int64) int {
	n, j := 0, 0
	for i := range s {
		for s[i]-s[j] > eps {
			j++
		}
		n += i - j
	}
	return n
}
