package analyze

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/connectbyjbrh/ratecheck/method"
)

// TestHyperUpperTail holds the exact test's p-values to hand-computed
// hypergeometric tails.
func TestHyperUpperTail(t *testing.T) {
	for _, c := range []struct {
		N, K, n, x int
		want       float64
	}{
		{24, 6, 6, 6, 1.0 / 134596},      // 6 forged admitted, 18 plain refused: 1/C(24,6)
		{24, 10, 6, 6, 210.0 / 134596},   // and 4 plain admitted: C(10,6)/C(24,6)
		{16, 4, 4, 4, 1.0 / 1820},        // 4 per header: 1/C(16,4)
		{12, 3, 3, 3, 1.0 / 220},         // 3 per header cannot reach 0.01/3
		{10, 5, 5, 3, 126.0 / 252},       // (C(5,3)C(5,2) + C(5,4)C(5,1) + 1)/C(10,5)
		{8, 2, 4, 1, 1 - 6.0/28*15.0/15}, // 1 − C(6,4)/C(8,4) = 1 − 15/70
		{8, 8, 4, 4, 1},                  // everything admitted: no evidence
		{8, 0, 4, 1, 0},                  // nothing admitted: x=1 impossible
	} {
		if got := hyperUpperTail(c.N, c.K, c.n, c.x); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("P(X ≥ %d | N=%d K=%d n=%d) = %.15g, want %.15g", c.x, c.N, c.K, c.n, got, c.want)
		}
	}
}

// spoofRun judges spoof probes of one random order: admit says whether
// slot i (of kind k: 0 plain, h a header) is admitted.
func spoofRun(seed uint64, admit func(i, kind int) bool) (string, string) {
	c := &spoofCheck{}
	for i, k := range method.SpoofOrder(seed, 3) {
		stream := []string{method.StreamSpoofControl, method.StreamSpoofXForwardedFor, method.StreamSpoofForwarded, method.StreamSpoofXRealIP}[k]
		t := &c.plain
		if k > 0 {
			h := method.ForgedHeader(stream)
			if c.forged == nil {
				c.forged = map[string]*probeCount{}
			}
			if c.forged[h] == nil {
				c.forged[h] = &probeCount{}
				c.order = append(c.order, h)
			}
			t = c.forged[h]
		}
		if admit(i, k) {
			t.admitted++
		} else {
			t.refused++
		}
	}
	return c.judge(&evidence{primary: srcA})
}

// TestSpoofTwoSample: a limiter that ignores the headers (a bucket giving
// back one request every few slots, or admitting a share at random) fails
// the check at most at its stated rate over many seeds; a trusted header
// fails it every time; nothing refused is inconclusive.
func TestSpoofTwoSample(t *testing.T) {
	const seeds = 4000
	for _, every := range []int{5, 15, 36} { // a bucket refilling one per `every` slots
		fails := 0
		for seed := range uint64(seeds) {
			if v, _ := spoofRun(seed+1, func(i, _ int) bool { return i%every == 0 }); v == Fail {
				fails++
			}
		}
		if limit := seeds*spoofAlpha + 3*math.Sqrt(seeds*spoofAlpha); float64(fails) > limit {
			t.Errorf("bucket every %d slots: %d of %d seeds failed, above %g", every, fails, seeds, limit)
		}
	}
	for _, q := range []float64{0.1, 0.3, 0.6} { // alike, at random
		r := rand.New(rand.NewPCG(7, 7))
		fails := 0
		for seed := range uint64(seeds) {
			if v, _ := spoofRun(seed+1, func(int, int) bool { return r.Float64() < q }); v == Fail {
				fails++
			}
		}
		if limit := seeds*spoofAlpha + 3*math.Sqrt(seeds*spoofAlpha); float64(fails) > limit {
			t.Errorf("alike at %g: %d of %d seeds failed, above %g", q, fails, seeds, limit)
		}
	}
	for seed := range uint64(200) {
		// X-Forwarded-For trusted: its probes admitted, the rest refused
		// but for a refill every 15 slots.
		if v, d := spoofRun(seed+1, func(i, k int) bool { return k == 1 || i%15 == 0 }); v != Fail {
			t.Fatalf("seed %d: trusted header %s: %s", seed+1, v, d)
		}
	}
	if v, d := spoofRun(1, func(int, int) bool { return true }); v != Inconclusive {
		t.Errorf("nothing refused: %s: %s", v, d)
	}
	if v, d := spoofRun(1, func(int, int) bool { return false }); v != Pass {
		t.Errorf("everything refused: %s: %s", v, d)
	}
}

// TestRollingNeedsAWindowsWorth: five requests from one address are no
// evidence of a rolling limit of 120: inconclusive, not a pass.
func TestRollingNeedsAWindowsWorth(t *testing.T) {
	e := &evidence{surfaceRun: &surfaceRun{L: 120, W: synthW}, sd: &SurfaceDetail{}, primary: srcA}
	if v, d := (&rollingCheck{judgedN: 5}).judge(e); v != Inconclusive {
		t.Errorf("5 requests: %s: %s", v, d)
	}
	if v, d := (&rollingCheck{judgedN: 300}).judge(e); v != Pass {
		t.Errorf("300 requests: %s: %s", v, d)
	}
}

// TestSpoofFewAdmittedByChance: a correct target under faults left the
// limit address room for 7 of the 23 answered probes, and the 7 happened
// to be forged (4 of 6 X-Real-IP, 3 of 3 X-Forwarded-For, 0 of 14 plain:
// a CI run). Under the null that happens to some header in about one
// run in a few hundred (p = 0.0015 and 0.0031), so it is no proof of a
// trusted header at the check's false-alarm rate; every forged probe of
// a header admitted against every plain one refused, at the plan's 10
// and 30, is.
func TestSpoofFewAdmittedByChance(t *testing.T) {
	t.Parallel()
	c := &spoofCheck{plain: probeCount{refused: 14}, order: []string{"X-Real-IP", "X-Forwarded-For", "Forwarded"},
		forged: map[string]*probeCount{"X-Real-IP": {4, 2}, "X-Forwarded-For": {3, 0}, "Forwarded": {0, 5}}}
	if v, d := c.judge(&evidence{primary: srcA}); v == Fail {
		t.Errorf("7 admitted of 23, all forged: %s: %s", v, d)
	}
	c = &spoofCheck{plain: probeCount{refused: 30}, order: []string{"X-Real-IP", "X-Forwarded-For", "Forwarded"},
		forged: map[string]*probeCount{"X-Real-IP": {10, 0}, "X-Forwarded-For": {0, 10}, "Forwarded": {0, 10}}}
	if v, d := c.judge(&evidence{primary: srcA}); v != Fail {
		t.Errorf("X-Real-IP trusted: %s: %s", v, d)
	}
}
