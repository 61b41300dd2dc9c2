package history

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// The defaults of Options, those of MongoDB's signal-processing-algorithms
// (e_divisive: pvalue 0.05, permutations 100, α 1).
const (
	DefaultSignificance = 0.05
	DefaultPermutations = 100
	defaultExponent     = 1.0
	defaultMinSize      = 2
	DefaultConfidence   = 0.95
)

// Options configure change-point detection. The zero value of each field
// stands for its default; an Options value is read, never changed, so one
// may be shared.
type Options struct {
	// Significance is the p-value at or below which a candidate is a
	// change point (default DefaultSignificance).
	Significance float64
	// Permutations is how many random permutations test each candidate
	// (default DefaultPermutations). With R permutations the smallest
	// p-value is 1/(R+1): R must be at least 1/Significance − 1 for any
	// candidate to pass.
	Permutations int
	// Exponent is α of the divergence, the power of the distances, in
	// (0, 2) (default DefaultExponent). Below 1 the statistic weighs a
	// few far outliers less.
	Exponent float64
	// MinSize is the fewest runs a segment may hold (default
	// defaultMinSize): no change is placed nearer than that to either end
	// of its window. 1 lets a single run at the end of a series be a
	// segment of its own.
	MinSize int
	// Confidence is the coverage of the interval of a change's size
	// (default DefaultConfidence).
	Confidence float64
	// Scale is what the divergence measures distances on (default Ranks).
	Scale Scale
	// Seed seeds the permutations of each series (see Build); 0 is a seed
	// like any other.
	Seed uint64
	// Floors are the least change reported of each figure (see Floor); a
	// figure absent from Floors has its DefaultFloor, and a zero Floor
	// reports every change point.
	Floors map[Figure]Floor
	// GroupByTarget makes a target's runs a series of their own (see
	// Key); by default runs of one contract make one series whatever
	// their target.
	GroupByTarget bool
}

// Scale is what the divergence of E-divisive measures distances on. A
// change point is a change in distribution, which a monotone transform of
// the values leaves as it is, so the scale changes how well a change is
// seen, not what the test's significance means.
type Scale int

// The scales.
const (
	// ranks are the values' mid-ranks within the series (the default):
	// one frozen run counts as one run that was the slowest, not as a
	// hundred times the others, so the heavy tails of a busy host's p99
	// do not hide a shift of the bulk. Ranking commutes with permuting, so
	// the permutation test stays exact.
	ranks Scale = iota
	// values are the values as given, MongoDB's choice.
	values
	// logs are the natural logarithms of the values (all must be
	// positive): a ratio counts alike at any level.
	logs
)

func (o Options) significance() float64 { return cmp.Or(o.Significance, DefaultSignificance) }
func (o Options) permutations() int     { return cmp.Or(o.Permutations, DefaultPermutations) }
func (o Options) exponent() float64     { return cmp.Or(o.Exponent, defaultExponent) }
func (o Options) minSize() int          { return max(cmp.Or(o.MinSize, defaultMinSize), 1) }
func (o Options) confidence() float64   { return cmp.Or(o.Confidence, DefaultConfidence) }

// MinRuns is the fewest runs a series needs for its test to find even the
// clearest change there is more often than not: the first half of the
// runs at one value and the second at another. That arrangement is
// matched by only its mirror image among the C(n, ⌊n/2⌋) the permutation
// test draws from, so its p-value is 2/C(n, ⌊n/2⌋), which o's
// permutations estimate (see findRate). With fewer runs a change is
// missed more often than found, however plain: 8 runs at 0.05 and 100
// permutations; 12 when ten series share 0.05.
func (o Options) MinRuns() int {
	for n := max(2*o.minSize(), 2); ; n++ {
		if o.findRate(n) >= 0.5 {
			return n
		}
	}
}

// findRate is how often the permutation test at o's significance, with
// o's permutations R, passes the clearest change in n runs: its estimated
// p-value, (1 + the permutations at least as extreme)/(R + 1), is at most
// the significance when at most ⌊α(R+1)⌋ − 1 of R permutations are, each
// with chance 2/C(n, ⌊n/2⌋).
func (o Options) findRate(n int) float64 {
	c := 1.0 // C(n, ⌊n/2⌋)
	for i := 1; i <= n/2; i++ {
		c = c * float64(n-n/2+i) / float64(i)
	}
	p, r := min(2/c, 1), o.permutations()
	most := int(math.Floor(o.significance()*float64(r+1) - 1 + 1e-9)) // permutations as extreme allowed
	if most < 0 {
		return 0
	}
	// P(Binomial(r, p) ≤ most), term by term.
	term := math.Pow(1-p, float64(r))
	sum := term
	for k := 1; k <= most; k++ {
		term *= float64(r-k+1) / float64(k) * p / (1 - p)
		sum += term
	}
	return min(sum, 1)
}

// floor returns the floor of figure f.
func (o Options) floor(f Figure) Floor {
	if fl, ok := o.Floors[f]; ok {
		return fl
	}
	return f.DefaultFloor()
}

// split is a change point as E-divisive finds it, before it is described:
// Index is the first value of the new segment (the values before it and
// from it on differ in distribution), QHat the divergence statistic at the
// split, and P the permutation p-value of the test that accepted it.
type split struct {
	Index int
	QHat  float64
	P     float64
}

// eDivisive finds the change points of xs with E-divisive means and a
// permutation test of each candidate, as MongoDB's performance CI
// published it (Daly et al., "The Use of Change Point Detection to Identify
// Software Performance Regressions in a Continuous Integration System",
// ICPE 2020) after Matteson and James ("A Nonparametric Approach for
// Multiple Change Point Analysis of Multivariate Data", JASA 2014), and as
// MongoDB's signal-processing-algorithms implements it (e_divisive, the
// qhat calculator and QHatPermutationsSignificanceTester) and Hunter
// (datastax-labs/hunter) uses it.
//
// The series is cut at the split τ that maximizes the divergence of the
// values before it, X, from those after, Y (n and m of them):
//
//	q̂(τ) = nm/(n+m) · ( 2/(nm) Σ|Xᵢ−Yⱼ|^α − Σᵢ<ⱼ|Xᵢ−Xⱼ|^α / C(n,2) − Σᵢ<ⱼ|Yᵢ−Yⱼ|^α / C(m,2) )
//
// Each step takes the best split of any window between the change points
// found so far (recursive bisection), and tests it: each window's values
// are shuffled, independently, Permutations times, and b counts the
// shuffles whose best q̂ over all windows is at least the candidate's. The
// candidate is kept when p = (b+1)/(R+1) ≤ Significance, and the search
// stops at the first candidate that is not. The p-value is Matteson and
// James's (their ecp package); MongoDB's code divides b alone, which can
// be 0: with b+1 a series with no change is flagged at most at the rate
// Significance, whatever its distribution, because its values are
// exchangeable. A segment holds at least MinSize values.
//
// The shuffles are drawn from rng, so one series and one seed give one
// answer. The splits are returned in the order found (most divergent
// first).
func eDivisive(xs []float64, rng *rand.Rand, o Options) []split {
	d := distances(xs, o.exponent())
	var found []split
	memo := map[[2]int]cut{}
	for {
		bounds := windows(found, len(xs))
		best := cut{at: -1}
		for i := 1; i < len(bounds); i++ {
			w := [2]int{bounds[i-1], bounds[i]}
			c, ok := memo[w]
			if !ok {
				c = bestCut(d, identity(w[0], w[1]), o.minSize())
				if c.at >= 0 {
					c.at += w[0] // from the window's start to the series'
				}
				memo[w] = c
			}
			if c.at >= 0 && (best.at < 0 || c.q > best.q) {
				best = c
			}
		}
		if best.at < 0 {
			return found
		}
		p := permutationP(d, bounds, best.q, rng, o)
		if p > o.significance() {
			return found
		}
		found = append(found, split{Index: best.at, QHat: best.q, P: p})
	}
}

// cut is the best split of one window: at is its offset in the window (or
// in the series, once placed), −1 for none; q is its q̂.
type cut struct {
	at int
	q  float64
}

// distances returns the matrix of |xᵢ−xⱼ|^α.
func distances(xs []float64, alpha float64) [][]float64 {
	d := make([][]float64, len(xs))
	for i := range d {
		d[i] = make([]float64, len(xs))
		for j := range i {
			v := math.Abs(xs[i] - xs[j])
			if alpha != 1 {
				v = math.Pow(v, alpha)
			}
			d[i][j], d[j][i] = v, v
		}
	}
	return d
}

// windows returns the bounds of the windows between the splits found: 0,
// the splits in order, n.
func windows(found []split, n int) []int {
	b := []int{0, n}
	for _, s := range found {
		b = append(b, s.Index)
	}
	slices.Sort(b)
	return b
}

// identity returns the indices a, …, b−1.
func identity(a, b int) []int {
	ix := make([]int, b-a)
	for i := range ix {
		ix[i] = a + i
	}
	return ix
}

// bestCut returns the split of the values at ix (in that order) with the
// largest q̂, each side holding at least minSize values; at is −1 when ix
// is too short to split. Ties go to the earliest split. It moves τ from
// the start to the end keeping the three sums of distances up to date, so
// a window of n values costs O(n²).
func bestCut(d [][]float64, ix []int, minSize int) cut {
	n := len(ix)
	best := cut{at: -1}
	var cross, within, rest float64 // X–Y, within X, within Y
	for i := range n {
		for j := i + 1; j < n; j++ {
			rest += d[ix[i]][ix[j]]
		}
	}
	for tau := range n - minSize + 1 {
		if tau >= minSize {
			if q := qhat(cross, within, rest, tau, n-tau); best.at < 0 || q > best.q {
				best = cut{at: tau, q: q}
			}
		}
		// move value tau from Y to X
		var col, row float64
		for i := range tau {
			col += d[ix[i]][ix[tau]]
		}
		for j := tau + 1; j < n; j++ {
			row += d[ix[tau]][ix[j]]
		}
		cross += row - col
		within += col
		rest -= row
	}
	return best
}

// qhat returns the divergence statistic of a split from the sum of the
// distances across it, within X and within Y, and the sizes of X and Y.
func qhat(cross, within, rest float64, n, m int) float64 {
	pairs := func(k int) float64 { return float64(k) * float64(k-1) / 2 }
	var e float64
	if n > 0 && m > 0 {
		e = 2 * cross / (float64(n) * float64(m))
	}
	if n > 1 {
		e -= within / pairs(n)
	}
	if m > 1 {
		e -= rest / pairs(m)
	}
	return float64(n) * float64(m) / float64(n+m) * e
}

// permutationP returns the p-value of a candidate of divergence q given
// the windows' bounds: the share of shuffles (each window shuffled on its
// own) whose best split in any window is at least as divergent, counting
// the candidate itself.
func permutationP(d [][]float64, bounds []int, q float64, rng *rand.Rand, o Options) float64 {
	r := o.permutations()
	tol := 1e-9 * max(1, math.Abs(q)) // sums in another order round otherwise
	higher := 0
	ix := make([][]int, len(bounds)-1)
	for i := range ix {
		ix[i] = identity(bounds[i], bounds[i+1])
	}
	for range r {
		best := math.Inf(-1)
		for _, w := range ix {
			rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
			if c := bestCut(d, w, o.minSize()); c.at >= 0 {
				best = max(best, c.q)
			}
		}
		if best >= q-tol {
			higher++
		}
	}
	return float64(higher+1) / float64(r+1)
}
