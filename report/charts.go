package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/decode"
)

// Colours of the charts: one per outcome, the limit in black.
var (
	green  = color.RGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 0xff}
	red    = color.RGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
	orange = color.RGBA{R: 0xef, G: 0x6c, B: 0x00, A: 0xff}
	blue   = color.RGBA{R: 0x15, G: 0x65, B: 0xc0, A: 0xff}
	grey   = color.RGBA{R: 0x75, G: 0x75, B: 0x75, A: 0xff}
	purple = color.RGBA{R: 0x6a, G: 0x1b, B: 0x9a, A: 0xff}
)

// latencyBins is how many time bins the latency chart has at most: a
// percentile needs many samples per bin.
const latencyBins = 60

// surfaceCharts draws the three charts of a surface on one time axis:
// the rolling window against the limit (window, as the analysis judged
// it), requests by outcome, latency percentiles.
func surfaceCharts(recs []*decode.Record, window *analyze.WindowSeries, primary string, limit int, w time.Duration, t0 int64) ([]*plot.Plot, error) {
	if len(recs) == 0 {
		return []*plot.Plot{
			newPlot(windowTitle(w, primary), "requests in the window"),
			newPlot("Requests by outcome, every address", "requests"),
			newPlot("Latency percentiles", "latency (ms)"),
		}, nil
	}
	first, last := startRange(recs)
	g := newGrid(t0, first, last, chartBins)
	var out []*plot.Plot
	for _, c := range []func() (*plot.Plot, error){
		func() (*plot.Plot, error) { return windowChart(window, primary, limit, w, g) },
		func() (*plot.Plot, error) { return outcomeChart(recs, g) },
		func() (*plot.Plot, error) { return latencyChart(recs, g) },
	} {
		p, err := c()
		if err != nil {
			return nil, err
		}
		g.apply(p)
		out = append(out, p)
	}
	return out, nil
}

func windowTitle(w time.Duration, primary string) string {
	return fmt.Sprintf("Rolling %v window of %s against the limit (the contract counts refused requests too)", w, primary)
}

// windowChart draws, for the primary address, how many requests were
// surely and possibly in the server's window when each one was counted
// (the uncertainty interval of docs/method.md, as the analysis judged
// each: window; the most of each bin), the limit, the first 429, and each
// leak and false throttle. A nil window (the address sent nothing) draws
// an empty chart.
func windowChart(window *analyze.WindowSeries, primary string, limit int, w time.Duration, g timeGrid) (*plot.Plot, error) {
	p := newPlot(windowTitle(w, primary), "requests in the window")
	if window == nil {
		return p, nil
	}
	surely, possibly, admitted := make([]float64, g.n), make([]float64, g.n), make([]float64, g.n)
	var leaks, falses plotter.XYs
	firstRefusal := int64(math.MaxInt64)
	for _, j := range window.Points {
		k := g.bin(j.Start)
		surely[k], possibly[k] = max(surely[k], float64(1+j.Definite)), max(possibly[k], float64(1+j.Definite+j.Ambiguous))
		admitted[k] = max(admitted[k], float64(j.DefiniteAdmitted)+b2f(j.Admitted))
		if j.Refused {
			firstRefusal = min(firstRefusal, j.Start)
		}
		if j.Leak && len(leaks) < 500 {
			leaks = append(leaks, plotter.XY{X: secs(j.Start, g.t0), Y: float64(1 + j.Definite)})
		}
		if j.FalseThrottle && len(falses) < 500 {
			falses = append(falses, plotter.XY{X: secs(j.Start, g.t0), Y: float64(1 + j.Definite + j.Ambiguous)})
		}
	}
	// a bin without a request of the address has no count: the line joins
	// the bins that have one
	var ps, ss, as plotter.XYs
	for k := range g.n {
		if possibly[k] > 0 {
			ps, ss = append(ps, plotter.XY{X: g.x(k), Y: possibly[k]}), append(ss, plotter.XY{X: g.x(k), Y: surely[k]})
			as = append(as, plotter.XY{X: g.x(k), Y: admitted[k]})
		}
	}
	if err := addLine(p, "possibly in the window, refused ones too", ps, orange, false); err != nil {
		return nil, err
	}
	if err := addLine(p, "surely in the window, refused ones too", ss, blue, false); err != nil {
		return nil, err
	}
	if err := addLine(p, "of them surely admitted", as, green, false); err != nil {
		return nil, err
	}
	return p, windowMarks(p, limit, firstRefusal, g, leaks, falses)
}

// windowMarks adds to the window chart the limit, the first 429 and the
// leaks and false throttles.
func windowMarks(p *plot.Plot, limit int, firstRefusal int64, g timeGrid, leaks, falses plotter.XYs) error {
	if err := addLine(p, fmt.Sprintf("limit %d", limit), plotter.XYs{{X: g.x(0), Y: float64(limit)}, {X: g.x(g.n), Y: float64(limit)}}, color.Black, true); err != nil {
		return err
	}
	if firstRefusal != math.MaxInt64 {
		x := secs(firstRefusal, g.t0)
		if err := addLine(p, "first 429", plotter.XYs{{X: x, Y: 0}, {X: x, Y: float64(limit) * 1.1}}, red, true); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		name string
		xys  plotter.XYs
		c    color.Color
		g    draw.GlyphDrawer
	}{{"leak (admitted over the limit)", leaks, red, boldCross{}}, {"false throttle (refused under it)", falses, orange, draw.PyramidGlyph{}}} {
		if len(m.xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(m.xys)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = m.c, m.g, vg.Points(3)
		p.Add(sc)
		p.Legend.Add(m.name, sc)
	}
	return nil
}

// outcomeChart draws how many requests each time bin sent, by outcome,
// over every address: a bin's count is a step over that bin, an empty bin
// is drawn at zero.
func outcomeChart(recs []*decode.Record, g timeGrid) (*plot.Plot, error) {
	adm, ref, oth, flt := make([]float64, g.n), make([]float64, g.n), make([]float64, g.n), make([]float64, g.n)
	for _, r := range recs {
		k := g.bin(r.Start)
		switch {
		case r.Refused():
			ref[k]++
		case r.Code == 0 || r.Code >= 500:
			flt[k]++
		case r.Admitted():
			adm[k]++
		default:
			oth[k]++
		}
	}
	p := newPlot("Requests by outcome, every address", "requests per "+g.widthText())
	for _, s := range []struct {
		name string
		v    []float64
		c    color.Color
	}{{"admitted (2xx)", adm, green}, {"refused (429, or as a contract says)", ref, red}, {"other answers (4xx: the failure table)", oth, purple}, {"faults (5xx, no answer)", flt, grey}} {
		if !slices.ContainsFunc(s.v, func(v float64) bool { return v > 0 }) {
			continue // a series all at zero would lie hidden on the axis beside its legend entry
		}
		if err := addSteps(p, s.name, []plotter.XYs{g.steps(s.v, 0, g.n, g.x(g.n))}, s.c, lineWidth); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// latencyChart draws latency percentiles per time bin (coarser bins than
// the other charts', on the same axis), over every address: each a step
// over its bin; a bin that sent nothing has none and draws nothing.
func latencyChart(recs []*decode.Record, fine timeGrid) (*plot.Plot, error) {
	g := fine.coarse(latencyBins)
	p := newPlot("Latency percentiles", fmt.Sprintf("latency (ms) per %s", g.widthText()))
	lat := make([][]float64, g.n)
	for _, r := range recs {
		k := g.bin(r.Start)
		lat[k] = append(lat[k], float64(r.End-r.Start)/1e6)
	}
	for _, ls := range lat {
		slices.Sort(ls)
	}
	// widest first: where the quantiles of a bin coincide (a bin of one
	// request, a target answering in constant time) each still shows as a
	// band around the next, so no legend entry is left without its line
	for _, q := range []struct {
		name  string
		q     float64
		c     color.Color
		width vg.Length
	}{{"p99", 0.99, red, 3 * lineWidth}, {"p95", 0.95, orange, 2 * lineWidth}, {"p50", 0.50, green, lineWidth}} {
		v := make([]float64, g.n)
		var runs []plotter.XYs
		for k := 0; k < g.n; k++ {
			if len(lat[k]) == 0 {
				continue
			}
			from := k
			for ; k < g.n && len(lat[k]) > 0; k++ {
				v[k] = lat[k][int(q.q*float64(len(lat[k])-1))]
			}
			runs = append(runs, g.steps(v, from, k, fine.x(fine.n)))
		}
		if err := addSteps(p, q.name, runs, q.c, q.width); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// fleetChart draws, for a fleet run, when each attempt wave went out: per
// attempt, how many clients had sent it by each moment. Lockstep clients
// make vertical steps; jittered ones spread into ramps. Nil when the run
// has no fleet.
func fleetChart(in *decode.Input, t0 int64) (*plot.Plot, error) {
	waves := map[int][]float64{}
	for i := range in.Records {
		if tag := in.Tables().Labels(&in.Records[i]).Fleet; tag != nil {
			waves[tag.Attempt] = append(waves[tag.Attempt], secs(in.Records[i].Start, t0))
		}
	}
	if len(waves) == 0 {
		return nil, nil
	}
	p := newPlot("Fleet: when each attempt went out", "clients that had sent it")
	p.X.Tick.Marker, p.Y.Tick.Marker = numTicks{}, numTicks{}
	colours := []color.Color{blue, red, orange, green, grey}
	for a := 1; a <= len(waves) && a <= 16; a++ {
		ts := waves[a]
		if len(ts) == 0 {
			continue
		}
		slices.Sort(ts)
		step := max(len(ts)/chartBins, 1)
		var xys plotter.XYs
		for i := 0; i < len(ts); i += step {
			xys = append(xys, plotter.XY{X: ts[i], Y: float64(i + 1)})
		}
		xys = append(xys, plotter.XY{X: ts[len(ts)-1], Y: float64(len(ts))})
		if err := addLine(p, fmt.Sprintf("attempt %d", a), xys, colours[(a-1)%len(colours)], false); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// since is how long after from t is, in ns, for t >= from. Two Unix-ns
// instants may lie further apart than an int64 holds (results 292 years
// apart in a hostile file), never further than a uint64 does.
func since(t, from int64) uint64 { return uint64(t) - uint64(from) }

// secs is t in seconds since t0 (t >= t0).
func secs(t, t0 int64) float64 { return float64(since(t, t0)) / 1e9 }

// startRange returns the earliest and latest start of recs (not empty),
// whatever their order.
func startRange(recs []*decode.Record) (first, last int64) {
	first, last = recs[0].Start, recs[0].Start
	for _, r := range recs {
		first, last = min(first, r.Start), max(last, r.Start)
	}
	return first, last
}

func newPlot(title, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since the run's first request"
	p.Y.Label.Text = y
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// addLine adds a line series (dashed when marking) with its legend entry;
// an empty series adds nothing.
func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed bool) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("chart %q, series %q: %w", p.Title.Text, name, err)
	}
	l.Color, l.Width = c, lineWidth
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// lineWidth is the width of the charts' lines.
var lineWidth = vg.Points(1.2)

// boldCross is gonum's cross glyph drawn as wide as the lines (gonum's
// own draws a hairline, hard to see beside them).
type boldCross struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (boldCross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	ls := draw.LineStyle{Color: sty.Color, Width: lineWidth}
	r := sty.Radius * math.Sqrt2 / 2
	c.StrokeLine2(ls, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
	c.StrokeLine2(ls, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
}

// addSteps adds a series drawn as steps (see timeGrid.steps), in one or
// more runs of bins, with one legend entry; no runs add nothing.
func addSteps(p *plot.Plot, name string, runs []plotter.XYs, c color.Color, width vg.Length) error {
	for i, xys := range runs {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("chart %q, series %q: %w", p.Title.Text, name, err)
		}
		l.Color, l.Width, l.StepStyle = c, width, plotter.PostStep
		p.Add(l)
		if i == 0 {
			p.Legend.Add(name, l)
		}
	}
	return nil
}

// svgOf renders plots, one above the other, as one SVG element to inline
// in the page; their data areas are aligned, so that the charts of a
// surface, which share a time axis, put one moment at one place.
func svgOf(plots ...*plot.Plot) (template.HTML, error) {
	c := vgsvg.New(9*vg.Inch, vg.Length(len(plots))*3.6*vg.Inch)
	rows := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		rows[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4)}
	for i, cv := range plot.Align(rows, tiles, draw.New(c)) {
		plots[i].Draw(cv[0])
	}
	return inlineSVG(c)
}

// inlineSVG is a drawn canvas as an SVG element to inline in a page.
func inlineSVG(c io.WriterTo) (template.HTML, error) {
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:] // the XML declaration and comment do not belong inside HTML
	}
	return template.HTML(s), nil // safe: gonum/plot drew it from numbers and our own titles
}
