package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/decode"
)

// HTMLFile is the name of the report a run folder holds.
const HTMLFile = "report.html"

// HTML writes a self-contained page for people (it fetches nothing, so it
// opens offline): the verdict and checks of each surface, and charts drawn
// with gonum/plot as inline SVG, the three of a surface on one time axis:
// the rolling-window count of the primary address against the limit, with
// the first 429 and every leak and false throttle marked; requests per
// outcome per time bin; latency percentiles per time bin. For a fleet run
// (fleet not nil: its verdict, as jitter.Judge gave it) the page leads with
// the fleet's verdict and checks, and charts when each attempt wave went
// out; the limits' verdict follows as the surfaces'. The charts draw what
// the analysis kept: rep must come from an analysis with Config.Charts.
func HTML(w io.Writer, in *decode.Input, rep *analyze.Report, cfg analyze.Config, fleet *jitter.Report) error {
	page := htmlPage{Verdict: rep.Verdict, Lead: rep.Verdict.Verdict, Notes: rep.Notes, Warnings: rep.Warnings, Window: cfg.Window, FleetReport: fleet}
	if fleet != nil {
		page.Lead = fleet.Verdict
	}
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
		if len(recs) > 0 && sd.Window == nil {
			return fmt.Errorf("%s: the analysis kept no window series to chart (analyze.Config.Charts)", sv.Surface)
		}
		plots, err := surfaceCharts(recs, sd.Window, sd.Primary, sv.ExpectedLimit, cfg.Window, t0)
		if err != nil {
			return err
		}
		if s.Charts, err = svgOf(plots...); err != nil {
			return err
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

type htmlPage struct {
	Verdict analyze.Verdict
	// Lead is the verdict the page leads with: the fleet's for a fleet
	// run, else the run's.
	Lead        string
	FleetReport *jitter.Report
	Notes       []string
	Warnings    []string
	Window      time.Duration
	Surfaces    []htmlSurface
	Fleet       template.HTML // the fleet chart, if the run has a fleet
}

type htmlSurface struct {
	analyze.SurfaceVerdict
	Detail                   analyze.SurfaceDetail
	Summary, Counts, Latency string
	Charts                   template.HTML // the surface's three charts, aligned on one time axis
}

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"upper": strings.ToUpper,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>ratecheck {{.Lead}}: {{.Verdict.Run}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#212121}
h1 .pass,td.pass{color:#2e7d32}h1 .fail,td.fail{color:#c62828}h1 .skip,td.skip{color:#757575}h1 .inconclusive,td.inconclusive{color:#ef6c00}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
td.pass,td.fail,td.skip,td.inconclusive{font-weight:bold}.meta{color:#616161}.warn{color:#ef6c00}
figure{margin:1em 0}svg{max-width:100%;height:auto}
</style></head><body>
{{with .FleetReport}}<h1>ratecheck fleet: <span class="{{.Verdict}}">{{upper .Verdict}}</span></h1>
<p class="meta">run {{$.Verdict.Run}} · target {{$.Verdict.Target}} · window {{$.Window}} · schema {{$.Verdict.Schema}}</p>
<p>{{.Clients}} clients, {{.Requests}} requests; the fleet's checks (what <code>ratecheck fleet</code> printed):</p>
<table><tr><th>check</th><th>verdict</th><th>evidence</th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>
{{range .Notes}}<p>note: {{.}}</p>{{end}}
<h2>limits: <span class="{{$.Verdict.Verdict}}">{{upper $.Verdict.Verdict}}</span></h2>
<p>The limit checks below judge the addresses of the primer and the failure-table rows; the fleet's clients share one address on purpose, so their verdict is the fleet's above.</p>
{{else}}<h1>ratecheck: <span class="{{.Verdict.Verdict}}">{{upper .Verdict.Verdict}}</span></h1>
<p class="meta">run {{.Verdict.Run}} · target {{.Verdict.Target}} · window {{.Window}} · schema {{.Verdict.Schema}}</p>
{{end}}{{range .Notes}}<p>note: {{.}}</p>{{end}}
{{range .Warnings}}<p class="warn">warning: {{.}}</p>{{end}}
{{range .Surfaces}}
<h2>{{.Surface}}: <span class="{{.Verdict}}">{{upper .Verdict}}</span></h2>
<p>{{.Summary}}</p><p class="meta">{{.Counts}}</p>{{if .Missing}}<p class="warn">missing evidence: {{.Missing}}</p>{{end}}
<table><tr><th>check</th><th>verdict</th><th>evidence</th></tr>
{{range .Checks}}<tr><td>{{.Name}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>
{{if .Latency}}<p class="meta">{{.Latency}}</p>{{end}}
<figure>{{.Charts}}</figure>
{{end}}
{{if .Fleet}}<h2>fleet</h2>
<p>Retry times per attempt wave: lockstep clients go out together (vertical steps), jittered ones spread out (ramps).{{if not .FleetReport}} The verdict above judges the limits; the fleet's own verdict (collisions, re-collisions) is what <code>ratecheck fleet</code> and <code>ratecheck analyze</code> print.{{end}}</p>
<figure>{{.Fleet}}</figure>{{end}}
</body></html>
`))
