package capacity

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// TestOrderStatRanksTabulated: the ranks of the distribution-free
// intervals tabulated for the median (Conover, Practical Nonparametric
// Statistics, table A3; also the sign-test interval).
func TestOrderStatRanksTabulated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n      int
		q      float64
		lo, hi int
	}{
		{n: 100, q: 0.5, lo: 40, hi: 61},
		{n: 20, q: 0.5, lo: 6, hi: 15},
		{n: 10, q: 0.5, lo: 2, hi: 9},
		{n: 5, q: 0.5, lo: 0, hi: 6}, // 5 samples cannot give a 95 % interval of the median
		{n: 6, q: 0.5, lo: 1, hi: 6},
	} {
		lo, hi := orderStatRanks(tc.n, tc.q, 0.95)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("OrderStatRanks(%d, %v, 0.95) = %d, %d; want %d, %d", tc.n, tc.q, lo, hi, tc.lo, tc.hi)
		}
	}
}

// TestOrderStatRanksExactCoverage: the ranks' exact coverage, computed from
// the binomial law, is at least the confidence, each tail at most α/2, and
// the ranks are the tightest with that property (moving either inward
// breaks its tail).
func TestOrderStatRanksExactCoverage(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 7, 30, 99, 367, 1000, 5000, 100000} {
		for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
			for _, conf := range []float64{0.9, 0.95, 0.99} {
				lo, hi := orderStatRanks(n, q, conf)
				b := distuv.Binomial{N: float64(n), P: q}
				tail := (1 - conf) / 2
				below := b.CDF(float64(lo - 1)) // P(K < lo)
				above := 1 - b.CDF(float64(hi-1))
				if lo == 0 {
					below = 0
				}
				if below > tail+1e-12 || above > tail+1e-12 {
					t.Errorf("n=%d q=%v conf=%v: ranks %d,%d miss: P(K<lo)=%g P(K>=hi)=%g > %g", n, q, conf, lo, hi, below, above, tail)
				}
				if lo < n && b.CDF(float64(lo)) <= tail {
					t.Errorf("n=%d q=%v conf=%v: lo=%d not the largest", n, q, conf, lo)
				}
				if hi > 1 && 1-b.CDF(float64(hi-2)) <= tail {
					t.Errorf("n=%d q=%v conf=%v: hi=%d not the smallest", n, q, conf, hi)
				}
			}
		}
	}
}

// TestQuantileIntervalCoverage: over many samples drawn from distributions
// with a known quantile, the interval covers the truth at least at its
// stated confidence (within Monte Carlo error: 3 standard errors).
func TestQuantileIntervalCoverage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		n     int
		q     float64
		draw  func(*rand.Rand) float64
		truth float64
	}{
		{"exponential p99 n=1000", 1000, 0.99, func(r *rand.Rand) float64 { return r.ExpFloat64() }, math.Log(100)},
		{"exponential p99.9 n=5000", 5000, 0.999, func(r *rand.Rand) float64 { return r.ExpFloat64() }, math.Log(1000)},
		{"uniform median n=51", 51, 0.5, func(r *rand.Rand) float64 { return r.Float64() }, 0.5},
		{"lognormal p95 n=400", 400, 0.95, func(r *rand.Rand) float64 { return math.Exp(r.NormFloat64()) }, math.Exp(1.6448536269514722)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const trials, conf = 2000, 0.95
			r := rand.New(rand.NewPCG(1, uint64(tc.n)))
			// Seconds scaled to durations with ns resolution: ties are rare.
			truth := time.Duration(tc.truth * 1e9)
			xs := make([]time.Duration, tc.n)
			covered, below, above := 0, 0, 0
			for range trials {
				for i := range xs {
					xs[i] = time.Duration(tc.draw(r) * 1e9)
				}
				slices.Sort(xs)
				ci := quantileInterval(xs, tc.q, conf)
				lowOK := !ci.HasLow || ci.Low <= truth
				highOK := !ci.HasHigh || ci.High >= truth
				if lowOK && highOK {
					covered++
				}
				if !lowOK {
					below++
				}
				if !highOK {
					above++
				}
			}
			se := math.Sqrt(conf * (1 - conf) / trials)
			if got := float64(covered) / trials; got < conf-3*se {
				t.Errorf("coverage %.4f, want at least %.2f (−3 se = %.4f)", got, conf, conf-3*se)
			}
			tail, tse := (1-conf)/2, math.Sqrt((1-conf)/2*(1+conf)/2/trials)
			for side, miss := range map[string]int{"low bound above the truth": below, "high bound below the truth": above} {
				if got := float64(miss) / trials; got > tail+3*tse {
					t.Errorf("%s in %.4f of trials, want at most %.3f", side, got, tail)
				}
			}
		})
	}
}

func TestQuantileIntervalSmall(t *testing.T) {
	t.Parallel()
	if ci := quantileInterval(nil, 0.99, 0.95); ci != (quantileCI{}) {
		t.Errorf("no sample: %+v, want zero", ci)
	}
	xs := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	ci := quantileInterval(xs, 0.99, 0.95)
	if ci.Estimate != 10 || ci.HasHigh || !ci.HasLow {
		t.Errorf("p99 of 10 samples: %+v, want estimate 10, a lower bound and no upper bound", ci)
	}
	if ci := quantileInterval(xs, 0.5, 0.95); ci.Estimate != 5 || ci.Low != 2 || ci.High != 9 {
		t.Errorf("median of 1..10: %+v, want 5 in [2, 9]", ci)
	}
}

// TestClopperPearsonTabulated: exact intervals as tabulated (R's
// binom.test, which computes Clopper–Pearson; Clopper and Pearson 1934).
func TestClopperPearsonTabulated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		k, n      int
		conf      float64
		low, high float64
	}{
		{0, 10, 0.95, 0, 0.3084971},
		{1, 10, 0.95, 0.002528579, 0.4450161},
		{5, 10, 0.95, 0.1870860, 0.8129140},
		{10, 10, 0.95, 0.6915029, 1},
		{3, 20, 0.95, 0.03207094, 0.37892683},
		{50, 100, 0.95, 0.3983211, 0.6016789},
		{0, 100, 0.95, 0, 0.03621669},
		{1, 100, 0.95, 0.0002531460, 0.05445948},
		{0, 10, 0.99, 0, 0.4112960}, // 1 − 0.005^(1/10)
	} {
		low, high := clopperPearson(tc.k, tc.n, tc.conf)
		if math.Abs(low-tc.low) > 1e-6 || math.Abs(high-tc.high) > 1e-6 {
			t.Errorf("ClopperPearson(%d, %d, %v) = [%.7g, %.7g], want [%.7g, %.7g]", tc.k, tc.n, tc.conf, low, high, tc.low, tc.high)
		}
	}
	if low, high := clopperPearson(0, 0, 0.95); low != 0 || high != 1 {
		t.Errorf("no trial: [%v, %v], want [0, 1]", low, high)
	}
}

// TestClopperPearsonClosedForm: with no failure the upper bound is
// 1 − (α/2)^(1/n), with all failures the lower bound (α/2)^(1/n).
func TestClopperPearsonClosedForm(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 10, 367, 5000, 100000} {
		want := 1 - math.Pow(0.025, 1/float64(n))
		if _, high := clopperPearson(0, n, 0.95); math.Abs(high-want) > 1e-9 {
			t.Errorf("n=%d: upper %v, want %v", n, high, want)
		}
		if low, _ := clopperPearson(n, n, 0.95); math.Abs(low-(1-want)) > 1e-9 {
			t.Errorf("n=%d: lower %v, want %v", n, low, 1-want)
		}
	}
}

// TestFails: a step fails outright once more of its samples are beyond the
// objective than sit above its quantile's lower bound, and never before:
// the judgement of the whole step agrees, whatever the other samples are.
func TestFails(t *testing.T) {
	t.Parallel()
	const q, conf = 0.99, 0.95
	for _, n := range []int{100, 367, 1000, 5000} {
		least := -1
		for over := 0; over <= n; over++ {
			if Fails(over, n, q, conf) {
				least = over
				break
			}
		}
		if least < 0 {
			t.Fatalf("n=%d: never fails", n)
		}
		// least samples at 2 s and the rest at 1 ms: the lower bound is
		// beyond a 100 ms objective; one fewer, and it is not.
		for _, k := range []int{least, least - 1} {
			s := make([]time.Duration, n)
			for i := range s {
				s[i] = time.Millisecond
				if i >= n-k {
					s[i] = 2 * time.Second
				}
			}
			ci := quantileInterval(s, q, conf)
			if got, want := ci.HasLow && ci.Low > 100*time.Millisecond, k == least; got != want {
				t.Errorf("n=%d, %d beyond: lower bound %v (has %v), beyond %v, want %v", n, k, ci.Low, ci.HasLow, got, want)
			}
		}
	}
}
