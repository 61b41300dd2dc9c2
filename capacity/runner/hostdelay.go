package runner

import (
	"runtime/metrics"
	"slices"
	"time"
)

// schedLatencies is the runtime's histogram of how long goroutines waited,
// runnable, before they ran: a host short of CPU makes the generator read
// answers late by as much.
const schedLatencies = "/sched/latencies:seconds"

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

// hostMeter measures the longest a goroutine of this process waited to run
// between its start and Stop.
type hostMeter struct{ before []uint64 }

// newHostMeter starts a measurement.
func newHostMeter() hostMeter {
	c, _ := schedCounts()
	return hostMeter{before: c}
}

// Stop returns the lower edge of the highest bucket that gained a wait
// since the start: some goroutine waited at least that long to run (0:
// none measurable).
func (m hostMeter) Stop() time.Duration {
	after, buckets := schedCounts()
	if len(after) != len(m.before) {
		return 0
	}
	for i := len(after) - 1; i >= 0; i-- {
		if after[i] > m.before[i] {
			return time.Duration(max(buckets[i], 0) * float64(time.Second))
		}
	}
	return 0
}
