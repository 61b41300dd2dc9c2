package analyze

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jamiealquiza/tachymeter"
)

// latencyBins is the number of bins of a surface's latency histogram.
const latencyBins = 10

// reservoir keeps a uniform sample of at most size latencies (all of them
// up to size), with the exact count, least and greatest, for the latency
// summary: a million results take a bounded sample, not a million slots.
type reservoir struct {
	size     int
	n        int
	min, max int64
	sample   []time.Duration
	rng      *rand.Rand
}

func newReservoir(size int) reservoir {
	return reservoir{size: size, min: 1<<63 - 1, max: -1 << 63, rng: rand.New(rand.NewPCG(1, 2))}
}

func (v *reservoir) add(lat int64) {
	v.n++
	v.min, v.max = min(v.min, lat), max(v.max, lat)
	if len(v.sample) < v.size {
		v.sample = append(v.sample, time.Duration(lat))
	} else if k := v.rng.IntN(v.n); k < v.size {
		v.sample[k] = time.Duration(lat)
	}
}

// metrics summarizes the sample: percentiles from tachymeter; the count,
// least and greatest exact; the histogram from histogramOf, over the exact
// least and greatest (tachymeter's own moves on by one bin per sample that
// does not fit the current one, so a maximum far above the rest is shown
// in a bin that ends below it).
func (v *reservoir) metrics() *tachymeter.Metrics {
	tach := tachymeter.New(&tachymeter.Config{Size: max(len(v.sample), 1), HBins: latencyBins})
	for _, d := range v.sample {
		tach.AddTime(d)
	}
	m := tach.Calc()
	if v.n > 0 {
		m.Count = v.n
		m.Time.Min, m.Time.Max = time.Duration(v.min), time.Duration(v.max)
		m.Time.Range = m.Time.Max - m.Time.Min
		m.Histogram, m.HistogramBinSize = histogramOf(v.sample, m.Time.Min, m.Time.Max, latencyBins)
	}
	return m
}

// LatencyMetrics summarizes latencies as a surface's SurfaceDetail.Latency
// does: tachymeter's percentiles, the exact count, least and greatest, and
// a histogram of equal bins from the least to the greatest that holds
// every latency once.
func LatencyMetrics(lat []time.Duration) *tachymeter.Metrics {
	v := newReservoir(max(len(lat), 1))
	for _, d := range lat {
		v.add(int64(d))
	}
	return v.metrics()
}

// latencyBin is one bin of a latency histogram: the samples in
// [low, high), and in the last bin also those equal to high.
type latencyBin struct {
	low, high time.Duration
	count     uint64
}

// binLatencies puts every sample in exactly one of n bins of equal width
// from lo to hi: the bin its distance from lo falls in, the greatest in
// the last bin (and a sample outside [lo, hi], which a caller's exact
// bounds rule out, in the nearest bin). With hi = lo there is one bin.
func binLatencies(samples []time.Duration, lo, hi time.Duration, n int) []latencyBin {
	if hi <= lo || n < 1 {
		n = 1
	}
	bins := make([]latencyBin, n)
	span := float64(hi - lo)
	for i := range bins {
		bins[i].low = lo + time.Duration(span*float64(i)/float64(n))
		bins[i].high = lo + time.Duration(span*float64(i+1)/float64(n))
	}
	bins[n-1].high = max(hi, lo)
	for _, s := range samples {
		i := 0
		if span > 0 {
			i = int(float64(s-lo) / span * float64(n))
		}
		i = min(max(i, 0), n-1)
		// The edges are rounded to the nanosecond: move a sample that
		// sits on the far side of its bin's edge.
		for i > 0 && s < bins[i].low {
			i--
		}
		for i < n-1 && s >= bins[i].high {
			i++
		}
		bins[i].count++
	}
	return bins
}

// histogramOf returns binLatencies as tachymeter's Histogram, each bin
// labelled "low - high" to the microsecond, and the bins' width. Inner
// edges are rounded, so that neighbouring bins share theirs; the first
// edge is rounded down and the last up, so that the labels hold the least
// and the greatest sample.
func histogramOf(samples []time.Duration, lo, hi time.Duration, n int) (*tachymeter.Histogram, time.Duration) {
	bins := binLatencies(samples, lo, hi, n)
	h := make(tachymeter.Histogram, len(bins))
	for i, b := range bins {
		low, high := b.low.Round(time.Microsecond), b.high.Round(time.Microsecond)
		if i == 0 {
			low = b.low.Truncate(time.Microsecond)
		}
		if i == len(bins)-1 && high < b.high {
			high = b.high.Truncate(time.Microsecond) + time.Microsecond
		}
		h[i] = map[string]uint64{fmt.Sprintf("%s - %s", low, high): b.count}
	}
	return &h, bins[0].high - bins[0].low
}
