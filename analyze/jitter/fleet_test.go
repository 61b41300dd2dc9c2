package jitter

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

const (
	jBase = 100 * time.Millisecond
	jCap  = time.Second
)

// fleet builds the first request of n clients driven into 429 together at
// t = 0: every attempt is refused after 1–3 ms, and retry k waits
// delay(k, u) with u drawn per client from seed.
func fleet(n, attempts int, seed uint64, delay func(k int, u float64) time.Duration) *decode.Input {
	return noisyFleet(n, attempts, seed, delay, 2*time.Millisecond)
}

// noisyFleet is fleet with each refusal taking 1 ms plus up to noise.
func noisyFleet(n, attempts int, seed uint64, delay func(k int, u float64) time.Duration, noise time.Duration) *decode.Input {
	rng := rand.New(rand.NewPCG(seed, 1))
	in := decode.NewInput()
	for c := range n {
		t := int64(rng.IntN(int(time.Millisecond)))
		for a := 1; a <= attempts; a++ {
			d := time.Duration(-1)
			if a > 1 {
				d = delay(a-2, rng.Float64())
				t += int64(d)
			}
			end := t + int64(time.Millisecond) + int64(rng.IntN(int(noise)))
			in.Add(archive.Labels{Surface: method.REST, Source: "127.0.0.2", Stream: method.StreamFleet,
				Fleet: &archive.FleetTag{Client: c, Request: 1, Attempt: a, Delay: max(d, 0)}}, t, end, 429, nil)
			t = end
		}
	}
	return in
}

func full(k int, u float64) time.Duration { return time.Duration(u * float64(ceiling(jBase, jCap, k))) }
func lockstep(k int, _ float64) time.Duration {
	return ceiling(jBase, jCap, k)
}
func plusMinus20(k int, u float64) time.Duration {
	return time.Duration(float64(ceiling(jBase, jCap, k)) * (1 + 0.2*(2*u-1)))
}

func jcfg(seed uint64) Config {
	return Config{Base: jBase, Cap: jCap, Attempts: 4, Alpha: 0.01, Sims: 400, Seed: seed}
}

func checkOf(rep *Report, name string) analyze.Check {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	return analyze.Check{}
}

// TestJitterFullPasses: a correct full-jitter fleet passes at least 99
// runs in 100.
func TestJitterFullPasses(t *testing.T) {
	t.Parallel()
	pass := 0
	var last *Report
	for seed := range uint64(100) {
		rep := Judge(fleet(100, 4, seed, full), jcfg(seed))
		if rep.Verdict == analyze.Pass {
			pass++
		} else {
			last = rep
		}
		if seed == 0 && (math.Abs(rep.CollisionRatio-1) > 0.3 || rep.RecollisionRate > 0.2 || len(rep.Waves) != 3) {
			t.Errorf("seed 0: collision ratio %.2f, re-collision %.2f, %d waves", rep.CollisionRatio, rep.RecollisionRate, len(rep.Waves))
		}
	}
	if pass < 99 {
		t.Errorf("full jitter passed %d runs in 100, want at least 99; a failing one: %+v", pass, last.Checks)
	}
}

// TestJitterLockstepAndNarrowJitterFail: clients in lockstep re-collide at
// every wave, and a ±20 % jitter breaks the collision bound.
func TestJitterLockstepAndNarrowJitterFail(t *testing.T) {
	t.Parallel()
	rep := Judge(fleet(100, 4, 1, lockstep), jcfg(1))
	if rep.Verdict != analyze.Fail || rep.RecollisionRate < 0.9 || rep.CollisionRatio < 5 || rep.KSP > 1e-6 {
		t.Errorf("lockstep: verdict %s, collision ratio %.2f, re-collision %.2f, KS p %.2g", rep.Verdict, rep.CollisionRatio, rep.RecollisionRate, rep.KSP)
	}
	rep = Judge(fleet(100, 4, 1, plusMinus20), jcfg(1))
	if rep.Verdict != analyze.Fail {
		t.Fatalf("±20%% jitter passed: %+v", rep.Checks)
	}
	for _, w := range rep.Waves {
		if w.Collisions <= w.Bound {
			t.Errorf("±20%% jitter wave %d: %d collisions within the bound %d", w.Attempt, w.Collisions, w.Bound)
		}
	}
}

// TestJitterHostNoise: refusals that take 1–200 ms, as on a starved host,
// neither split lockstep clients apart nor make full jitter fail: timing is
// judged on the clients' own schedule.
func TestJitterHostNoise(t *testing.T) {
	t.Parallel()
	rep := Judge(noisyFleet(100, 4, 1, lockstep, 200*time.Millisecond), jcfg(1))
	if rep.Verdict != analyze.Fail || rep.RecollisionRate < 0.99 {
		t.Errorf("lockstep: verdict %s, re-collision %.2f", rep.Verdict, rep.RecollisionRate)
	}
	pass := 0
	for seed := range uint64(20) {
		if Judge(noisyFleet(100, 4, seed, full, 200*time.Millisecond), jcfg(seed)).Verdict == analyze.Pass {
			pass++
		}
	}
	if pass < 19 {
		t.Errorf("full jitter on a noisy host passed %d runs in 20", pass)
	}
}

// TestJitterSharedRefusal: a fleet whose first attempts were not all
// refused was not driven into a shared 429, and says so.
func TestJitterSharedRefusal(t *testing.T) {
	t.Parallel()
	in := fleet(100, 4, 1, full)
	rep := Judge(in, jcfg(1))
	if c := checkOf(rep, "shared-429"); c.Verdict != analyze.Pass || !strings.Contains(c.Detail, "100 of 100 were refused") {
		t.Errorf("all refused: %+v", c)
	}
	// Injected faults on some first attempts (a 503, a reset) do not
	// mean that the budget came back.
	for i := range in.Records {
		if r := &in.Records[i]; in.Tables().Labels(r).Fleet.Attempt == 1 && in.Tables().Labels(r).Fleet.Client%10 == 1 {
			r.Code = 503
		}
	}
	rep = Judge(in, jcfg(1))
	if c := checkOf(rep, "shared-429"); c.Verdict != analyze.Pass || !strings.Contains(c.Detail, "90 of 100 were refused") || !strings.Contains(c.Detail, "10 met a fault") {
		t.Errorf("10 faults: %+v", c)
	}
	for i := range in.Records {
		if r := &in.Records[i]; in.Tables().Labels(r).Fleet.Attempt == 1 && in.Tables().Labels(r).Fleet.Client%4 == 0 {
			r.Code = 200
		}
	}
	rep = Judge(in, jcfg(1))
	if c := checkOf(rep, "shared-429"); c.Verdict != analyze.Fail || rep.Verdict != analyze.Fail || !strings.Contains(c.Detail, "25 of 100 clients' first attempts were admitted") || !strings.Contains(c.Detail, "--window") {
		t.Errorf("25 admitted: verdict %s, %+v", rep.Verdict, c)
	}
}

func TestKSAndBins(t *testing.T) {
	t.Parallel()
	grid := make([]float64, 200)
	for i := range grid {
		grid[i] = (float64(i) + 0.5) / 200
	}
	if p := ksUniform(grid); p < 0.99 {
		t.Errorf("KS p of a uniform grid = %v, want about 1", p)
	}
	half := make([]float64, 200)
	for i := range half {
		half[i] = 0.5 + grid[i]/2 // U(0.5, 1): equal jitter
	}
	if p := ksUniform(half); p > 1e-6 {
		t.Errorf("KS p of U(0.5,1) = %v, want about 0", p)
	}
	// Bins of 5 from 0: {0, 4} {5, 9} {10} | {30}; times before t0 fall in the first.
	if p := peakBin([]int64{-3, 0, 4, 5, 9, 10, 30}, 0, 5); p != 3 {
		t.Errorf("peakBin = %d, want 3", p)
	}
	if n := countCollisions([]int64{0, 5, 10, 30}, 5); n != 2 {
		t.Errorf("countCollisions = %d, want 2", n)
	}
}

// TestJitterDiscipline: a retried answer, an attempt over the cap and a
// client that does not slow down after repeated 429s each fail their check.
func TestJitterDiscipline(t *testing.T) {
	t.Parallel()
	ms := int64(time.Millisecond)
	in := decode.NewInput()
	rec := func(client, req, attempt int, start int64, code uint16) {
		in.Add(archive.Labels{Surface: method.REST, Source: "127.0.0.2", Stream: method.StreamFleet,
			Fleet: &archive.FleetTag{Client: client, Request: req, Attempt: attempt, Delay: -1}}, start*ms, (start+1)*ms, code, nil)
	}
	rec(1, 1, 1, 0, 404) // a 404 retried
	rec(1, 1, 2, 10, 404)
	for k := range 5 { // over the cap
		rec(2, 1, k+1, int64(10*k), 429)
	}
	rec(2, 2, 1, 42, 200) // no pause after repeated 429s
	rep := Judge(in, Config{Base: jBase, Cap: jCap, Attempts: 4, SlowDown: time.Second, Alpha: 0.01, Sims: 50})
	for _, name := range []string{"retry-answers", "attempt-cap", "slow-down"} {
		if c := checkOf(rep, name); c.Verdict != analyze.Fail {
			t.Errorf("%s: %s (%s), want fail", name, c.Verdict, c.Detail)
		}
	}
	if c := checkOf(rep, "retry-answers"); !strings.Contains(c.Detail, "an answer was retried 1 times") {
		t.Errorf("retry-answers: %s", c.Detail)
	}
}

// BenchmarkJitter measures judging a 1000-client fleet of 4 attempts.
func BenchmarkJitter(b *testing.B) {
	in := fleet(1000, 4, 1, full)
	cfg := jcfg(1)
	b.ResetTimer()
	for b.Loop() {
		Judge(in, cfg)
	}
}
