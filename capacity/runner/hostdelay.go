package runner

import (
	"runtime/metrics"
	"slices"

	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// schedLatencies is the runtime's histogram of how long goroutines waited,
// runnable, before they ran: a host short of CPU makes the generator read
// answers late by as much.
const schedLatencies = "/sched/latencies:seconds"

// minHostWait is the shortest wait a segment keeps: shorter ones are the
// ordinary cost of a wakeup, no objective is that tight.
const minHostWait = 1 // ms

// schedCounts is the histogram's counts now (nil where the runtime has
// none), and its bucket boundaries.
func schedCounts() ([]uint64, []float64) {
	s := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil, nil
	}
	h := s[0].Value.Float64Histogram()
	return slices.Clone(h.Counts), h.Buckets
}

// hostMeter counts how long the goroutines of this process waited to run
// between its start and Stop.
type hostMeter struct{ before []uint64 }

// newHostMeter starts a measurement.
func newHostMeter() hostMeter {
	c, _ := schedCounts()
	return hostMeter{before: c}
}

// Stop returns the waits of at least minHostWait recorded since the
// start, one per bucket of the runtime's histogram that gained any, by
// the bucket's lower edge, longest first (nil: none).
func (m hostMeter) Stop() []capacity.HostWait {
	after, buckets := schedCounts()
	if len(after) != len(m.before) {
		return nil
	}
	var waits []capacity.HostWait
	for i := len(after) - 1; i >= 0; i-- {
		at := clock.Millis(max(buckets[i], 0) * 1000)
		if at < minHostWait {
			break
		}
		if n := after[i] - m.before[i]; n > 0 {
			waits = append(waits, capacity.HostWait{AtLeastMS: at, Count: n})
		}
	}
	return waits
}
