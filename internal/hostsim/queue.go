package hostsim

import (
	"math/rand/v2"
	"time"
)

// Queue is the tests' queueing figure, independent of any server's code:
// a discrete-event simulation of the D/G/c queue. Requests arrive every
// 1/rate seconds for dur, from an empty queue; each takes the server that
// frees first (first come, first served over c servers) for a service
// time from draw. It returns every request's sojourn, waiting plus
// service, in arrival order.
func Queue(rate float64, dur time.Duration, c int, draw func() time.Duration) []time.Duration {
	arrivals := make([]time.Duration, int(rate*dur.Seconds()))
	for k := range arrivals {
		arrivals[k] = time.Duration(float64(k) / rate * float64(time.Second))
	}
	return QueueAt(arrivals, c, draw)
}

// QueueAt is Queue for requests arriving at the given moments, in order
// (a trace: the sends a real run made, late ones and bursts included).
func QueueAt(arrivals []time.Duration, c int, draw func() time.Duration) []time.Duration {
	free := make([]time.Duration, c) // when each server is next free
	sojourn := make([]time.Duration, len(arrivals))
	for k, arrive := range arrivals {
		i := 0
		for j := range free {
			if free[j] < free[i] {
				i = j
			}
		}
		done := max(arrive, free[i]) + draw()
		free[i] = done
		sojourn[k] = done - arrive
	}
	return sojourn
}

// Fixed is a draw of service times that is always d.
func Fixed(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// Uniform is a draw of service times uniform in [lo, hi], from seed.
func Uniform(lo, hi time.Duration, seed uint64) func() time.Duration {
	rng := rand.New(rand.NewPCG(seed, 1))
	return func() time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
}
