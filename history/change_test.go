package history

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMannWhitney checks the null distribution of U against counts by
// hand: of the C(4,2) = 6 ways to rank two values among four, U is 0, 1,
// 2, 2, 3, 4; of the C(6,3) = 20 for three among six, 1, 1, 2, 3, 3, 3,
// 3, 2, 1, 1 for U = 0 … 9.
func TestMannWhitney(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n, m int
		ways []float64
	}{
		{2, 2, []float64{1, 1, 2, 1, 1}},
		{3, 3, []float64{1, 1, 2, 3, 3, 3, 3, 2, 1, 1}},
		{1, 3, []float64{1, 1, 1, 1}},
		{3, 1, []float64{1, 1, 1, 1}},
	}
	for _, tt := range tests {
		total := 0.0
		for _, w := range tt.ways {
			total += w
		}
		want := make([]float64, len(tt.ways))
		for i, w := range tt.ways {
			want[i] = w / total
		}
		if diff := cmp.Diff(want, mannWhitney(tt.n, tt.m), approx); diff != "" {
			t.Errorf("mannWhitney(%d, %d) (-want +got):\n%s", tt.n, tt.m, diff)
		}
	}
}

// TestShiftRank checks the ranks that bound the Hodges–Lehmann interval:
// for 10 and 10 values at 95 % the tables of the Mann–Whitney test give
// 23 as the largest U with P(U ≤ 23) ≤ 0.025, so the interval runs from
// the 24th difference to the 77th; for 3 and 3 at 80 %, P(U ≤ 1) = 2/20
// = 0.1, so from the 2nd to the 8th; at 95 % even P(U = 0) = 0.05 is too
// much, and the interval is the whole range. Past 100 values the normal
// approximation agrees with the exact count within one rank.
func TestShiftRank(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n, m int
		conf float64
		want int
	}{
		{10, 10, 0.95, 23},
		{3, 3, 0.80, 1},
		{3, 3, 0.95, 0},
		{1, 1, 0.95, 0},
	}
	for _, tt := range tests {
		if got := shiftRank(tt.n, tt.m, tt.conf); got != tt.want {
			t.Errorf("shiftRank(%d, %d, %v) = %d, want %d", tt.n, tt.m, tt.conf, got, tt.want)
		}
	}
	for _, nm := range [][2]int{{50, 50}, {20, 80}, {45, 55}, {10, 30}} {
		exact, normal := exactRank(nm[0], nm[1], 0.95), normalRank(nm[0], nm[1], 0.95)
		if d := exact - normal; d < -1 || d > 1 {
			t.Errorf("n %d m %d: exact rank %d, normal %d", nm[0], nm[1], exact, normal)
		}
	}
}

// TestDescribe checks medians, the shift and its interval by hand:
// y − x over x = 1, 2, 3 and y = 4, 5, 6 are 1, 2, 2, 3, 3, 3, 4, 4, 5,
// median 3; at 80 % the 2nd to the 8th, 2 to 4. y = −9, 1, 11 over
// x = 0, 1, 2: −11, −10, −9, −1, 0, 1, 9, 10, 11, the 2nd to the 8th
// straddle 0.
func TestDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		x, y []float64
		conf float64
		want Change
	}{
		{"up", []float64{1, 2, 3}, []float64{4, 5, 6}, 0.8, Change{Before: 2, After: 5, Size: 3, SizeLow: 2, SizeHigh: 4, Direction: Up}},
		{"down, whole range", []float64{4, 5, 6}, []float64{1, 2, 3}, 0.95, Change{Before: 5, After: 2, Size: -3, SizeLow: -5, SizeHigh: -1, Direction: Down}},
		{"spread", []float64{0, 1, 2}, []float64{-9, 1, 11}, 0.8, Change{Before: 1, After: 1, Size: 0, SizeLow: -10, SizeHigh: 10, Direction: none}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, describe(tt.x, tt.y, tt.conf), approx); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestMidRanks checks ties share their ranks.
func TestMidRanks(t *testing.T) {
	t.Parallel()
	got := midRanks([]float64{3, 1, 3, 2, 3})
	if diff := cmp.Diff([]float64{4, 1, 4, 2, 4}, got); diff != "" {
		t.Errorf("MidRanks (-want +got):\n%s", diff)
	}
}

// TestDetect checks a two-step series end to end: the changes in order,
// the segments either side of each, the shift in the values' own units.
func TestDetect(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	xs := make([]float64, 45)
	for i := range xs {
		xs[i] = 10 + rng.NormFloat64()*0.5
		switch {
		case i >= 30:
			xs[i] += 2
		case i >= 15:
			xs[i] += 5
		}
	}
	got := detect(xs, P50, rand.New(rand.NewPCG(1, 2)), Options{})
	var at []int
	for _, c := range got {
		at = append(at, c.Index)
	}
	if diff := cmp.Diff([]int{15, 30}, at); diff != "" {
		t.Fatalf("change points (-want +got):\n%s", diff)
	}
	up, down := got[0], got[1]
	if up.Direction != Up || up.SizeLow > 5 || up.SizeHigh < 5 || math.Abs(up.Before-Median(xs[:15])) > 0 || up.After != Median(xs[15:30]) {
		t.Errorf("first change %+v, want up by 5 between the first and second thirds", up)
	}
	if down.Direction != Down || down.SizeLow > -3 || down.SizeHigh < -3 || down.Before != Median(xs[15:30]) || down.After != Median(xs[30:]) {
		t.Errorf("second change %+v, want down by 3 between the second and last thirds", down)
	}
	if !slices.IsSortedFunc(got, func(a, b Change) int { return a.Index - b.Index }) || up.P > 0.05 || down.P > 0.05 {
		t.Errorf("changes %+v: want in order, each p ≤ 0.05", got)
	}
}

// steps returns n values per level, each level's values spread evenly by
// ±spread around it (the same spread in every segment, in a shuffled
// order drawn from seed), so that each change between levels is clear
// to E-divisive however small.
func steps(n int, spread float64, seed uint64, levels ...float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	var xs []float64
	for _, l := range levels {
		seg := make([]float64, n)
		for i := range seg {
			seg[i] = l + spread*(2*float64(i)/float64(n-1)-1)
		}
		rng.Shuffle(n, func(i, j int) { seg[i], seg[j] = seg[j], seg[i] })
		xs = append(xs, seg...)
	}
	return xs
}

// TestFloor: a change that E-divisive finds is reported only when its
// shift reaches both the relative and the absolute floor of its figure. A
// p50 of 0.2 ms moving by 30 µs (15 %) is under the latencies' 0.1 ms;
// a p99 of 50 ms moving by 1 ms (2 %) is under 5 %; a knee of 1500/s
// falling by 500/s is a change. Where a change under the floor sits
// between two others, its segments merge and the change after it is
// described against the whole of them. Each series shows its changes
// with no floor, so that none passes for lack of a change to find.
func TestFloor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		figure Figure
		xs     []float64
		raw    []int // the changes with no floor
		want   []int // with the figure's default floor
	}{
		{"p50 by 30 µs", P50, steps(10, 0.004, 1, 0.20, 0.23), []int{10}, nil},
		{"p50 by 0.3 ms", P50, steps(10, 0.004, 2, 0.20, 0.50), []int{10}, []int{10}},
		{"p99 by 2 %", P99, steps(10, 0.1, 3, 50, 51), []int{10}, nil},
		{"p99 by 10 %", P99, steps(10, 0.1, 4, 50, 55), []int{10}, []int{10}},
		{"knee by a third", Knee, steps(5, 20, 5, 1500, 1000), []int{5}, []int{5}},
		{"knee by 1 % then a third", Knee, steps(10, 2, 6, 1500, 1515, 1000), []int{10, 20}, []int{20}},
		{"error rate by 0.05 points", ErrorRate, steps(10, 0.0001, 7, 0.010, 0.0105), []int{10}, nil},
		{"observed limit by 1", ObservedLimit, []float64{240, 240, 240, 240, 240, 240, 241, 241, 241, 241, 241, 241}, []int{6}, []int{6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			at := func(o Options) ([]int, []Change) {
				cs := detect(tt.xs, tt.figure, rand.New(rand.NewPCG(3, 4)), o)
				var ix []int
				for _, c := range cs {
					ix = append(ix, c.Index)
				}
				return ix, cs
			}
			raw, _ := at(Options{Floors: map[Figure]Floor{tt.figure: {}}})
			if diff := cmp.Diff(tt.raw, raw); diff != "" {
				t.Fatalf("changes with no floor (-want +got):\n%s", diff)
			}
			got, cs := at(Options{})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes over the default floor %+v (-want +got):\n%s", tt.figure.DefaultFloor(), diff)
			}
			from := 0
			for i, c := range cs {
				to := len(tt.xs)
				if i+1 < len(cs) {
					to = cs[i+1].Index
				}
				if c.Before != Median(tt.xs[from:c.Index]) || c.After != Median(tt.xs[c.Index:to]) {
					t.Errorf("change at %d: medians %g → %g, want those of the runs %d…%d and %d…%d", c.Index, c.Before, c.After, from, c.Index-1, c.Index, to-1)
				}
				from = c.Index
			}
		})
	}
}

// TestFloors: the defaults are 5 % and the figure's resolution; the
// observed limit has no relative floor; Options.Floors replaces a
// figure's floor, a zero one included.
func TestFloors(t *testing.T) {
	t.Parallel()
	want := map[Figure]Floor{P50: {0.05, 0.1}, P95: {0.05, 0.1}, P99: {0.05, 0.1}, ErrorRate: {0.05, 0.001}, Knee: {0.05, 1}, ObservedLimit: {0, 1}}
	for _, f := range figures {
		if got := f.DefaultFloor(); got != want[f] {
			t.Errorf("%s.DefaultFloor() = %+v, want %+v", f, got, want[f])
		}
	}
	if diff := cmp.Diff(map[Figure]Floor{P50: {0.1, 0.5}, P95: {0.1, 0.5}, P99: {0.1, 0.5}, ErrorRate: {0.1, 0.001}, Knee: {0.1, 20}, ObservedLimit: {0, 1}},
		Floors(0.1, 0.5, 20)); diff != "" {
		t.Errorf("Floors(0.1, 0.5, 20) (-want +got):\n%s", diff)
	}
	o := Options{Floors: map[Figure]Floor{P99: {}}}
	if o.floor(P99) != (Floor{}) || o.floor(P50) != P50.DefaultFloor() {
		t.Errorf("floors %+v, %+v: want P99's replaced by none, P50's the default", o.floor(P99), o.floor(P50))
	}
	c := Change{Before: 2, Size: 0.15}
	for _, tt := range []struct {
		floor Floor
		want  float64
	}{{Floor{}, math.Inf(1)}, {Floor{Relative: 0.05}, 1.5}, {Floor{Absolute: 0.1}, 1.5}, {Floor{Relative: 0.05, Absolute: 0.3}, 0.5}, {Floor{Relative: 0.15, Absolute: 0.1}, 0.5}} {
		if got := tt.floor.margin(c); math.Abs(got-tt.want) > 1e-12 && got != tt.want {
			t.Errorf("%+v.margin(%+v) = %g, want %g", tt.floor, c, got, tt.want)
		}
	}
}
