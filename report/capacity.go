package report

import (
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/capacity"
)

// CapacityTable writes a capacity search as a table of its steps and the
// knee line under it, the model apart.
func CapacityTable(w io.Writer, r capacity.Result) error {
	q := strings.TrimSuffix(strings.SplitN(r.SLO, "<=", 2)[0], " ")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STEP\tPHASE\tOFFERED/s\tACHIEVED/s\tTHROUGHPUT/s\t%s ms [interval]\tUNCORRECTED %s ms\tERRORS\tSOURCES\tCONCURRENCY\tVERDICT\n", q, q)
	for i, s := range r.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.1f\t%.1f\t%.1f [%s, %s]\t%.1f\t%.2f%%\t%d\t%.1f\t%s\n", i, s.Phase, s.OfferedRPS, s.AchievedRPS,
			s.ThroughputRPS, s.QuantileMs, Bound(s.QuantileLowMs), Bound(s.QuantileHighMs), s.UncorrectedQuantileMs,
			100*s.ErrorRate, s.Sources, s.Concurrency, stepVerdict(s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, KneeLine(r))
	if u := r.USL; u != nil && u.PeakRPS != nil {
		fmt.Fprintf(w, "model (USL fit over %d passing steps, not a measurement): peak %.1f/s [%s, %s] at concurrency %s\n",
			u.Points, *u.PeakRPS, Bound(u.PeakLowRPS), Bound(u.PeakHighRPS), Bound(u.PeakConcurrency))
	}
	return err
}

// stepVerdict is a step's verdict with what limited it.
func stepVerdict(s capacity.StepResult) string {
	if s.LimitedBy == capacity.CauseNone || string(s.LimitedBy) == s.Verdict {
		return s.Verdict
	}
	return s.Verdict + " (" + string(s.LimitedBy) + ")"
}

// Bound formats an optional figure ("-" when absent).
func Bound(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

// KneeLine says the search's outcome in one line.
func KneeLine(r capacity.Result) string {
	obj := fmt.Sprintf("%s, error budget %g%%", r.SLO, 100*r.ErrorBudget)
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
// table, throughput against offered rate, and the quantile with its
// interval (the uncorrected one beside it) against offered rate with the
// objective line, the knee marked on both, as inline SVG.
func CapacityHTML(w io.Writer, r capacity.Result, m CapacityMeta) error {
	var tab strings.Builder
	if err := CapacityTable(&tab, r); err != nil {
		return err
	}
	var charts []template.HTML
	for _, c := range []func(capacity.Result) (*plot.Plot, error){throughputChart, quantileChart} {
		p, err := c(r)
		if err != nil {
			return err
		}
		svg, err := svgOf(p)
		if err != nil {
			return err
		}
		charts = append(charts, svg)
	}
	return capacityTmpl.Execute(w, struct {
		CapacityMeta
		Result capacity.Result
		Table  string
		Charts []template.HTML
	}{m, r, tab.String(), charts})
}

// rateChart is a chart against offered rate with the knee marked.
func rateChart(r capacity.Result, title, y string, top float64) (*plot.Plot, error) {
	p := newPlot(title, y)
	p.X.Label.Text = "offered rate, requests per second"
	if r.KneeRPS != nil {
		k := *r.KneeRPS
		if err := addLine(p, fmt.Sprintf("knee %.0f/s", k), plotter.XYs{{X: k, Y: 0}, {X: k, Y: top}}, color.RGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 255}, true); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// throughputChart is throughput and achieved rate against offered.
func throughputChart(r capacity.Result) (*plot.Plot, error) {
	top := 1.0
	var thr, ach plotter.XYs
	for _, s := range r.Steps {
		thr, ach = append(thr, plotter.XY{X: s.OfferedRPS, Y: s.ThroughputRPS}), append(ach, plotter.XY{X: s.OfferedRPS, Y: s.AchievedRPS})
		top = max(top, s.OfferedRPS, s.ThroughputRPS)
	}
	p, err := rateChart(r, "throughput against offered rate", "per second", top)
	if err != nil {
		return nil, err
	}
	return p, points(p, map[string]plotter.XYs{"throughput (2xx)": thr, "achieved send rate": ach})
}

// quantileChart is the quantile with its interval against offered rate.
func quantileChart(r capacity.Result) (*plot.Plot, error) {
	top := r.SLOMs * 1.5
	var q, unc plotter.XYs
	var bars plotter.XYs
	for _, s := range r.Steps {
		q, unc = append(q, plotter.XY{X: s.OfferedRPS, Y: s.QuantileMs}), append(unc, plotter.XY{X: s.OfferedRPS, Y: s.UncorrectedQuantileMs})
		if s.QuantileLowMs != nil && s.QuantileHighMs != nil {
			bars = append(bars, plotter.XY{X: s.OfferedRPS, Y: *s.QuantileLowMs}, plotter.XY{X: s.OfferedRPS, Y: *s.QuantileHighMs})
		}
		top = max(top, s.QuantileMs)
	}
	top = math.Min(top, r.SLOMs*10)
	p, err := rateChart(r, "latency "+r.SLO+" against offered rate", "milliseconds", top)
	if err != nil {
		return nil, err
	}
	p.Y.Max = top
	lo, hi := r.StartRPS, r.StartRPS
	for _, s := range r.Steps {
		lo, hi = min(lo, s.OfferedRPS), max(hi, s.OfferedRPS)
	}
	if err := addLine(p, "objective", plotter.XYs{{X: lo, Y: r.SLOMs}, {X: hi, Y: r.SLOMs}}, color.RGBA{R: 0xc6, G: 0x28, B: 0x28, A: 255}, true); err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(bars); i += 2 {
		l, err := plotter.NewLine(bars[i : i+2])
		if err != nil {
			return nil, err
		}
		p.Add(l)
	}
	return p, points(p, map[string]plotter.XYs{"from the intended send (interval as bars)": q, "from the actual send (uncorrected)": unc})
}

// points adds each series as points, in name order, with its legend.
func points(p *plot.Plot, series map[string]plotter.XYs) error {
	names := make([]string, 0, len(series))
	for n := range series {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		if len(series[n]) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(series[n])
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = []color.Color{color.RGBA{R: 0x15, G: 0x65, B: 0xc0, A: 255}, color.RGBA{R: 0xef, G: 0x6c, B: 0x00, A: 255}}[i%2]
		p.Add(sc)
		p.Legend.Add(n, sc)
	}
	return nil
}

var capacityTmpl = template.Must(template.New("capacity").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>ratecheck capacity {{.Result.Verdict}}: {{.Run}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:80em;color:#212121}
pre{background:#f5f5f5;padding:1em;overflow-x:auto}.meta{color:#616161}
figure{margin:1em 0}svg{max-width:100%;height:auto}
</style></head><body>
<h1>ratecheck capacity: {{.Result.Verdict}}</h1>
<p class="meta">run {{.Run}} · target {{.Target}} · surface {{.Surface}} · {{.Result.SLO}} · confidence {{.Result.Confidence}}</p>
<pre>{{.Table}}</pre>
{{range .Charts}}<figure>{{.}}</figure>{{end}}
<p class="meta">Latency is measured from each request's intended send time; the uncorrected figure, from the actual send, is beside it. The USL line is a model fitted to the passing steps, never the measured knee.</p>
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
