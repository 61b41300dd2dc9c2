package jitter

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// serverFleet is what a harness records of n client programs released by
// one shared 429: arrival and answer times only, no drawn delays (Delay
// −1). Each client waits delay(k, u) after its previous answer, plus its
// host's noise: a reaction of up to react (an interpreter's wake-up, in
// the same order every wave when ordered, as lockstep processes arrive).
func serverFleet(n, attempts int, seed uint64, delay func(k int, u float64) time.Duration, react time.Duration, ordered bool) *decode.Input {
	rng := rand.New(rand.NewPCG(seed, 0x5e7e))
	in := decode.NewInput()
	release := int64(time.Second)
	for c := range n {
		t, end := release-int64(rng.IntN(int(time.Second))), release+int64(rng.IntN(int(3*time.Millisecond))) // the barrier holds the first
		in.Add(archive.Labels{Surface: method.REST, Source: "127.0.0.1", Stream: method.StreamFleet,
			Fleet: &archive.FleetTag{Client: c + 1, Request: 1, Attempt: 1, Delay: -1}}, t, end, 429, nil)
		offset := react * time.Duration(c) / time.Duration(n) // ordered: the same place every wave
		for a := 2; a <= attempts; a++ {
			r := time.Duration(rng.Int64N(int64(react) + 1))
			if ordered {
				r, offset = offset, 0 // the spread holds: each wave lands over the same 95 ms, in the same order
			}
			t = end + int64(delay(a-2, rng.Float64())+r)
			end = t + int64(time.Millisecond)
			in.Add(archive.Labels{Surface: method.REST, Source: "127.0.0.1", Stream: method.StreamFleet,
				Fleet: &archive.FleetTag{Client: c + 1, Request: 1, Attempt: a, Delay: -1}}, t, end, 429, nil)
		}
	}
	return in
}

// TestProgramsCalibration: client programs judged from the server's
// records alone (ranges and ε from the data) keep the fleet's false-alarm
// rate: full-jitter programs with up to 40 ms of host noise fail at most
// 1 % of 500 seeds (judged at calibrationAlpha with the fewest
// simulations, see fewestSims; 3 fail; -jitter.calibration.runs sets how
// many), and programs retrying after a fixed interval, arriving spread
// over 95 ms in the same order every wave, fail every seed with a
// re-collision ten times what independent jitter gives (they re-collide
// in full, twenty times). Their seeds differ only in when each first
// request reached the barrier and was answered (within 3 ms of the
// release) and in the simulations' draws: seeds 0–19 are judged as the
// full-jitter ones are, and seed 0 with the defaults (α 1e-4, 159 999
// simulated fleets a wave, which cost as much as 190 seeds of full-jitter
// programs; cmd/ratecheck's TestFleetClientCmdPythonFixedInterval runs
// the command itself against the Python one).
func TestProgramsCalibration(t *testing.T) {
	t.Parallel()
	if testing.Short() || raceEnabled {
		t.Skip("500 simulated fleets judged one after another, checked by the plain run")
	}
	full := func(k int, u float64) time.Duration {
		return time.Duration(u * float64(min(8*time.Second, 500*time.Millisecond<<k)))
	}
	fixed := func(int, float64) time.Duration { return 2 * time.Second } // as examples/clients/python/fixed_interval.py
	cfg := Config{Strategy: "full", Attempts: 4, Clients: 50, Requests: 1, Sims: fewestSims, Alpha: calibrationAlpha}
	var mu sync.Mutex
	failed := 0
	var wg sync.WaitGroup
	seeds := make(chan uint64)
	for range 2 {
		wg.Go(func() {
			for seed := range seeds {
				c := cfg
				c.Seed = seed
				if rep := Judge(serverFleet(50, 4, seed, full, 40*time.Millisecond, false), c); rep.Verdict != analyze.Pass {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	n := seedsOr(500)
	for seed := range uint64(n) {
		seeds <- seed
	}
	close(seeds)
	wg.Wait()
	if failed > atMostOnePercent(n) {
		t.Errorf("%d of %d full-jitter fleets failed, want at most 1%%", failed, n)
	}
	t.Logf("%d of %d full-jitter client fleets failed", failed, n)
	fixedFails := func(what string, seed uint64, c Config) {
		c.Seed = seed
		rep := Judge(serverFleet(50, 4, seed, fixed, 95*time.Millisecond, true), c)
		if rep.Verdict != analyze.Fail || len(rep.Waves) == 0 {
			t.Fatalf("seed %d, %s: fixed-interval fleet %s, want fail", seed, what, rep.Verdict)
		}
		if w := rep.Waves[0]; w.RecollisionRate < 10*w.RecollisionMax {
			t.Errorf("seed %d, %s: re-collision %.2f, want at least ten times the %.3f of independent jitter", seed, what, w.RecollisionRate, w.RecollisionMax)
		}
	}
	for seed := range uint64(20) {
		fixedFails("fewest simulations", seed, cfg)
	}
	c := cfg
	c.Sims, c.Alpha = 0, 0
	fixedFails("the defaults", 0, c)
}

// TestProgramsInconclusive: programs that made fewer requests than asked,
// or none, and a target that stalled past ε, make the verdict
// inconclusive, naming what was missing.
func TestProgramsInconclusive(t *testing.T) {
	t.Parallel()
	full := func(k int, u float64) time.Duration { return time.Duration(u * float64(500*time.Millisecond<<k)) }
	in := serverFleet(10, 4, 1, full, 0, false)
	cfg := Config{Strategy: "full", Attempts: 4, Clients: 12, Requests: 1, Seed: 1}
	rep := Judge(in, cfg)
	if c := checkOf(rep, "clients"); rep.Verdict != analyze.Inconclusive || c.Verdict != analyze.Inconclusive || c.Detail == "" {
		t.Errorf("two clients missing: verdict %s, clients %+v", rep.Verdict, c)
	}
	cfg.Clients, cfg.Stall = 10, time.Second
	rep = Judge(in, cfg)
	if c := checkOf(rep, "target"); rep.Verdict != analyze.Inconclusive || c.Verdict != analyze.Inconclusive {
		t.Errorf("a 1s stall: verdict %s, target %+v", rep.Verdict, c)
	}
	cfg.Stall = time.Millisecond
	if rep := Judge(in, cfg); rep.Verdict != analyze.Pass {
		t.Errorf("all there, no stall: %s %+v", rep.Verdict, rep.Checks)
	}
	rep = Judge(decode.NewInput(), Config{Clients: 5, Requests: 3})
	if c := checkOf(rep, "clients"); rep.Verdict != analyze.Inconclusive || c.Verdict != analyze.Inconclusive {
		t.Errorf("no client at all: verdict %s, %+v", rep.Verdict, rep.Checks)
	}
}

// TestProgramsStalledWaves: a fixed-interval fleet (unlabelled, judged
// from the server's records alone) breaks its waves' bounds and fails;
// judged as if the target had stalled longer than ε during its later attempts, the
// same records leave the jitter check inconclusive, saying the stall could
// have gathered the arrivals, and the run with it: arrival times are the
// host's, not the clients'.
func TestProgramsStalledWaves(t *testing.T) {
	t.Parallel()
	fixed := func(int, float64) time.Duration { return 2 * time.Second }
	in := serverFleet(50, 4, 1, fixed, 95*time.Millisecond, true)
	cfg := Config{Strategy: "full", Attempts: 4, Clients: 50, Requests: 1, Sims: fewestSims, Alpha: calibrationAlpha, Seed: 1, Stall: time.Millisecond}
	if rep := Judge(in, cfg); rep.Verdict != analyze.Fail || checkOf(rep, "jitter").Verdict != analyze.Fail {
		t.Fatalf("no stall: verdict %s, jitter %+v, want fail", rep.Verdict, checkOf(rep, "jitter"))
	}
	cfg.Stall = time.Second
	rep := Judge(in, cfg)
	if c := checkOf(rep, "jitter"); rep.Verdict != analyze.Inconclusive || c.Verdict != analyze.Inconclusive || !strings.Contains(c.Detail, "does not prove the clients at fault") {
		t.Errorf("a 1s stall: verdict %s, jitter %+v, want inconclusive, the stall named", rep.Verdict, c)
	}
}

// TestProgramsPowerless: where ε is as wide as the retries (a host that
// wrote the shared 429s over seconds makes it so when it comes from the
// data), independent jitter collides in full and so would a fleet in
// lockstep: the jitter check is inconclusive, never a pass of the
// fixed-interval programs (a fresh clone's suite, at a load of 15 on two
// cores, passed them with ε 6.55 s, collision ratio 1.00).
func TestProgramsPowerless(t *testing.T) {
	t.Parallel()
	fixed := func(int, float64) time.Duration { return 2 * time.Second }
	full := func(k int, u float64) time.Duration { return time.Duration(u * float64(500*time.Millisecond<<k)) }
	for _, tc := range []struct {
		name  string
		delay func(int, float64) time.Duration
		eps   time.Duration
		want  string
	}{
		{"fixed interval, ε 6.55s", fixed, 6550 * time.Millisecond, analyze.Inconclusive},
		{"full jitter, ε 6.55s", full, 6550 * time.Millisecond, analyze.Inconclusive},
		{"fixed interval, ε 50ms", fixed, 50 * time.Millisecond, analyze.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Strategy: "full", Attempts: 4, Clients: 50, Requests: 1, Seed: 1, Epsilon: tc.eps}
			rep := Judge(serverFleet(50, 4, 1, tc.delay, 95*time.Millisecond, true), cfg)
			if c := checkOf(rep, "jitter"); c.Verdict != tc.want || rep.Verdict != tc.want {
				t.Errorf("verdict %s, jitter %+v; want %s", rep.Verdict, c, tc.want)
			}
		})
	}
}
