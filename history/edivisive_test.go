package history

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestQHat checks the divergence statistic against sums done by hand.
func TestQHat(t *testing.T) {
	t.Parallel()
	// [0 0 1 1], α 1: at τ=2 X={0,0}, Y={1,1}: across 4·1, within 0, so
	// q̂ = (2·2/4)·(2·4/(2·2)) = 2. At τ=1 X={0}, Y={0,1,1}: across
	// 0+1+1 = 2, within Y 1+1+0 = 2 over C(3,2) = 3 pairs, so
	// q̂ = (1·3/4)·(2·2/3 − 2/3) = 0.5; τ=3 mirrors it.
	// [0 4], α 0.5: q̂(1) = (1/2)·(2·√4) = 2.
	// [0 1 3], α 1: q̂(1) = (2/3)·(2·(1+3)/2 − 2/1) = 4/3 and
	// q̂(2) = (2/3)·(2·(3+2)/2 − 1/1) = 8/3.
	tests := []struct {
		name    string
		xs      []float64
		alpha   float64
		minSize int
		want    []float64 // q̂ at τ = minSize …
		best    cut
	}{
		{"two levels", []float64{0, 0, 1, 1}, 1, 1, []float64{0.5, 2, 0.5}, cut{2, 2}},
		{"two levels, min size 2", []float64{0, 0, 1, 1}, 1, 2, []float64{2}, cut{2, 2}},
		{"α 0.5", []float64{0, 4}, 0.5, 1, []float64{2}, cut{1, 2}},
		{"three", []float64{0, 1, 3}, 1, 1, []float64{4.0 / 3, 8.0 / 3}, cut{2, 8.0 / 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := distances(tt.xs, tt.alpha)
			var got []float64
			for tau := tt.minSize; tau <= len(tt.xs)-tt.minSize; tau++ {
				got = append(got, qhatAt(d, tau))
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("q̂ (-want +got):\n%s", diff)
			}
			if b := bestCut(d, identity(0, len(tt.xs)), tt.minSize); b.at != tt.best.at || math.Abs(b.q-tt.best.q) > 1e-12 {
				t.Errorf("bestCut = %+v, want %+v", b, tt.best)
			}
		})
	}
}

var approx = cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(a)) })

// qhatAt returns q̂ of the split at tau of the whole matrix from its
// definition, summing the three parts afresh.
func qhatAt(d [][]float64, tau int) float64 {
	var cross, x, y float64
	for i := range d {
		for j := i + 1; j < len(d); j++ {
			switch {
			case j < tau:
				x += d[i][j]
			case i >= tau:
				y += d[i][j]
			default:
				cross += d[i][j]
			}
		}
	}
	return qhat(cross, x, y, tau, len(d)-tau)
}

// TestBestCutIncremental checks the O(n²) sweep against the definition on
// random series, in a shuffled order too.
func TestBestCutIncremental(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		n := 2 + rng.IntN(20)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = rng.ExpFloat64()
		}
		ix := rng.Perm(n)
		shuffled := make([]float64, n)
		for i, j := range ix {
			shuffled[i] = xs[j]
		}
		want := cut{at: -1}
		ds := distances(shuffled, 0.7)
		for tau := 1; tau < n; tau++ {
			if q := qhatAt(ds, tau); want.at < 0 || q > want.q {
				want = cut{tau, q}
			}
		}
		got := bestCut(distances(xs, 0.7), ix, 1)
		if got.at != want.at || math.Abs(got.q-want.q) > 1e-9 {
			t.Fatalf("bestCut(%v) = %+v, want %+v", shuffled, got, want)
		}
	}
}

// TestPermutationP checks the p-values against counts done by hand.
// [0 0 1 1] has C(4,2) = 6 orders, equally likely under shuffling; only
// 0011 and 1100 reach q̂ = 2 (0101 and the others reach 0.5 at most), so
// the p-value tends to 2/6 as the permutations grow. Ten 0s then ten 1s
// is beaten only by itself and its mirror, 2 orders in C(20,10) = 184756,
// so with R permutations p is 1/(R+1), the smallest there is.
func TestPermutationP(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	d := distances([]float64{0, 0, 1, 1}, 1)
	const r = 6000 // the standard error of the share is ≈ 0.006
	p := permutationP(d, []int{0, 4}, 2, rng, Options{Permutations: r, MinSize: 1})
	if math.Abs(p-1.0/3) > 0.025 {
		t.Errorf("p of 0011 = %.4f, want 1/3 ± 0.025", p)
	}
	steps := append(make([]float64, 10), slices.Repeat([]float64{1}, 10)...)
	q := bestCut(distances(steps, 1), identity(0, 20), 1).q
	if p := permutationP(distances(steps, 1), []int{0, 20}, q, rng, Options{MinSize: 1}); p != 1.0/101 {
		t.Errorf("p of 0…01…1 = %v, want 1/101", p)
	}
	// a constant series: every shuffle ties the candidate
	if p := permutationP(distances(make([]float64, 8), 1), []int{0, 8}, 0, rng, Options{}); p != 1 {
		t.Errorf("p of a constant series = %v, want 1", p)
	}
}

// TestEDivisive checks whole searches whose answers are certain, among
// them MongoDB's tests of e_divisive (0×1000 then 1×1000 splits at 1000;
// three levels split at the larger step first), scaled down.
func TestEDivisive(t *testing.T) {
	t.Parallel()
	rep := func(v float64, n int) []float64 { return slices.Repeat([]float64{v}, n) }
	tests := []struct {
		name string
		xs   []float64
		o    Options
		want []int // in the order found
	}{
		{"one step", slices.Concat(rep(0, 100), rep(1, 100)), Options{}, []int{100}},
		{"three levels", slices.Concat(rep(0, 30), rep(1, 30), rep(20, 30)), Options{Scale: values}, []int{60, 30}},
		{"constant", rep(7, 30), Options{}, nil},
		{"too short", []float64{1, 9, 9}, Options{}, nil},
		{"four values cannot pass", []float64{0, 0, 1, 1}, Options{MinSize: 1}, nil},
		{"too few permutations to pass", slices.Concat(rep(0, 10), rep(1, 10)), Options{Permutations: 10}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []int
			for _, s := range eDivisive(scaled(tt.xs, tt.o.Scale), rand.New(rand.NewPCG(1, 2)), tt.o) {
				got = append(got, s.Index)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("splits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEDivisiveSeeded checks that one seed gives one answer.
func TestEDivisiveSeeded(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	xs := make([]float64, 40)
	for i := range xs {
		xs[i] = rng.NormFloat64() + float64(i/20)*0.8
	}
	a := eDivisive(xs, rand.New(rand.NewPCG(1, 2)), Options{})
	b := eDivisive(xs, rand.New(rand.NewPCG(1, 2)), Options{})
	if diff := cmp.Diff(a, b); diff != "" || len(a) == 0 {
		t.Errorf("two searches with one seed differ or found nothing (-first +second):\n%s", diff)
	}
}

func BenchmarkEDivisive30(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	xs := make([]float64, 30)
	for i := range xs {
		xs[i] = rng.NormFloat64()
	}
	for b.Loop() {
		eDivisive(xs, rng, Options{})
	}
}

// TestMinRuns holds MinRuns, and the rate it rests on, to the test they
// speak for: the clearest change there is (half the runs at 0, half at 1)
// is found, over 200 seeds' permutations, as often as findRate says
// (within four standard errors), in MinRuns runs (more often than not)
// and in one fewer (less often), at one series' 0.05, at ten series'
// share of it, and at 0.01 with 999 permutations.
func TestMinRuns(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		o    Options
		want int
	}{{Options{}, 8}, {Options{}.PerSeries(10), 12}, {Options{Significance: 0.01, Permutations: 999}, 10}} {
		if got := tt.o.MinRuns(); got != tt.want {
			t.Errorf("MinRuns at %g = %d, want %d", tt.o.significance(), got, tt.want)
		}
		for _, n := range []int{tt.want - 1, tt.want} {
			xs := make([]float64, n)
			for i := n / 2; i < n; i++ {
				xs[i] = 1
			}
			const seeds = 200
			k := 0
			for seed := range uint64(seeds) {
				if len(eDivisive(xs, rand.New(rand.NewPCG(seed, 7)), tt.o)) > 0 {
					k++
				}
			}
			rate := tt.o.findRate(n)
			if se := math.Sqrt(rate * (1 - rate) / seeds); math.Abs(float64(k)/seeds-rate) > 4*se+0.01 {
				t.Errorf("significance %g, %d runs: found in %d of %d seeds, findRate says %.3f", tt.o.significance(), n, k, seeds, rate)
			}
			if (n == tt.want) != (rate >= 0.5) {
				t.Errorf("significance %g, %d runs: findRate %.3f on the wrong side of one half for MinRuns %d", tt.o.significance(), n, rate, tt.want)
			}
		}
	}
}
