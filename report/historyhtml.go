package report

import (
	"fmt"
	"html/template"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/connectbyjbrh/ratecheck/history"
)

// HistoryHTML writes a history as one self-contained page (it fetches
// nothing, so it opens offline): per key the chart of each series, run by
// run, with the interval each run measured its value within as a bar
// (capacity's knee), the runs of a starved or late machine drawn hollow, each
// change point a dashed red line where the new segment begins and the
// segments' medians dotted across them, and the changes, events and
// unread paths in words.
func HistoryHTML(w io.Writer, out history.Output) error {
	page := historyPage{Out: out, Floors: floorsText(out)}
	for _, u := range out.Unread {
		page.Unread = append(page.Unread, safe(u.Path)+": "+safe(u.Why))
	}
	for _, k := range historyKeys(out) {
		hk := historyHTMLKey{Title: keyTitle(k.Key)}
		for _, si := range k.series {
			svg, err := seriesChart(out, si)
			if err != nil {
				return err
			}
			hk.Charts = append(hk.Charts, svg)
		}
		for _, c := range out.Changes {
			if out.Series[c.Series].Key() == k.Key {
				hk.Changes = append(hk.Changes, changeLine(c))
			}
		}
		for _, e := range out.Events {
			if e.Key() == k.Key {
				hk.Changes = append(hk.Changes, safe(fmt.Sprintf("%s changed at run %d (%s): %s → %s", e.What, e.Index+1, cmpOr(e.Label, e.Run), orNone(e.From), orNone(e.To))))
			}
		}
		page.Keys = append(page.Keys, hk)
	}
	return historyTmpl.Execute(w, page)
}

type historyPage struct {
	Out    history.Output
	Floors string
	Unread []string
	Keys   []historyHTMLKey
}

type historyHTMLKey struct {
	Title   string
	Charts  []template.HTML
	Changes []string
}

// seriesChart draws series si of out: its values by run number, and its
// change points.
func seriesChart(out history.Output, si int) (template.HTML, error) {
	s := out.Series[si]
	p := plot.New()
	p.Title.Text = safe(fmt.Sprintf("%s: %s", s.Figure, keyTitle(s.Key())))
	p.X.Label.Text = "run, in time order"
	p.Y.Label.Text = string(s.Figure)
	p.X.Min, p.X.Max = 0.5, float64(len(s.Points))+0.5
	p.Add(plotter.NewGrid())
	var all, flagged plotter.XYs
	for i, pt := range s.Points {
		xy := plotter.XY{X: float64(i + 1), Y: pt.Value}
		all = append(all, xy)
		if pt.Flagged {
			flagged = append(flagged, xy)
		}
	}
	line, points, err := plotter.NewLinePoints(all)
	if err != nil {
		return "", fmt.Errorf("chart %q: %w", p.Title.Text, err)
	}
	line.Color, points.Color, points.Shape = blue, blue, draw.CircleGlyph{}
	p.Add(line, points)
	if err := addBounds(p, s.Points); err != nil {
		return "", err
	}
	if len(flagged) > 0 {
		hollow, err := plotter.NewScatter(flagged)
		if err != nil {
			return "", err
		}
		hollow.GlyphStyle = draw.GlyphStyle{Color: orange, Radius: vg.Points(4), Shape: draw.RingGlyph{}}
		p.Add(hollow)
		p.Legend.Add("starved or late machine", hollow)
	}
	var cs []history.ChangeOut
	for _, c := range out.Changes {
		if c.Series == si {
			cs = append(cs, c)
		}
	}
	lo, hi := minMax(s.Points)
	from := p.X.Min
	for i, c := range cs {
		x := float64(c.Index) + 0.5 // between the last run before and the first after
		if err := addLine(p, fmt.Sprintf("change at run %d, p = %.3f", c.Index+1, c.P), plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}}, red, true); err != nil {
			return "", err
		}
		to := p.X.Max
		if i+1 < len(cs) {
			to = float64(cs[i+1].Index) + 0.5
		}
		for _, seg := range [][3]float64{{from, x, c.Before}, {x, to, c.After}} {
			l, err := plotter.NewLine(plotter.XYs{{X: seg[0], Y: seg[2]}, {X: seg[1], Y: seg[2]}})
			if err != nil {
				return "", err
			}
			l.Color, l.Dashes = grey, []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(l)
		}
		from = x
	}
	p.Legend.Top = true
	return svgOf(p)
}

// addBounds draws the interval of each point that has one as a bar from
// its low bound to its high one (to the value where a bound is missing).
func addBounds(p *plot.Plot, points []history.PointOut) error {
	var bars struct {
		plotter.XYs
		plotter.YErrors
	}
	for i, pt := range points {
		if pt.Low == nil && pt.High == nil {
			continue
		}
		lo, hi := pt.Value, pt.Value
		if pt.Low != nil {
			lo = *pt.Low
		}
		if pt.High != nil {
			hi = *pt.High
		}
		bars.XYs = append(bars.XYs, plotter.XY{X: float64(i + 1), Y: pt.Value})
		bars.YErrors = append(bars.YErrors, struct{ Low, High float64 }{pt.Value - lo, hi - pt.Value})
	}
	if len(bars.XYs) == 0 {
		return nil
	}
	b, err := plotter.NewYErrorBars(bars)
	if err != nil {
		return err
	}
	b.Color = grey
	p.Add(b)
	p.Legend.Add("interval the run measured", &plotter.Line{LineStyle: b.LineStyle})
	return nil
}

// minMax returns the least and greatest value of points.
func minMax(points []history.PointOut) (lo, hi float64) {
	lo, hi = points[0].Value, points[0].Value
	for _, p := range points {
		lo, hi = min(lo, p.Value), max(hi, p.Value)
	}
	return lo, hi
}

var historyTmpl = template.Must(template.New("history").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>ratecheck history</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#212121}
.meta{color:#616161}.warn{color:#ef6c00}.fail{color:#c62828}
figure{margin:1em 0}svg{max-width:100%;height:auto}
</style></head><body>
<h1>ratecheck history{{if .Out.Regression}}: <span class="fail">REGRESSION</span>{{end}}</h1>
<p class="meta">{{len .Out.Runs}} runs · {{len .Out.Series}} series · change points by E-divisive means, significance {{.Out.Significance}}, {{.Out.Permutations}} permutations, {{.Out.Confidence}} intervals · least change reported: {{.Floors}} · schema {{.Out.Schema}}</p>
{{range .Unread}}<p class="warn">unread: {{.}}</p>{{end}}
{{range .Keys}}
<h2>{{.Title}}</h2>
{{range .Changes}}<p>{{.}}</p>{{else}}<p class="meta">no change point</p>{{end}}
{{range .Charts}}<figure>{{.}}</figure>
{{end}}
{{end}}
</body></html>
`))
