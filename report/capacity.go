package report

import (
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/capacity"
)

// CapacityTable writes a capacity search as a table of its steps and the
// knee line under it, the model's line apart.
func CapacityTable(w io.Writer, r capacity.Result) error {
	q := r.QuantileName()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STEP\tPHASE\tOFFERED/s\tACHIEVED/s\tTHROUGHPUT/s\t%s ms [interval]\tUNCORRECTED %s ms\tERRORS\tSOURCES\tCONCURRENCY\tVERDICT\n", q, q)
	for i, s := range r.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.1f\t%.1f\t%.1f [%s, %s]\t%.1f\t%.2f%%\t%d\t%.1f\t%s\n", i, s.Phase, s.OfferedRPS, s.AchievedRPS,
			s.ThroughputRPS, s.QuantileMS, Bound(s.QuantileLowMS), Bound(s.QuantileHighMS), s.UncorrectedQuantileMS,
			100*s.ErrorRate, s.Sources, s.Concurrency, stepVerdict(s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, KneeLine(r))
	if line := modelLine(r.USL); line != "" && err == nil {
		_, err = fmt.Fprintln(w, line)
	}
	return err
}

// modelLine says the USL model in one line: its peak with the interval
// where the steps bound it, flagged where that interval lies wholly above
// the highest throughput measured, and why there is no peak where they do
// not bound it; "" without a model.
func modelLine(u *capacity.USL) string {
	if u == nil {
		return ""
	}
	left := ""
	if u.ExcludedSteps > 0 {
		left = fmt.Sprintf(", %d left out", u.ExcludedSteps)
	}
	head := fmt.Sprintf("model (USL fit over %d steps%s, not a measurement): ", u.Points, left)
	if u.PeakRPS == nil {
		return head + "no peak: " + reasonOf(u)
	}
	line := head + fmt.Sprintf("peak %.1f/s [%s, %s]", *u.PeakRPS, Bound(u.PeakLowRPS), Bound(u.PeakHighRPS))
	if u.PeakConcurrency != nil {
		line += fmt.Sprintf(" at concurrency %.1f", *u.PeakConcurrency)
	} else {
		line += ", approached as concurrency grows"
	}
	if u.PeakStatus == capacity.PeakAboveMeasured {
		line += "; flagged: " + reasonOf(u)
	}
	return line
}

// reasonOf is the model's reason for its peak's status ("" when none).
func reasonOf(u *capacity.USL) string {
	if u.PeakReason == nil {
		return ""
	}
	return *u.PeakReason
}

// stepVerdict is a step's verdict with what limited it.
func stepVerdict(s capacity.StepResult) string {
	if s.LimitedBy == capacity.CauseNone || string(s.LimitedBy) == string(s.Verdict) {
		return string(s.Verdict)
	}
	return string(s.Verdict) + " (" + string(s.LimitedBy) + ")"
}

// Bound formats an optional figure ("-" when absent).
func Bound[F ~float64](v *F) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

// KneeLine says the search's outcome in one line.
func KneeLine(r capacity.Result) string {
	obj := fmt.Sprintf("%s, error budget %g%%", r.SLO, 100*r.ErrorBudget)
	if f, p, ok := r.Contradiction(); ok && r.Verdict == capacity.VerdictInconclusive {
		return fmt.Sprintf("knee inconclusive: %.1f/s passed in step %d and %.1f/s failed in step %d (%s), limited by %s: the target's capacity, or this host's, changed during the search",
			r.Steps[p].OfferedRPS, p, r.Steps[f].OfferedRPS, f, obj, cause(r.LimitedBy))
	}
	switch {
	case r.KneeRPS != nil && r.KneeHighRPS != nil:
		return fmt.Sprintf("knee %s: %.1f/s sustained, %.1f/s not (%s), limited by %s", r.Verdict, *r.KneeRPS, *r.KneeHighRPS, obj, cause(r.LimitedBy))
	case r.KneeRPS != nil:
		return fmt.Sprintf("knee %s: %.1f/s sustained, nothing higher tried failed (%s), limited by %s", r.Verdict, *r.KneeRPS, obj, cause(r.LimitedBy))
	}
	return fmt.Sprintf("knee %s: no rate sustained (%s), limited by %s", r.Verdict, obj, cause(r.LimitedBy))
}

// cause names what limited a search ("nothing" for none).
func cause(c capacity.Cause) string {
	if c == capacity.CauseNone {
		return "nothing (out of steps)"
	}
	return string(c)
}

// CapacityMeta names the run a capacity report is of.
type CapacityMeta struct {
	Run, Target, Surface string
}

// CapacityHTML writes a self-contained page of a capacity search: the
// table; throughput against offered rate; the quantile with its interval
// (the uncorrected one beside it) against offered rate with the
// objective line, the knee marked on both; and, with a model, throughput
// against concurrency with the fitted USL curve and its peak, as inline
// SVG. Each chart's legend is drawn below it, clear of its data, and its
// caption names the series drawn.
func CapacityHTML(w io.Writer, r capacity.Result, m CapacityMeta) error {
	var tab strings.Builder
	if err := CapacityTable(&tab, r); err != nil {
		return err
	}
	charts := []func(capacity.Result) (*capacityChart, error){throughputChart, quantileChart}
	if r.USL != nil {
		charts = append(charts, uslChart)
	}
	var figs []capacityFigure
	for _, c := range charts {
		ch, err := c(r)
		if err != nil {
			return err
		}
		svg, err := ch.svg()
		if err != nil {
			return err
		}
		figs = append(figs, capacityFigure{SVG: svg, Series: ch.drawn, Note: ch.note})
	}
	return capacityTmpl.Execute(w, struct {
		CapacityMeta
		Result  capacity.Result
		Table   string
		Figures []capacityFigure
	}{m, r, tab.String(), figs})
}

// capacityFigure is a chart of the capacity page with its caption: the
// series drawn, by their legend names, and a note.
type capacityFigure struct {
	SVG    template.HTML
	Series []string
	Note   string
}

// capacityChart is a chart of the capacity page, its legend kept apart so
// that it is drawn below the chart, where it covers no data.
type capacityChart struct {
	p      *plot.Plot
	legend plot.Legend
	drawn  []string // the legend's names, in order
	note   string   // what the caption says besides the series
}

// newCapacityChart is an empty chart against offered rate.
func newCapacityChart(title, y string) *capacityChart {
	p := newPlot(title, y)
	p.X.Label.Text = "offered rate, requests per second"
	l := plot.NewLegend()
	l.Left = true
	return &capacityChart{p: p, legend: l}
}

// add draws plotters as one series, named in the legend by their first
// (a thumbnail); nothing when there are none.
func (c *capacityChart) add(name string, ps ...plot.Plotter) {
	if len(ps) == 0 {
		return
	}
	c.p.Add(ps...)
	if th, ok := ps[0].(plot.Thumbnailer); ok {
		c.legend.Add(name, th)
	}
	c.drawn = append(c.drawn, name)
}

// line is xys as a line in colour, dashed when marking, dotted when
// dotted.
func line(xys plotter.XYs, c color.Color, dashed, dotted bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width = c, vg.Points(1.2)
	switch {
	case dashed:
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	case dotted:
		l.Width, l.Dashes = vg.Points(1), []vg.Length{vg.Points(1), vg.Points(2)}
	}
	return l, nil
}

// scatter is xys as points in colour, drawn with glyph.
func scatter(xys plotter.XYs, c color.Color, glyph draw.GlyphDrawer) (*plotter.Scatter, error) {
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = c, glyph, vg.Points(3)
	return sc, nil
}

// svg renders the chart with its legend in a strip below it, as one SVG
// element to inline.
func (c *capacityChart) svg() (template.HTML, error) {
	const pad = 6
	w, h := 9*vg.Inch, 3.6*vg.Inch
	probe := draw.New(vgsvg.New(w, h))
	lh := vg.Length(0)
	if len(c.drawn) > 0 {
		r := c.legend.Rectangle(probe)
		lh = r.Max.Y - r.Min.Y + 2*vg.Points(pad)
	}
	cv := vgsvg.New(w, h+lh)
	dc := draw.New(cv)
	c.p.Draw(draw.Crop(dc, 0, 0, lh, 0))
	if len(c.drawn) > 0 {
		c.legend.Top = true
		c.legend.Draw(draw.Crop(dc, vg.Points(4*pad), 0, vg.Points(pad), -(h + vg.Points(pad))))
	}
	return inlineSVG(cv)
}

// rateChart is a chart against offered rate with the knee marked.
func rateChart(r capacity.Result, title, y string, top float64) (*capacityChart, error) {
	c := newCapacityChart(title, y)
	if r.KneeRPS != nil {
		k := *r.KneeRPS
		l, err := line(plotter.XYs{{X: k, Y: 0}, {X: k, Y: top}}, green, true, false)
		if err != nil {
			return nil, err
		}
		c.add(fmt.Sprintf("knee %.0f/s", k), l)
	}
	return c, nil
}

// throughputChart is throughput and achieved rate against offered.
func throughputChart(r capacity.Result) (*capacityChart, error) {
	top := 1.0
	var thr, ach plotter.XYs
	for _, s := range r.Steps {
		thr, ach = append(thr, plotter.XY{X: s.OfferedRPS, Y: s.ThroughputRPS}), append(ach, plotter.XY{X: s.OfferedRPS, Y: s.AchievedRPS})
		top = max(top, s.OfferedRPS, s.ThroughputRPS)
	}
	c, err := rateChart(r, "throughput against offered rate", "per second", top)
	if err != nil {
		return nil, err
	}
	return c, points(c, []named{{"achieved send rate", ach}, {"throughput (2xx)", thr}})
}

// quantileChart is the quantile with its interval against offered rate.
func quantileChart(r capacity.Result) (*capacityChart, error) {
	top := float64(r.SLOMS) * 1.5
	var q, unc plotter.XYs
	var bars plotter.XYs
	for _, s := range r.Steps {
		q, unc = append(q, plotter.XY{X: s.OfferedRPS, Y: float64(s.QuantileMS)}), append(unc, plotter.XY{X: s.OfferedRPS, Y: float64(s.UncorrectedQuantileMS)})
		if s.QuantileLowMS != nil && s.QuantileHighMS != nil {
			bars = append(bars, plotter.XY{X: s.OfferedRPS, Y: float64(*s.QuantileLowMS)}, plotter.XY{X: s.OfferedRPS, Y: float64(*s.QuantileHighMS)})
		}
		top = max(top, float64(s.QuantileMS))
	}
	top = math.Min(top, float64(r.SLOMS)*10)
	c, err := rateChart(r, "latency "+r.SLO+" against offered rate", "milliseconds", top)
	if err != nil {
		return nil, err
	}
	c.p.Y.Max = top
	lo, hi := r.StartRPS, r.StartRPS
	for _, s := range r.Steps {
		lo, hi = min(lo, s.OfferedRPS), max(hi, s.OfferedRPS)
	}
	obj, err := line(plotter.XYs{{X: lo, Y: float64(r.SLOMS)}, {X: hi, Y: float64(r.SLOMS)}}, red, true, false)
	if err != nil {
		return nil, err
	}
	c.add("objective", obj)
	for i := 0; i+1 < len(bars); i += 2 {
		l, err := plotter.NewLine(bars[i : i+2])
		if err != nil {
			return nil, err
		}
		c.p.Add(l)
	}
	intended := "from the intended send"
	if len(bars) > 0 {
		intended += " (interval as bars)"
	}
	return c, points(c, []named{{"from the actual send (uncorrected)", unc}, {intended, q}})
}

// named is a series with its legend name.
type named struct {
	name string
	xys  plotter.XYs
}

// points adds each series as points, in order, an empty one not at all.
func points(c *capacityChart, series []named) error {
	for i, s := range series {
		if len(s.xys) == 0 {
			continue
		}
		sc, err := scatter(s.xys, []color.Color{blue, orange}[i%2], draw.CircleGlyph{})
		if err != nil {
			return err
		}
		c.add(s.name, sc)
	}
	return nil
}

// uslChart is throughput against concurrency (Little's law) with the USL
// fitted to the steps: the steps it was fitted to (those the API fell
// behind in apart), the steps left out, the fitted curve (dotted past
// what the steps held it to), the highest throughput measured and, where
// the steps bound it, the model's peak with its interval.
func uslChart(r capacity.Result) (*capacityChart, error) {
	u := r.USL
	c := newCapacityChart("throughput against concurrency (Little's law), with the USL model", "per second")
	c.p.X.Label.Text = "concurrency, requests in flight (logarithmic)"
	c.p.X.Scale, c.p.X.Tick.Marker, c.p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}, numTicks{}
	var kept, behind, out plotter.XYs
	lo, hi, top := math.Inf(1), 0.0, u.MaxThroughputRPS
	for _, s := range r.Steps {
		if s.Concurrency <= 0 {
			continue
		}
		xy := plotter.XY{X: s.Concurrency, Y: s.ThroughputRPS}
		switch {
		case !s.Fitted():
			out = append(out, xy)
		case s.FellBehind():
			behind = append(behind, xy)
		default:
			kept = append(kept, xy)
		}
		lo, hi, top = min(lo, s.Concurrency), max(hi, s.Concurrency), max(top, s.ThroughputRPS)
	}
	if hi == 0 {
		return c, nil
	}
	if u.PeakHighRPS != nil {
		top = max(top, *u.PeakHighRPS)
	}
	top = roundUp(top * 1.15)
	c.p.Y.Max = top
	lo, hi = lo/1.5, hi*1.5
	// The curve is what the steps held it to up to its peak, or up to
	// the highest concurrency of a step the API kept up with; past that
	// only steps that fell behind were measured, which say nothing of
	// the curve but its peak: drawn dotted.
	held := hi
	if len(behind) > 0 {
		held = 0
		for _, p := range kept {
			held = max(held, p.X)
		}
		if u.PeakConcurrency != nil {
			held = max(held, *u.PeakConcurrency)
		}
		if held = min(held, hi); held <= lo {
			held = hi // no step kept up: the curve is all the fit's
		}
	}
	sample := func(from, to float64) plotter.XYs { // up to the chart's top, not along it
		var xys plotter.XYs
		for i := range 121 {
			n := from * math.Pow(to/from, float64(i)/120)
			if x := u.Throughput(n); x <= top {
				xys = append(xys, plotter.XY{X: n, Y: x})
			} else if i > 0 {
				break
			}
		}
		return xys
	}
	name := "USL fit"
	if u.PeakRPS == nil {
		name += " (no peak the steps bound)"
	}
	for _, part := range []struct {
		name     string
		xys      plotter.XYs
		unproved bool
	}{{name, sample(lo, held), false}, {"USL past its peak, where only steps that fell behind were measured", sample(held, hi), true}} {
		if len(part.xys) < 2 || (part.unproved && held >= hi) {
			continue
		}
		l, err := line(part.xys, grey, false, part.unproved)
		if err != nil {
			return nil, err
		}
		c.add(part.name, l)
	}
	measured, err := line(plotter.XYs{{X: lo, Y: u.MaxThroughputRPS}, {X: hi, Y: u.MaxThroughputRPS}}, color.Black, false, true)
	if err != nil {
		return nil, err
	}
	c.add(fmt.Sprintf("highest throughput measured %.0f/s", u.MaxThroughputRPS), measured)
	if u.PeakRPS != nil {
		colour, what := green, fmt.Sprintf("model peak %.0f/s", *u.PeakRPS)
		if u.PeakStatus == capacity.PeakAboveMeasured {
			colour, what = red, what+", above what was measured: not headroom"
		}
		pk, err := line(plotter.XYs{{X: lo, Y: *u.PeakRPS}, {X: hi, Y: *u.PeakRPS}}, colour, true, false)
		if err != nil {
			return nil, err
		}
		c.add(what, pk)
		if u.PeakLowRPS != nil && u.PeakHighRPS != nil {
			a, err := line(plotter.XYs{{X: lo, Y: *u.PeakLowRPS}, {X: hi, Y: *u.PeakLowRPS}}, colour, false, true)
			if err != nil {
				return nil, err
			}
			b, err := line(plotter.XYs{{X: lo, Y: *u.PeakHighRPS}, {X: hi, Y: *u.PeakHighRPS}}, colour, false, true)
			if err != nil {
				return nil, err
			}
			c.add(fmt.Sprintf("its interval [%.0f, %.0f]/s", *u.PeakLowRPS, *u.PeakHighRPS), a, b)
		}
	}
	for _, s := range []struct {
		name  string
		xys   plotter.XYs
		c     color.Color
		glyph draw.GlyphDrawer
	}{
		{"steps the API kept up with", kept, blue, draw.CircleGlyph{}},
		{"steps it fell behind in (held to the model's best at or below their concurrency)", behind, orange, draw.TriangleGlyph{}},
		{"steps left out (the generator's, or answered 429)", out, grey, draw.CrossGlyph{}},
	} {
		if len(s.xys) == 0 {
			continue
		}
		sc, err := scatter(s.xys, s.c, s.glyph)
		if err != nil {
			return nil, err
		}
		c.add(s.name, sc)
	}
	c.note = modelLine(u) + "."
	return c, nil
}

// roundUp is v rounded up to two significant digits, a chart's top.
func roundUp(v float64) float64 {
	if v <= 0 {
		return v
	}
	unit := math.Pow(10, math.Floor(math.Log10(v))-1)
	return math.Ceil(v/unit) * unit
}

var capacityTmpl = template.Must(template.New("capacity").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>ratecheck capacity {{.Result.Verdict}}: {{.Run}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:80em;color:#212121}
pre{background:#f5f5f5;padding:1em;overflow-x:auto}.meta{color:#616161}
figure{margin:1em 0}svg{max-width:100%;height:auto}figcaption{color:#616161}
</style></head><body>
<h1>ratecheck capacity: {{.Result.Verdict}}</h1>
<p class="meta">run {{.Run}} · target {{.Target}} · surface {{.Surface}} · {{.Result.SLO}} · confidence {{.Result.Confidence}}</p>
<pre>{{.Table}}</pre>
{{range .Figures}}<figure>{{.SVG}}
<figcaption>Drawn: {{range $i, $s := .Series}}{{if $i}}; {{end}}<span class="series">{{$s}}</span>{{end}}.{{with .Note}} {{.}}{{end}}</figcaption></figure>
{{end}}<p class="meta">Latency is measured from each request's intended send time; the uncorrected figure, from the actual send, is beside it.{{if .Result.USL}} The USL curve is a model fitted to every step that measured the API's throughput, never the measured knee.{{end}}</p>
</body></html>
`))

// KneeCompareTable writes the comparison of two capacity runs' knees.
func KneeCompareTable(w io.Writer, c analyze.KneeChange) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "RUN\tVERDICT\tKNEE/s\tBRACKET/s\n")
	for _, s := range []analyze.KneeSummary{c.Base, c.Run} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t[%s, %s]\n", s.Run, s.Verdict, Bound(s.KneeRPS), Bound(s.LowRPS), Bound(s.HighRPS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(c.Incomparable) > 0 {
		_, err := fmt.Fprintf(w, "no verdict: the searches were made in different ways (%s), so their knees are not a change\n", strings.Join(c.Incomparable, "; "))
		return err
	}
	if c.ChangeRPS == nil {
		_, err := fmt.Fprintf(w, "knee change: unknown (a run found no knee): %s\n", c.Verdict)
		return err
	}
	sep := "the brackets overlap: within the searches' precision"
	if c.Separate {
		sep = "the brackets separate: a real change"
	}
	_, err := fmt.Fprintf(w, "knee change: %+.1f/s (%+.1f%%); %s: %s\n", *c.ChangeRPS, 100**c.Relative, sep, c.Verdict)
	return err
}
