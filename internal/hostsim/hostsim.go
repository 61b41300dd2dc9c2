// Package hostsim simulates how a run's latencies come about on a host,
// quiet or busy (scheduling stalls, freezes, heavy tails), for the tests
// of the statistics that must not cry wolf on a noisy machine: compare's
// p99 test and history's change points. It is test support, not API.
package hostsim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Host is how a run's latencies come about against a loopback target: a
// plan (a share of the requests in verify's bursts in the first 0.66 s,
// the rest spread evenly), a lognormal body, queueing in the bursts, a heavy tail,
// waits for a CPU on a loaded host, and stalls of the host that hold every
// request in flight at one moment; add is the target's own added delay.
type Host struct {
	Span       time.Duration // of the plan (default 7 s, as verify's at a 6 s window)
	Bursts     float64       // share of the requests sent in bursts (verify: 0.85)
	Median     time.Duration // of the body
	Sigma      float64       // of the body's logarithm
	Queue      time.Duration // mean queueing of a request in a burst
	Tail       float64       // share of requests slowed by a Pareto factor
	Stalls     float64       // mean number of stalls per run
	Stall      time.Duration // the longest stall (the shortest is 2 ms)
	Freeze     float64       // chance of one freeze of the host in a run
	Frozen     time.Duration // the longest freeze (the shortest is 100 ms)
	AddLo, Add time.Duration // a uniform delay in [addLo, add) added to every answer
	// Wait is the share of requests that waited for a CPU (a host whose
	// cores other work keeps busy), each for a uniform delay in [0, Waited).
	Wait   float64
	Waited time.Duration
	// Decide is how long the client's own work between two stages of a
	// run takes on this host: from the plan's last answer to the first
	// follow-up probe (verify analyzes the plan before it follows up).
	Decide time.Duration
	// Fixed are stalls every run has, beside those drawn (DrawStalls): a
	// test's stall at a moment of the plan it means.
	Fixed []Stall
}

// Steady is a host that h runs a constant-rate plan on (an attack
// profile): requests spread evenly over a minute, no bursts.
func Steady(h Host) Host { h.Bursts, h.Span = 0, time.Minute; return h }

// Four hosts: a quiet one, a busy 2-core VM shared with other work
// (stalls of up to 30 ms, and in one run in ten a freeze of up to 1 s),
// a loaded one (the CI machine running the rest of the suite beside the
// run) and a starved one.
var (
	// Quiet is a quiet host.
	Quiet = Host{Bursts: 0.85, Median: 300 * time.Microsecond, Sigma: 0.6, Queue: time.Millisecond, Tail: 0.01, Stalls: 1, Stall: 10 * time.Millisecond}
	// Busy is a busy 2-core VM shared with other work.
	Busy = Host{Bursts: 0.85, Median: 500 * time.Microsecond, Sigma: 0.8, Queue: time.Millisecond, Tail: 0.02, Stalls: 4, Stall: 30 * time.Millisecond,
		Freeze: 0.1, Frozen: time.Second}
	// Loaded is a 2-core machine running a test suite beside the run, as
	// measured there at a 4 s window (latencies p50 12 ms, p90 72 ms, p99
	// 125 ms: 0.3, 1.8 and 3 % of the window; 0.07 W from the plan's last
	// answer to the first follow-up probe), scaled to verify's 6 s window
	// of the simulations: p50 18 ms, p90 108 ms, p99 180 ms (a fifth of the
	// requests wait for a CPU, up to 180 ms), stalls of up to 60 ms, and
	// 420 ms to decide a follow-up.
	Loaded = Host{Bursts: 0.85, Median: 12 * time.Millisecond, Sigma: 0.6, Queue: 3 * time.Millisecond, Tail: 0.01, Stalls: 6, Stall: 60 * time.Millisecond,
		Wait: 0.2, Waited: 180 * time.Millisecond, Decide: 420 * time.Millisecond}
	// Starved is a host whose CPUs are given to other work for seconds
	// at a time, as a fresh clone's suite saw beside two CPU hogs at a 4 s
	// window (p99 1.6–1.9 s, two fifths of the window), scaled to 6 s: two
	// requests in five wait for a CPU, up to 2.4 s, stalls last up to
	// 300 ms, and a follow-up is decided a second after the plan's last
	// answer. No family should be decided from such a run, and no verdict
	// should be wrong.
	Starved = Host{Bursts: 0.85, Median: 40 * time.Millisecond, Sigma: 0.8, Queue: 20 * time.Millisecond, Tail: 0.02, Stalls: 6, Stall: 300 * time.Millisecond,
		Wait: 0.4, Waited: 2400 * time.Millisecond, Decide: time.Second}
)

// Run draws one run of n requests: latencies and send times, in send
// order.
func (h Host) Run(rng *rand.Rand, n int) (lat, sent []time.Duration) {
	span := cmp.Or(h.Span, 7*time.Second)
	// verify's plan: the onset burst, then two phases of probes, all in
	// the first 0.66 s, then sparse probes to the end.
	phases := []struct {
		from, to time.Duration
		share    float64
	}{{0, 120 * time.Millisecond, 0.49}, {220 * time.Millisecond, 440 * time.Millisecond, 0.24}, {440 * time.Millisecond, 660 * time.Millisecond, 0.27}}
	inBurst := make([]bool, n)
	sent = make([]time.Duration, n)
	for i := range sent {
		if rng.Float64() >= h.Bursts {
			sent[i] = time.Duration(rng.Int64N(int64(span)))
			continue
		}
		u := rng.Float64()
		for _, ph := range phases {
			if u -= ph.share; u < 0 || ph.from == 440*time.Millisecond {
				sent[i] = ph.from + time.Duration(rng.Int64N(int64(ph.to-ph.from)))
				break
			}
		}
		inBurst[i] = true
	}
	// In send order: each send time with its burst flag in the low bit,
	// sorted as plain integers, not through a comparison of indices.
	keys := make([]int64, n)
	for i, s := range sent {
		keys[i] = int64(s) << 1
		if inBurst[i] {
			keys[i] |= 1
		}
	}
	slices.Sort(keys)
	for i, k := range keys {
		sent[i], inBurst[i] = time.Duration(k>>1), k&1 == 1
	}
	lat = make([]time.Duration, n)
	for i := range lat {
		lat[i] = h.draw(rng, inBurst[i])
	}
	stall := func(at, d time.Duration) { // every request in flight waits for its end
		for i, s := range sent {
			if s <= at+d && s+lat[i] >= at {
				lat[i] = max(lat[i], at+d-s)
			}
		}
	}
	for k := poisson(rng, h.Stalls); k > 0; k-- {
		stall(time.Duration(rng.Int64N(int64(span))), 2*time.Millisecond+time.Duration(rng.Int64N(int64(h.Stall))))
	}
	if rng.Float64() < h.Freeze {
		stall(time.Duration(rng.Int64N(int64(span))), 100*time.Millisecond+time.Duration(rng.Int64N(int64(h.Frozen-100*time.Millisecond))))
	}
	return lat, sent
}

// poisson draws from a Poisson distribution of the given mean.
func poisson(rng *rand.Rand, mean float64) int {
	k, p, l := 0, rng.Float64(), math.Exp(-mean)
	for p > l {
		k++
		p *= rng.Float64()
	}
	return k
}

// A Stall is a moment the host held every request in flight: from At for
// D.
type Stall struct{ At, D time.Duration }

// DrawStalls draws the stalls and the freeze of one run of the given span,
// as Run does, for a caller that draws its requests' latencies one by one
// (Latency): a plan whose later streams wait for earlier answers.
func (h Host) DrawStalls(rng *rand.Rand, span time.Duration) []Stall {
	out := slices.Clone(h.Fixed)
	for k := poisson(rng, h.Stalls); k > 0; k-- {
		out = append(out, Stall{time.Duration(rng.Int64N(int64(span))), 2*time.Millisecond + time.Duration(rng.Int64N(int64(h.Stall)))})
	}
	if rng.Float64() < h.Freeze {
		out = append(out, Stall{time.Duration(rng.Int64N(int64(span))), 100*time.Millisecond + time.Duration(rng.Int64N(int64(h.Frozen-100*time.Millisecond)))})
	}
	return out
}

// Latency draws the latency of one request sent at sent (in a burst, or
// not) on a run with the given stalls: the body, queueing in a burst, the
// heavy tail and the target's added delay as Run draws them, then held to
// the end of every stall it was in flight at.
func (h Host) Latency(rng *rand.Rand, stalls []Stall, sent time.Duration, inBurst bool) time.Duration {
	lat := h.draw(rng, inBurst)
	for _, st := range stalls {
		if sent <= st.At+st.D && sent+lat >= st.At {
			lat = max(lat, st.At+st.D-sent)
		}
	}
	return lat
}

// draw is one request's latency before any stall: the lognormal body,
// queueing in a burst, the heavy tail, a wait for a CPU and the target's
// added delay (a host without waits draws nothing for them, so its runs
// are what they were before hosts had them).
func (h Host) draw(rng *rand.Rand, inBurst bool) time.Duration {
	d := float64(h.Median) * math.Exp(h.Sigma*rng.NormFloat64())
	if inBurst {
		d += rng.ExpFloat64() * float64(h.Queue)
	}
	if rng.Float64() < h.Tail {
		d *= min(math.Pow(1-rng.Float64(), -1/1.5), 50) // Pareto, α 1.5
	}
	if h.Wait > 0 && rng.Float64() < h.Wait {
		d += rng.Float64() * float64(h.Waited)
	}
	lat := time.Duration(d)
	if h.Add > 0 {
		lat += h.AddLo + time.Duration(rng.Int64N(int64(h.Add-h.AddLo)))
	}
	return lat
}
