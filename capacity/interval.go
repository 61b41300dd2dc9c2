package capacity

import (
	"math"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// defaultConfidence is the confidence of every interval when none is
// given: 95 %, two-sided (each bound is wrong at most 2.5 % of the time).
const defaultConfidence = 0.95

// orderStatRanks returns the 1-based ranks of the order statistics that
// bound a distribution-free two-sided confidence interval of the
// q-quantile from n samples: [x_(lo), x_(hi)] covers the true quantile
// with probability at least confidence, whatever the (continuous)
// distribution. The number of samples at or below the true quantile is
// Binomial(n, q); lo is the largest rank with P(K < lo) ≤ α/2 and hi the
// smallest with P(K ≥ hi) ≤ α/2, α = 1 − confidence. lo is 0 when no
// sample can serve as the lower bound (n too small for that confidence)
// and hi is n+1 when none can serve as the upper bound.
func orderStatRanks(n int, q, confidence float64) (lo, hi int) {
	if n <= 0 {
		return 0, 1
	}
	tail := (1 - confidence) / 2
	b := distuv.Binomial{N: float64(n), P: q}
	// lo−1 is the largest k in [−1, n] with CDF(k) ≤ tail.
	lo = searchInts(n+1, func(k int) bool { return b.CDF(float64(k)) > tail })
	// hi−1 is the smallest k in [0, n] with CDF(k) ≥ 1 − tail.
	hi = 1 + searchInts(n+1, func(k int) bool { return b.CDF(float64(k)) >= 1-tail })
	return lo, hi
}

// Fails reports whether a step of n samples, over of them beyond the
// objective, fails it whatever the others are: its q-quantile's lower
// confidence bound (at confidence, 0 meaning DefaultConfidence's) is then
// the lo-th smallest sample, one of the over. A caller sending a step can
// stop once it holds, counting as samples every request already sent.
func Fails(over, n int, q, confidence float64) bool {
	if confidence == 0 {
		confidence = defaultConfidence
	}
	lo, _ := orderStatRanks(n, q, confidence)
	return lo >= 1 && over > n-lo
}

// searchInts is the smallest k in [0, n) with f(k) true (n if none), f
// false then true over the range.
func searchInts(n int, f func(int) bool) int {
	i, j := 0, n
	for i < j {
		h := int(uint(i+j) >> 1)
		if !f(h) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// quantileCI is an estimate of a latency quantile with its confidence
// interval. HasLow is false when the samples cannot bound the quantile
// from below at the confidence asked (too few), HasHigh when they cannot
// bound it from above: the bound is then absent, not zero.
type quantileCI struct {
	// Estimate is the nearest-rank quantile: x_(⌈q·n⌉).
	Estimate time.Duration
	// Low is the lower bound, when HasLow.
	Low time.Duration
	// High is the upper bound, when HasHigh.
	High time.Duration
	// HasLow reports whether Low bounds the quantile.
	HasLow bool
	// HasHigh reports whether High bounds the quantile.
	HasHigh bool
}

// quantileInterval returns the q-quantile of sorted (ascending) with its
// exact order-statistic confidence interval (orderStatRanks). The zero
// quantileCI (no bound) is returned for no sample.
func quantileInterval(sorted []time.Duration, q, confidence float64) quantileCI {
	n := len(sorted)
	if n == 0 {
		return quantileCI{}
	}
	var ci quantileCI
	ci.Estimate = sorted[nearestRank(n, q)-1]
	lo, hi := orderStatRanks(n, q, confidence)
	if lo >= 1 {
		ci.Low, ci.HasLow = sorted[lo-1], true
	}
	if hi <= n {
		ci.High, ci.HasHigh = sorted[hi-1], true
	}
	return ci
}

// nearestRank is the 1-based rank ⌈q·n⌉, within [1, n].
func nearestRank(n int, q float64) int {
	r := int(math.Ceil(q*float64(n) - 1e-9))
	return min(max(r, 1), n)
}

// clopperPearson returns the exact (Clopper–Pearson) two-sided confidence
// interval of a proportion from k successes in n trials: the bounds are
// the α/2 quantile of Beta(k, n−k+1) and the 1−α/2 quantile of
// Beta(k+1, n−k), α = 1 − confidence; 0 and 1 at the edges. For n = 0 it
// is [0, 1].
func clopperPearson(k, n int, confidence float64) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	k = min(max(k, 0), n)
	tail := (1 - confidence) / 2
	low, high = 0, 1
	if k > 0 {
		low = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(tail)
	}
	if k < n {
		high = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - tail)
	}
	return low, high
}
