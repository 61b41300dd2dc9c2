package jitter

import (
	"cmp"
	"math"
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

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// binner counts the collisions and the busiest ε-bin of many simulated
// waves, faster than sorting each: a counting sort by bin of width eps
// from t0 leaves the times out of order only within a bin, which an
// insertion sort then mends in a few steps. Its buffers are reused from
// wave to wave.
type binner struct {
	eps    int64
	count  []int32 // per bin; then where its times go next in sorted
	bin    []int32 // each time's bin: one division per time, not two
	sorted []int64
}

// figures returns the collisions of ts (pairs within eps) and the most
// times in one bin of width eps from t0 (times before t0 count in the
// first). It leaves ts as it was.
func (b *binner) figures(ts []int64, t0 int64) (collisions, peak int) {
	hi := t0
	for _, t := range ts {
		hi = max(hi, t)
	}
	bins := (hi-t0)/b.eps + 1
	if bins > int64(16*len(ts)+1024) { // a narrow ε over a wide range: sort instead
		s := slices.Clone(ts)
		n := countCollisions(s, b.eps)
		return n, peakBin(s, t0, b.eps)
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
	b.sorted = slices.Grow(b.sorted[:0], len(ts))[:len(ts)]
	for k, t := range ts {
		i := b.bin[k]
		b.sorted[b.count[i]] = t
		b.count[i]++
	}
	s := b.sorted
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	j := 0
	for i := range s {
		for s[i]-s[j] > b.eps {
			j++
		}
		collisions += i - j
	}
	return collisions, peak
}
