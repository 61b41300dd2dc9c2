package report

import (
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// chartBins is how many time bins a chart has at most: a million requests
// would make a page no browser opens.
const chartBins = 600

// timeGrid is the time axis the charts of a surface share: bins of one
// round width (1, 2 or 5 times a power of ten nanoseconds, 1 ms at least)
// from the surface's first send, drawn in seconds since the run's first
// request. Every chart of the surface spans the same range with the same
// ticks, so one moment is at one place in all of them.
type timeGrid struct {
	t0, first int64  // the run's first request, the grid's start (Unix ns)
	width     uint64 // of a bin, in ns
	n         int    // bins
}

// newGrid returns a grid of at most bins bins over [first, last] (Unix
// ns, first <= last), drawn from t0 <= first.
func newGrid(t0, first, last int64, bins int) timeGrid {
	span := since(last, first)
	w := roundWidth(float64(span) / float64(bins))
	return timeGrid{t0: t0, first: first, width: w, n: int(span/w) + 1}
}

// roundWidth is the least round width (1, 2 or 5 times a power of ten
// ns, 1 ms at least) of at least w ns.
func roundWidth(w float64) uint64 {
	if w <= 1e6 {
		return 1e6
	}
	mag := math.Pow(10, math.Floor(math.Log10(w)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= w {
			return uint64(min(m*mag, 9e18)) // past that, a hostile file: 3 bins at most
		}
	}
	return 9e18
}

// coarse is a grid of the same start whose bins are k of g's (the fewest
// that make at most bins of them), for series that need many samples per
// bin, such as percentiles.
func (g timeGrid) coarse(bins int) timeGrid {
	k := (g.n + bins - 1) / bins
	return timeGrid{t0: g.t0, first: g.first, width: g.width * uint64(k), n: (g.n + k - 1) / k}
}

// bin is the bin holding instant t (first <= t).
func (g timeGrid) bin(t int64) int { return min(int(since(t, g.first)/g.width), g.n-1) }

// x is where bin k starts (k = n: where the last one ends), in seconds
// since t0.
func (g timeGrid) x(k int) float64 {
	return (float64(since(g.first, g.t0)) + float64(k)*float64(g.width)) / 1e9
}

// widthText is the width of a bin for people: 20ms, 2s.
func (g timeGrid) widthText() string {
	if g.width > math.MaxInt64 {
		return strconv.FormatFloat(float64(g.width)/1e9, 'g', 3, 64) + "s"
	}
	return time.Duration(g.width).String()
}

// steps is the outline of v over bins [from, to) of g: each bin a
// horizontal segment at its value from its start to its end (to be drawn
// with plotter.PostStep), so that a bin's value is drawn over that bin's
// time and nowhere else. end clips the last segment (a coarse grid's last
// bin may end past the axis).
func (g timeGrid) steps(v []float64, from, to int, end float64) plotter.XYs {
	xys := make(plotter.XYs, 0, to-from+1)
	for k := from; k < to; k++ {
		xys = append(xys, plotter.XY{X: g.x(k), Y: v[k]})
	}
	return append(xys, plotter.XY{X: min(g.x(to), end), Y: v[to-1]})
}

// apply sets p's time axis to the grid's range, both axes' ticks to
// numTicks and room above the data for the legend; it comes after every series is added (adding one widens the
// range to its data).
func (g timeGrid) apply(p *plot.Plot) {
	// From the run's first request, whenever the surface's began, so that
	// every chart's time ticks start at 0.
	p.X.Min, p.X.Max = min(0, g.x(0)), g.x(g.n)
	p.X.Tick.Marker, p.Y.Tick.Marker = numTicks{}, numTicks{}
	if p.Y.Max > p.Y.Min {
		p.Y.Max += (p.Y.Max - p.Y.Min) / 3 // room for the legend above the data
	}
}

// numTicks are gonum's default ticks labelled with as few decimals as the
// step needs: 500 and 1.5, not 500.00 and 1.50.
type numTicks struct{}

// Ticks implements plot.Ticker.
func (numTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	prec := 0
	for ; prec < 6; prec++ {
		if labelsHold(ts, prec) {
			break
		}
	}
	for i := range ts {
		if !ts[i].IsMinor() {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', prec, 64)
		}
	}
	return ts
}

// labelsHold says every major tick of ts reads back as its value at prec
// decimals.
func labelsHold(ts []plot.Tick, prec int) bool {
	for _, t := range ts {
		if t.IsMinor() {
			continue
		}
		v, _ := strconv.ParseFloat(strconv.FormatFloat(t.Value, 'f', prec, 64), 64)
		if math.Abs(v-t.Value) > 1e-9*math.Max(1, math.Abs(t.Value)) {
			return false
		}
	}
	return true
}
