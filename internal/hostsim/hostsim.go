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
// and stalls of the host that hold every request in flight at one moment;
// add is the target's own added delay.
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
}

// Steady is a host that h runs a constant-rate plan on (an attack
// profile): requests spread evenly over a minute, no bursts.
func Steady(h Host) Host { h.Bursts, h.Span = 0, time.Minute; return h }

// Two hosts: a quiet one, and a busy 2-core VM shared with other work
// (stalls of up to 30 ms, and in one run in ten a freeze of up to 1 s).
var (
	// Quiet is a quiet host.
	Quiet = Host{Bursts: 0.85, Median: 300 * time.Microsecond, Sigma: 0.6, Queue: time.Millisecond, Tail: 0.01, Stalls: 1, Stall: 10 * time.Millisecond}
	// Busy is a busy 2-core VM shared with other work.
	Busy = Host{Bursts: 0.85, Median: 500 * time.Microsecond, Sigma: 0.8, Queue: time.Millisecond, Tail: 0.02, Stalls: 4, Stall: 30 * time.Millisecond,
		Freeze: 0.1, Frozen: time.Second}
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
		d := float64(h.Median) * math.Exp(h.Sigma*rng.NormFloat64())
		if inBurst[i] {
			d += rng.ExpFloat64() * float64(h.Queue)
		}
		if rng.Float64() < h.Tail {
			d *= min(math.Pow(1-rng.Float64(), -1/1.5), 50) // Pareto, α 1.5
		}
		lat[i] = time.Duration(d)
		if h.Add > 0 {
			lat[i] += h.AddLo + time.Duration(rng.Int64N(int64(h.Add-h.AddLo)))
		}
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
