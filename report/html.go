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

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/decode"
)

// HTMLFile is the name of the report a run folder holds.
const HTMLFile = "report.html"

// HTML writes a self-contained page for people (it fetches nothing, so it
// opens offline): the verdict and checks of each surface, and charts drawn
// with gonum/plot as inline SVG: the rolling-window count of the primary
// address against the limit, with the first 429 and every leak and false
// throttle marked; requests per outcome over time; latency percentiles over
// time; and for a fleet, when each attempt wave went out.
func HTML(w io.Writer, in *decode.Input, rep *analyze.Report, cfg analyze.Config) error {
	page := htmlPage{Verdict: rep.Verdict, Notes: rep.Notes, Warnings: rep.Warnings, Window: cfg.Window}
	t0 := int64(math.MaxInt64)
	for i := range in.Records {
		t0 = min(t0, in.Records[i].Start)
	}
	for i, sv := range rep.Verdict.Surfaces {
		sd := rep.Surfaces[i]
		s := htmlSurface{SurfaceVerdict: sv, Detail: sd, Summary: summaryLine(sv, sd), Counts: countsLine(sd)}
		if sd.Latency != nil && sd.Latency.Count > 0 {
			s.Latency = latencyLine(sd.Latency)
		}
		var recs []*decode.Record
		for j := range in.Records {
			if r := &in.Records[j]; in.Tables().Labels(r).Surface == sv.Surface {
				recs = append(recs, r)
			}
		}
		for _, c := range []func() (*plot.Plot, error){
			func() (*plot.Plot, error) {
				return windowChart(in.Tables(), recs, sd.Primary, sv.ExpectedLimit, cfg.Window, t0)
			},
			func() (*plot.Plot, error) { return outcomeChart(recs, t0) },
			func() (*plot.Plot, error) { return latencyChart(recs, t0) },
		} {
			p, err := c()
			if err != nil {
				return err
			}
			svg, err := svgOf(p)
			if err != nil {
				return err
			}
			s.Charts = append(s.Charts, svg)
		}
		page.Surfaces = append(page.Surfaces, s)
	}
	if p, err := fleetChart(in, t0); err != nil {
		return err
	} else if p != nil {
		svg, err := svgOf(p)
		if err != nil {
			return err
		}
		page.Fleet = svg
	}
	return pageTmpl.Execute(w, page)
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

type htmlPage struct {
	Verdict  analyze.Verdict
	Notes    []string
	Warnings []string
	Window   time.Duration
	Surfaces []htmlSurface
	Fleet    template.HTML // the fleet chart, if the run has a fleet
}

type htmlSurface struct {
	analyze.SurfaceVerdict
	Detail                   analyze.SurfaceDetail
	Summary, Counts, Latency string
	Charts                   []template.HTML
}

// Colours of the charts: one per outcome, the limit in black.
var (
	green  = color.RGBA{R: 0x2e, G: 0x7d, B: 0x32, A: 0xff}
	red    = color.RGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
	orange = color.RGBA{R: 0xef, G: 0x6c, B: 0x00, A: 0xff}
	blue   = color.RGBA{R: 0x15, G: 0x65, B: 0xc0, A: 0xff}
	grey   = color.RGBA{R: 0x75, G: 0x75, B: 0x75, A: 0xff}
)

// chartBins is how many points a series keeps at most: a million requests
// would make a page no browser opens.
const chartBins = 600

// windowChart draws, for the primary address, how many requests were
// surely and possibly in the server's window when each one was counted
// (the uncertainty interval of docs/method.md), the limit, the first 429,
// and each leak and false throttle.
func windowChart(tab *decode.Tables, recs []*decode.Record, primary string, limit int, w time.Duration, t0 int64) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("Rolling %v window of %s against the limit", w, primary), "requests in the window")
	g := analyze.Group{Source: primary}
	for _, r := range recs {
		if tab.Labels(r).Source == primary {
			g.Records = append(g.Records, r)
		}
	}
	if len(g.Records) == 0 {
		return p, nil
	}
	js := analyze.Model(g, limit, w)
	first, last := startRange(g.Records)
	surely, possibly := newBinned(first, last), newBinned(first, last)
	var leaks, falses plotter.XYs
	firstRefusal := int64(math.MaxInt64)
	for _, j := range js {
		r := g.Records[j.Index]
		surely.max(r.Start, float64(1+j.Definite))
		possibly.max(r.Start, float64(1+j.Definite+j.Ambiguous))
		if r.Code == 429 {
			firstRefusal = min(firstRefusal, r.Start)
		}
		if j.Leak && len(leaks) < 500 {
			leaks = append(leaks, plotter.XY{X: secs(r.Start, t0), Y: float64(1 + j.Definite)})
		}
		if j.FalseThrottle && len(falses) < 500 {
			falses = append(falses, plotter.XY{X: secs(r.Start, t0), Y: float64(1 + j.Definite + j.Ambiguous)})
		}
	}
	if err := addLine(p, "possibly in the window", possibly.xys(t0), orange, false); err != nil {
		return nil, err
	}
	if err := addLine(p, "surely in the window", surely.xys(t0), blue, false); err != nil {
		return nil, err
	}
	x0, x1 := secs(first, t0), secs(last, t0)
	if err := addLine(p, fmt.Sprintf("limit %d", limit), plotter.XYs{{X: x0, Y: float64(limit)}, {X: x1, Y: float64(limit)}}, color.Black, true); err != nil {
		return nil, err
	}
	if firstRefusal != math.MaxInt64 {
		x := secs(firstRefusal, t0)
		if err := addLine(p, "first 429", plotter.XYs{{X: x, Y: 0}, {X: x, Y: float64(limit) * 1.1}}, red, true); err != nil {
			return nil, err
		}
	}
	for _, m := range []struct {
		name string
		xys  plotter.XYs
		c    color.Color
		g    draw.GlyphDrawer
	}{{"leak (admitted over the limit)", leaks, red, draw.CrossGlyph{}}, {"false throttle (refused under it)", falses, orange, draw.TriangleGlyph{}}} {
		if len(m.xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(m.xys)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = m.c, m.g, vg.Points(3)
		p.Add(sc)
		p.Legend.Add(m.name, sc)
	}
	return p, nil
}

// outcomeChart draws requests per time bin by outcome, over every address.
func outcomeChart(recs []*decode.Record, t0 int64) (*plot.Plot, error) {
	if len(recs) == 0 {
		return newPlot("Requests by outcome", "requests"), nil
	}
	first, last := startRange(recs)
	adm, ref, flt := newBinned(first, last), newBinned(first, last), newBinned(first, last)
	for _, r := range recs {
		adm.add(r.Start, 0)
		ref.add(r.Start, 0)
		flt.add(r.Start, 0)
		switch {
		case r.Code == 429:
			ref.add(r.Start, 1)
		case r.Code == 0 || r.Code >= 500:
			flt.add(r.Start, 1)
		default:
			adm.add(r.Start, 1)
		}
	}
	p := newPlot("Requests by outcome, every address", fmt.Sprintf("requests per %v", time.Duration(adm.width).Round(time.Millisecond)))
	for _, s := range []struct {
		name string
		b    *binned
		c    color.Color
	}{{"admitted", adm, green}, {"refused (429)", ref, red}, {"faults (5xx, no answer)", flt, grey}} {
		if err := addLine(p, s.name, s.b.xys(t0), s.c, false); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// latencyChart draws latency percentiles per time bin, over every address.
func latencyChart(recs []*decode.Record, t0 int64) (*plot.Plot, error) {
	p := newPlot("Latency percentiles", "latency (ms)")
	if len(recs) == 0 {
		return p, nil
	}
	const bins = 60
	first, last := startRange(recs)
	width := since(last, first)/bins + 1
	lat := make([][]float64, bins+1)
	for _, r := range recs {
		k := since(r.Start, first) / width
		lat[k] = append(lat[k], float64(r.End-r.Start)/1e6)
	}
	for _, q := range []struct {
		name string
		q    float64
		c    color.Color
	}{{"p50", 0.50, green}, {"p95", 0.95, orange}, {"p99", 0.99, red}} {
		var xys plotter.XYs
		for k, ls := range lat {
			if len(ls) == 0 {
				continue
			}
			slices.Sort(ls)
			xys = append(xys, plotter.XY{X: (float64(since(first, t0)) + float64(uint64(k)*width+width/2)) / 1e9, Y: ls[int(q.q*float64(len(ls)-1))]})
		}
		if err := addLine(p, q.name, xys, q.c, false); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// binned is a series over chartBins time bins from first (Unix ns).
type binned struct {
	first int64
	width uint64
	v     []float64
	set   []bool
}

// newBinned returns a series over [first, last], the earliest and latest
// instants it will be given.
func newBinned(first, last int64) *binned {
	return &binned{first: first, width: since(last, first)/chartBins + 1, v: make([]float64, chartBins+1), set: make([]bool, chartBins+1)}
}

func (b *binned) max(t int64, v float64) {
	k := since(t, b.first) / b.width
	if !b.set[k] || v > b.v[k] {
		b.v[k], b.set[k] = v, true
	}
}

func (b *binned) add(t int64, v float64) {
	k := since(t, b.first) / b.width
	b.v[k] += v
	b.set[k] = true
}

func (b *binned) xys(t0 int64) plotter.XYs {
	var out plotter.XYs
	for k, v := range b.v {
		if b.set[k] {
			out = append(out, plotter.XY{X: (float64(since(b.first, t0)) + float64(uint64(k)*b.width)) / 1e9, Y: v})
		}
	}
	return out
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
	l.Color, l.Width = c, vg.Points(1.2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// svgOf renders p as an SVG element to inline in the page.
func svgOf(p *plot.Plot) (template.HTML, error) {
	wt, err := p.WriterTo(9*vg.Inch, 3.6*vg.Inch, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:] // the XML declaration and comment do not belong inside HTML
	}
	return template.HTML(s), nil // safe: gonum/plot drew it from numbers and our own titles
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"upper": strings.ToUpper,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>ratecheck {{.Verdict.Verdict}}: {{.Verdict.Run}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#212121}
h1 .pass,td.pass{color:#2e7d32}h1 .fail,td.fail{color:#c62828}h1 .skip,td.skip{color:#757575}h1 .inconclusive,td.inconclusive{color:#ef6c00}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
td.pass,td.fail,td.skip,td.inconclusive{font-weight:bold}.meta{color:#616161}.warn{color:#ef6c00}
figure{margin:1em 0}svg{max-width:100%;height:auto}
</style></head><body>
<h1>ratecheck: <span class="{{.Verdict.Verdict}}">{{upper .Verdict.Verdict}}</span></h1>
<p class="meta">run {{.Verdict.Run}} · target {{.Verdict.Target}} · window {{.Window}} · schema {{.Verdict.Schema}}</p>
{{range .Notes}}<p>note: {{.}}</p>{{end}}
{{range .Warnings}}<p class="warn">warning: {{.}}</p>{{end}}
{{range .Surfaces}}
<h2>{{.Surface}}: <span class="{{.Verdict}}">{{upper .Verdict}}</span></h2>
<p>{{.Summary}}</p><p class="meta">{{.Counts}}</p>{{if .Missing}}<p class="warn">missing evidence: {{.Missing}}</p>{{end}}
<table><tr><th>check</th><th>verdict</th><th>evidence</th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>
{{if .Latency}}<p class="meta">{{.Latency}}</p>{{end}}
{{range .Charts}}<figure>{{.}}</figure>
{{end}}
{{end}}
{{if .Fleet}}<h2>fleet</h2>
<p>Retry times per attempt wave: lockstep clients go out together (vertical steps), jittered ones spread out (ramps). The verdict above judges the limits; the fleet's own verdict (collisions, re-collisions) is what <code>ratecheck fleet</code> printed.</p>
<figure>{{.Fleet}}</figure>{{end}}
</body></html>
`))
