package history

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Direction is which way a change went: "up", "down", or "none" when the
// interval of its size holds zero (the spread or shape changed, not
// clearly the level).
type Direction string

// The directions.
const (
	Up   Direction = "up"
	Down Direction = "down"
	none Direction = "none"
)

// Change is a change point of a series, described. Before and After are
// the medians of the segments either side (from the change point before
// it, or the start, to this one; from this one to the next, or the end).
// Size is the Hodges–Lehmann estimate of the shift from before to after
// (the median of every difference of a value after and a value before),
// in the figure's units; SizeLow and SizeHigh are its distribution-free
// interval at the stated confidence (Lehmann, "Nonparametrics", 1975: the
// order statistics of those differences that the Mann–Whitney
// distribution picks; exact when the segments hold at most 100 runs
// together, by the normal approximation otherwise). The interval needs no
// assumption on the shape of the noise, only that it is the same either
// side but for the shift, and one stalled run moves it by one difference
// of many, unlike the interval of a difference of means; and the medians
// and the shift agree in what they summarize. When the segments are too
// short for the confidence asked, the interval is the range of the
// differences. Run, Label and Worse are filled by Build and empty when
// detect returns a Change.
type Change struct {
	Index             int       // the first value of the new segment
	Run, Label        string    // of the run at Index
	Before, After     float64   // medians either side
	Size              float64   // Hodges–Lehmann shift, after − before
	SizeLow, SizeHigh float64   // its interval
	Direction         Direction // of the shift
	Worse             bool      // whether the change is for the worse
	P                 float64   // the permutation p-value
	QHat              float64   // the divergence at the split
}

// The defaults of the floors (Floors): a change is reported when it is at
// least 5 % of the level before it (the precision capacity's search
// closes its bracket to by default) and at least the figure's resolution:
// 0.1 ms of latency (what the table shows; a p50 of a loopback target
// moving by tens of microseconds is the host's, not a change), one
// request per second of knee, 0.1 percentage point of error rate, one
// request of observed limit. The observed limit is a count held to a
// contract, exact from run to run, so it has no relative floor.
const (
	DefaultMinChange    = 0.05
	DefaultMinChangeMS  = 0.1
	DefaultMinChangeRPS = 1.0
	minChangeErrors     = 0.001
	minChangeLimit      = 1.0
)

// Floor is the least size of a change that is reported: a change point
// whose shift (its Hodges–Lehmann Size) is smaller than Relative of the
// median before it, or smaller than Absolute in the figure's units, is
// not a change. Both must be reached: a relative floor alone would let a
// latency of a fraction of a millisecond change by microseconds, an
// absolute one alone would hold a large figure to a change of its noise.
// The zero value reports every change point.
type Floor struct {
	Relative float64 `json:"relative"` // a share of the median before, such as 0.05
	Absolute float64 `json:"absolute"` // in the figure's units
}

// Floors returns the floor of every figure: relative of the level before
// for all but the observed limit (a count held to a contract, with no
// relative floor), and at least ms milliseconds of the latencies and rps
// requests per second of the knee; the error rate and the observed limit
// keep the absolute floors of their resolution (DefaultFloor).
func Floors(relative, ms, rps float64) map[Figure]Floor {
	out := map[Figure]Floor{}
	for _, f := range figures {
		switch f {
		case P50, P95, P99:
			out[f] = Floor{Relative: relative, Absolute: ms}
		case Knee:
			out[f] = Floor{Relative: relative, Absolute: rps}
		case ErrorRate:
			out[f] = Floor{Relative: relative, Absolute: minChangeErrors}
		case ObservedLimit:
			out[f] = Floor{Absolute: minChangeLimit}
		}
	}
	return out
}

// DefaultFloor returns the floor of f when none is given (see Floors and
// DefaultMinChange).
func (f Figure) DefaultFloor() Floor {
	return Floors(DefaultMinChange, DefaultMinChangeMS, DefaultMinChangeRPS)[f]
}

// margin returns how many times c's shift holds the floor: the lesser of
// |Size|/Absolute and |Size|/(Relative·|Before|), +Inf for a zero floor
// (a relative floor of a level of 0 holds any shift). Below 1, the
// change is under the floor.
func (f Floor) margin(c Change) float64 {
	size, m := math.Abs(c.Size), math.Inf(1)
	if f.Absolute > 0 {
		m = min(m, size/f.Absolute)
	}
	if base := f.Relative * math.Abs(c.Before); base > 0 {
		m = min(m, size/base)
	}
	return m
}

// detect finds the change points of xs, a series of figure f (EDivisive
// on the scale of o), and describes each, in the order of the series.
// Change points under f's floor are then removed one at a time, the
// least first, and the changes either side described again over the
// merged segments, until every one left reaches the floor (as Hunter, now
// Apache Otava, merges the weak change points E-divisive found).
func detect(xs []float64, f Figure, rng *rand.Rand, o Options) []Change {
	splits := eDivisive(scaled(xs, o.Scale), rng, o)
	slices.SortFunc(splits, func(a, b split) int { return cmp.Compare(a.Index, b.Index) })
	floor := o.floor(f)
	for {
		out := describeSplits(xs, splits, o.confidence())
		weakest, least := -1, 1.0
		for i, c := range out {
			if m := floor.margin(c); m < least {
				weakest, least = i, m
			}
		}
		if weakest < 0 {
			return out
		}
		splits = slices.Delete(splits, weakest, weakest+1)
	}
}

// describeSplits describes the splits of xs, in order: each against the
// segments either side, up to the splits before and after it.
func describeSplits(xs []float64, splits []split, conf float64) []Change {
	out := make([]Change, len(splits))
	for i, s := range splits {
		from, to := 0, len(xs)
		if i > 0 {
			from = splits[i-1].Index
		}
		if i+1 < len(splits) {
			to = splits[i+1].Index
		}
		out[i] = describe(xs[from:s.Index], xs[s.Index:to], conf)
		out[i].Index, out[i].P, out[i].QHat = s.Index, s.P, s.QHat
	}
	return out
}

// scaled returns xs on scale s.
func scaled(xs []float64, s Scale) []float64 {
	switch s {
	case values:
		return xs
	case logs:
		ys := make([]float64, len(xs))
		for i, x := range xs {
			ys[i] = math.Log(x)
		}
		return ys
	default:
		return midRanks(xs)
	}
}

// midRanks returns the rank of each value of xs from 1, ties sharing the
// mean of their ranks.
func midRanks(xs []float64) []float64 {
	order := identity(0, len(xs))
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && xs[order[j]] == xs[order[i]] {
			j++
		}
		for _, k := range order[i:j] {
			r[k] = float64(i+j+1) / 2 // mean of ranks i+1 … j
		}
		i = j
	}
	return r
}

// describe returns the medians of x and y and the Hodges–Lehmann shift
// from x to y with its interval at confidence conf.
func describe(x, y []float64, conf float64) Change {
	diffs := make([]float64, 0, len(x)*len(y))
	for _, b := range y {
		for _, a := range x {
			diffs = append(diffs, b-a)
		}
	}
	slices.Sort(diffs)
	k := shiftRank(len(x), len(y), conf)
	c := Change{Before: Median(x), After: Median(y), Size: median(diffs),
		SizeLow: diffs[k], SizeHigh: diffs[len(diffs)-1-k], Direction: none}
	switch {
	case c.SizeLow > 0:
		c.Direction = Up
	case c.SizeHigh < 0:
		c.Direction = Down
	}
	return c
}

// Median returns the median of xs (NaN for none).
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return median(s)
}

// median returns the median of sorted (NaN for none).
func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	return (sorted[(n-1)/2] + sorted[n/2]) / 2
}

// shiftRank returns k, from 0, such that the differences at ranks k and
// nm−1−k (from 0, in order) bound the shift at confidence conf: the
// largest k with P(U ≤ k) ≤ (1−conf)/2, U the Mann–Whitney statistic of n
// and m values with no shift (the true shift is below the difference at
// rank k exactly when fewer than k+1 differences are below it), and 0 when
// no k is that small.
func shiftRank(n, m int, conf float64) int {
	if n+m <= 100 {
		return exactRank(n, m, conf)
	}
	return normalRank(n, m, conf)
}

// exactRank is shiftRank from the exact distribution of U.
func exactRank(n, m int, conf float64) int {
	tail := (1-conf)/2 + 1e-12 // 1−0.8 is not 0.2 in floating point
	cdf := 0.0
	for k, p := range mannWhitney(n, m) {
		if cdf+p > tail {
			return max(k-1, 0)
		}
		cdf += p
	}
	return 0
}

// normalRank is shiftRank from the normal approximation of U, with a
// continuity correction.
func normalRank(n, m int, conf float64) int {
	nm := float64(n) * float64(m)
	sd := math.Sqrt(nm * float64(n+m+1) / 12)
	z := math.Sqrt2 * math.Erfinv(conf)
	k := int(math.Floor(nm/2 - z*sd - 0.5)) // P(U ≤ k) ≈ (1−conf)/2
	return min(max(k, 0), n*m/2)
}

// mannWhitney returns the distribution of the Mann–Whitney statistic U of
// n and m values with no shift: P(U = u) for u = 0 … nm. It counts the
// ways n ranks of n+m sum to each total (a knapsack over the ranks), in
// floating point, divided by C(n+m, n).
func mannWhitney(n, m int) []float64 {
	if n > m {
		n, m = m, n
	}
	top := n * (n + m) // largest sum of n ranks, more than needed
	ways := make([][]float64, n+1)
	for i := range ways {
		ways[i] = make([]float64, top+1)
	}
	ways[0][0] = 1
	for r := 1; r <= n+m; r++ {
		for c := min(r, n); c >= 1; c-- {
			for s := top; s >= r; s-- {
				ways[c][s] += ways[c-1][s-r]
			}
		}
	}
	base := n * (n + 1) / 2
	p := make([]float64, n*m+1)
	total := 0.0
	for u := range p {
		p[u] = ways[n][base+u]
		total += p[u]
	}
	for u := range p {
		p[u] /= total
	}
	return p
}
