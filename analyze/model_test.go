package analyze

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUpTo: the galloping count agrees with a plain count wherever the
// previous answer left it, for any query order.
func TestUpTo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 100, 1000} {
		a := make([]int64, n)
		for i := range a {
			a[i] = rng.Int64N(50) // duplicates too
		}
		slices.Sort(a)
		at := 0
		for q := range 2000 {
			v := rng.Int64N(60) - 5
			if q%2 == 0 { // also queries that move a little
				v = int64(q/40) - 5
			}
			want := 0
			for _, x := range a {
				if x <= v {
					want++
				}
			}
			if got := upTo(a, v, &at); got != want {
				t.Fatalf("n=%d: upTo(%d) = %d, want %d", n, v, got, want)
			}
		}
	}
}
