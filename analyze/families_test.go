package analyze

import (
	"math/rand/v2"
	"testing"
)

// TestCounterRoomAsFloat: a sliding-window counter decides in integers
// where it can, and always as the floating-point estimate does, ties
// included: exact ties (a request at a third, a half of the window), the
// requests either side of them, and random ones, at the contract's
// windows and at one too long for the integers.
func TestCounterRoomAsFloat(t *testing.T) {
	t.Parallel()
	float := func(prev, cur, limit int, off, W int64) bool {
		frac := float64(off) / float64(W)
		return float64(prev)*(1-frac)+float64(cur)+1 <= float64(limit)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	checked := 0
	for _, W := range []int64{6e9, 60e9, 3 * 60e9, 1 << 41, 999_999_937} {
		for range 20000 {
			limit := 1 + rng.IntN(300)
			prev, cur := rng.IntN(limit+2), rng.IntN(limit+1)
			offs := []int64{rng.Int64N(W)}
			// where prev·(W − off) = (limit − cur − 1)·W, and either side
			if room := int64(limit - cur - 1); prev > 0 && room >= 0 && room <= int64(prev) {
				tie := W - room*W/int64(prev)
				for d := int64(-2); d <= 2; d++ {
					if off := tie + d; off >= 0 && off < W {
						offs = append(offs, off)
					}
				}
			}
			for _, off := range offs {
				checked++
				if got, want := counterRoom(prev, cur, limit, off, W), float(prev, cur, limit, off, W); got != want {
					t.Fatalf("prev %d, cur %d, limit %d, %d into a window of %d: admits %v, the estimate in floating point says %v", prev, cur, limit, off, W, got, want)
				}
			}
		}
	}
	t.Logf("%d decisions", checked)
}

// TestReplicasTableEnds: the table of P(Binomial(n, 1/k) ≤ L − 1) that a
// replicas candidate grows ends (its tail set) within a bound of n, for
// every k the fit replays and every limit up to 1 000 (the observed
// limit of replicas is some multiple of L): a table whose last
// value was rounding that never fell below its floor (3 replicas of 484:
// 1.02e-12, every later step 0) grew without end,
// and a starved host's run of two replicas took the analysis to 4 GB.
func TestReplicasTableEnds(t *testing.T) {
	t.Parallel()
	for k := 2; k <= maxReplicas; k++ {
		for limit := 1; limit <= 1000; limit++ {
			r := newReplicas(k, limit)
			r.admitP(40 * k * (limit + 10))
			if !r.tail {
				t.Errorf("%d replicas of %d: no end of the table by n = %d (last %g)", k, limit, 40*k*(limit+10), r.cdf[len(r.cdf)-1])
			}
		}
	}
}
