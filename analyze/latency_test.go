package analyze

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestBinLatencies: every sample falls in exactly one bin, the bin whose
// range holds it, and the greatest in the last bin, however the samples
// spread: the case of the issue (a 15.3 ms maximum above a body under
// 9 ms), a heavy tail, equal samples, one sample.
func TestBinLatencies(t *testing.T) {
	t.Parallel()
	ms := func(f float64) time.Duration { return time.Duration(f * 1e6) }
	rng := rand.New(rand.NewPCG(3, 4))
	var tail []time.Duration
	for range 5000 {
		tail = append(tail, ms(0.2+rng.ExpFloat64()*rng.ExpFloat64()))
	}
	tests := []struct {
		name    string
		samples []time.Duration
	}{
		{"outlier", append([]time.Duration{ms(15.3)}, ms(0.4), ms(0.5), ms(1.1), ms(2.0), ms(3.3), ms(5.0), ms(8.2), ms(8.8), ms(0.6), ms(0.7))},
		{"heavy tail", tail},
		{"equal", []time.Duration{ms(1), ms(1), ms(1)}},
		{"one", []time.Duration{ms(2)}},
		{"edges", []time.Duration{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := tt.samples[0], tt.samples[0]
			for _, s := range tt.samples {
				lo, hi = min(lo, s), max(hi, s)
			}
			bins := binLatencies(tt.samples, lo, hi, latencyBins)
			var sum uint64
			for _, b := range bins {
				sum += b.count
			}
			if sum != uint64(len(tt.samples)) {
				t.Errorf("bins hold %d samples, want %d: %+v", sum, len(tt.samples), bins)
			}
			last := bins[len(bins)-1]
			if last.high != hi || last.count == 0 {
				t.Errorf("last bin %+v, want it to end at the greatest, %v, and hold it", last, hi)
			}
			if bins[0].low != lo {
				t.Errorf("first bin starts at %v, want the least, %v", bins[0].low, lo)
			}
			// Count again by the bins' own ranges: each sample in exactly one.
			for _, s := range tt.samples {
				in := 0
				for i, b := range bins {
					if s >= b.low && (s < b.high || (i == len(bins)-1 && s == b.high)) {
						in++
					}
				}
				if in != 1 {
					t.Errorf("sample %v is in %d bins of %+v", s, in, bins)
				}
			}
			for i := range bins {
				var want uint64
				for _, s := range tt.samples {
					if s >= bins[i].low && (s < bins[i].high || (i == len(bins)-1 && s == bins[i].high)) {
						want++
					}
				}
				if bins[i].count != want {
					t.Errorf("bin %d [%v, %v) counts %d, holds %d", i, bins[i].low, bins[i].high, bins[i].count, want)
				}
			}
		})
	}
}

// TestLatencyMetricsHistogram: the summary a surface reports shows its
// maximum in the last bin's label, and its bins count every sample.
func TestLatencyMetricsHistogram(t *testing.T) {
	t.Parallel()
	v := newReservoir(1000)
	for _, f := range []float64{0.31, 0.42, 0.45, 0.52, 0.61, 0.74, 0.88, 1.2, 2.5, 8.8, 15.3} {
		v.add(int64(f * 1e6))
	}
	m := v.metrics()
	if m.Histogram == nil || len(*m.Histogram) != latencyBins {
		t.Fatalf("histogram %v, want %d bins", m.Histogram, latencyBins)
	}
	var sum uint64
	var lastLabel string
	for _, bin := range *m.Histogram {
		for k, n := range bin {
			sum += n
			lastLabel = k
		}
	}
	if sum != uint64(m.Samples) || m.Samples != 11 {
		t.Errorf("bins count %d samples, want %d (11)", sum, m.Samples)
	}
	if !strings.HasSuffix(lastLabel, " - 15.3ms") || (*m.Histogram)[latencyBins-1][lastLabel] != 1 {
		t.Errorf("last bin %v, want it to end at 15.3ms and hold the maximum", (*m.Histogram)[latencyBins-1])
	}
	if first := (*m.Histogram)[0]; first["310µs - 1.809ms"] != 8 {
		t.Errorf("first bin %v, want 310µs - 1.809ms: 8", first)
	}
}
