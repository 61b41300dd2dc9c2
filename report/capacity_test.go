package report

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/capacity"

	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// kneeRun is a search of the embedded pool (10 workers of 20 ms) as a
// run gave it: three ramp steps that passed, four past the knee that
// failed on latency, the knee re-measured; with the model given.
func kneeRun(u *capacity.USL) capacity.Result {
	ms := func(v float64) *clock.Millis { m := clock.Millis(v); return &m }
	step := func(phase string, offered, achieved, thr, q, conc float64, verdict capacity.StepVerdict) capacity.StepResult {
		s := capacity.StepResult{Phase: phase, OfferedRPS: offered, AchievedRPS: achieved, ThroughputRPS: thr, QuantileMS: clock.Millis(q),
			QuantileLowMS: ms(q * 0.98), QuantileHighMS: ms(q * 1.03), UncorrectedQuantileMS: clock.Millis(q * 0.95), Sources: int(offered/100) + 1,
			Concurrency: conc, Requests: int(5 * offered), MeanLatencyMS: clock.Millis(1000 * conc / thr), DurationMS: 5000, Verdict: verdict}
		if verdict == capacity.StepFail {
			s.LimitedBy = capacity.CauseLatency
		}
		return s
	}
	knee, high := 475.7, 496.7
	return capacity.Result{Verdict: capacity.VerdictFound, KneeRPS: &knee, KneeLowRPS: &knee, KneeHighRPS: &high, LimitedBy: capacity.CauseLatency,
		SLO: "p99<=100ms", Quantile: 0.99, SLOMS: 100, ErrorBudget: 0.01, Confidence: 0.95, Precision: 0.05, StartRPS: 100, MaxRPS: 1000,
		Steps: []capacity.StepResult{
			step("ramp", 100, 100, 100, 22.6, 2.1, "pass"),
			step("ramp", 200, 200, 200, 23.0, 4.1, "pass"),
			step("ramp", 400, 400, 400, 23.2, 8.3, "pass"),
			step("ramp", 800, 800, 480.5, 2111.2, 822.2, capacity.StepFail),
			step("bisect", 565.7, 565.6, 480.1, 1072.5, 301.2, capacity.StepFail),
			step("bisect", 475.7, 475.7, 475.8, 23.8, 9.9, "pass"),
			step("bisect", 518.7, 518.7, 479.6, 503.8, 145.6, capacity.StepFail),
			step("bisect", 496.7, 496.8, 482.5, 195.8, 52.6, capacity.StepFail),
			step("remeasure", 475.7, 475.6, 475.6, 44.4, 11.5, "pass"),
		},
		USL: u}
}

// models are the model lines a capacity result can end with: a peak the
// steps bound, at a concurrency or as a ceiling; one above what was
// measured; one the steps do not bound; none at all.
func models() []struct {
	name string
	usl  *capacity.USL
} {
	f := func(v float64) *float64 { return &v }
	s := func(v string) *string { return &v }
	base := capacity.USL{Lambda: 55, Kappa: 0.003, Points: 9, BehindPoints: 4, MaxThroughputRPS: 482.5, MaxConcurrency: 822.2, Resamples: 1000}
	within, ceiling, above, unbounded := base, base, base, base
	within.PeakStatus, within.PeakConcurrency, within.PeakRPS, within.PeakLowRPS, within.PeakHighRPS = capacity.PeakWithinData, f(18.2), f(491.3), f(478.0), f(512.9)
	within.PeakConcurrencyLow, within.PeakConcurrencyHigh = f(16.0), f(21.5)
	ceiling.Kappa, ceiling.Sigma = 0, 0.1
	ceiling.PeakStatus, ceiling.PeakRPS, ceiling.PeakLowRPS, ceiling.PeakHighRPS = capacity.PeakWithinData, f(550), f(470.2), f(601.0)
	above.PeakStatus, above.PeakConcurrency, above.PeakRPS, above.PeakLowRPS, above.PeakHighRPS = capacity.PeakAboveMeasured, f(30), f(560.0), f(531.5), f(603.2)
	above.PeakReason = s("the peak's whole interval lies above the highest throughput measured (482.5/s): an extrapolation, not headroom")
	unbounded.Sigma, unbounded.Kappa, unbounded.ExcludedSteps, unbounded.PeakStatus = 0, 0, 1, capacity.PeakUnbounded
	unbounded.PeakReason = s("the fitted curve still rises in proportion at the highest concurrency measured (822.2): no step reached the API's limit")
	return []struct {
		name string
		usl  *capacity.USL
	}{{"within the data", &within}, {"a ceiling", &ceiling}, {"above what was measured", &above}, {"unbounded", &unbounded}, {"no model", nil}}
}

// TestCapacityGolden: the table and its knee and model lines, for every
// kind of model line.
func TestCapacityGolden(t *testing.T) {
	var got bytes.Buffer
	for _, m := range models() {
		fmt.Fprintf(&got, "== %s\n", m.name)
		if err := CapacityTable(&got, kneeRun(m.usl)); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "testdata/capacity.golden", got.Bytes())
	for _, want := range []string{
		"peak 491.3/s [478.0, 512.9] at concurrency 18.2\n",
		"peak 550.0/s [470.2, 601.0], approached as concurrency grows\n",
		"peak 560.0/s [531.5, 603.2] at concurrency 30.0; flagged: the peak's whole interval lies above the highest throughput measured (482.5/s): an extrapolation, not headroom\n",
		"model (USL fit over 9 steps, 1 left out, not a measurement): no peak: the fitted curve still rises",
	} {
		if !strings.Contains(got.String(), want) {
			t.Errorf("no %q in\n%s", want, got.String())
		}
	}
}

var (
	figureRE  = regexp.MustCompile(`(?s)<figure>(.*?)</figure>`)
	seriesRE  = regexp.MustCompile(`<span class="series">(.*?)</span>`)
	captionRE = regexp.MustCompile(`(?s)<figcaption>(.*?)</figcaption>`)
)

// TestCapacityHTMLCaptionsAndLegends: every chart of a capacity page has
// its legend below its x axis, where it covers no data, and its caption
// names exactly the series whose legend entries it draws; the model's
// chart, with its fitted curve, is there when there is a model, and the
// page speaks of the USL curve only then.
func TestCapacityHTMLCaptionsAndLegends(t *testing.T) {
	for _, m := range models() {
		t.Run(m.name, func(t *testing.T) {
			var page bytes.Buffer
			if err := CapacityHTML(&page, kneeRun(m.usl), CapacityMeta{Run: "results/test-capacity", Target: "http://127.0.0.1:8080", Surface: "rest"}); err != nil {
				t.Fatal(err)
			}
			figs := figureRE.FindAllStringSubmatch(page.String(), -1)
			if want := 2 + map[bool]int{true: 1}[m.usl != nil]; len(figs) != want {
				t.Fatalf("%d charts, want %d", len(figs), want)
			}
			if said := strings.Contains(page.String(), "USL curve"); said != (m.usl != nil) {
				t.Errorf("the page speaks of the USL curve: %v, with a model: %v", said, m.usl != nil)
			}
			for i, f := range figs {
				svg := f[1][:strings.Index(f[1], "<figcaption>")]
				caption := captionRE.FindStringSubmatch(f[1])[1]
				var named []string
				for _, s := range seriesRE.FindAllStringSubmatch(caption, -1) {
					named = append(named, html.UnescapeString(s[1]))
				}
				charts := parseCharts(t, svg)
				if len(charts) != 1 {
					t.Fatalf("chart %d: %d charts in one SVG", i, len(charts))
				}
				below := legendTexts(t, charts[0])
				slices.Sort(named)
				slices.Sort(below)
				if !slices.Equal(named, below) {
					t.Errorf("chart %d: the caption names %q, the legend below the chart draws %q", i, named, below)
				}
				if len(named) == 0 {
					t.Errorf("chart %d: nothing named", i)
				}
				if i == 2 {
					curve := charts[0].series("#757575")
					if len(curve.pts) < 100 {
						t.Errorf("the model's chart draws no fitted curve (%d points)", len(curve.pts))
					}
					if !slices.ContainsFunc(named, func(s string) bool { return strings.HasPrefix(s, "USL fit") }) {
						t.Errorf("the model's chart names no fitted curve: %q", named)
					}
					if peak := slices.ContainsFunc(named, func(s string) bool { return strings.HasPrefix(s, "model peak") }); peak != (m.usl.PeakRPS != nil) {
						t.Errorf("a model peak drawn: %v, the model has one: %v", peak, m.usl.PeakRPS != nil)
					}
					if m.usl.PeakStatus == capacity.PeakAboveMeasured && !slices.ContainsFunc(named, func(s string) bool { return strings.Contains(s, "not headroom") }) {
						t.Errorf("a peak above what was measured is not flagged: %q", named)
					}
				}
			}
		})
	}
}

// legendTexts are the texts of chart c below its x axis (under its tick
// marks) that are neither tick labels nor the axis's title: its legend,
// which then covers no data.
func legendTexts(t *testing.T, c svgChart) []string {
	t.Helper()
	bottom, left := 1e18, 1e18
	for _, l := range c.lines {
		if l.stroke != "#000000" || len(l.pts) != 2 {
			continue
		}
		if p, q := l.pts[0], l.pts[1]; p[0] == q[0] && q[1]-p[1] > 7.99 && q[1]-p[1] < 8.01 { // a major x tick mark
			bottom = min(bottom, p[1])
		} else if p[1] == q[1] && q[0]-p[0] > 7.99 && q[0]-p[0] < 8.01 { // a major y tick mark
			left = min(left, p[0])
		}
	}
	if bottom == 1e18 || left == 1e18 {
		t.Fatal("no tick marks on an axis")
	}
	var out []string
	for _, tx := range c.texts {
		if _, err := strconv.ParseFloat(tx.text, 64); err == nil || tx.rotated || tx.text == "" {
			continue
		}
		if tx.y >= bottom {
			continue // inside the data area's height, or above it: a title
		}
		if strings.Contains(tx.text, "rate, requests per second") || strings.Contains(tx.text, "requests in flight") {
			continue // the x axis's title
		}
		out = append(out, tx.text)
	}
	return out
}

// TestKneeLineOfAContradiction: a search that ended inconclusive because a
// rate it had passed failed later says which steps disagreed and what
// that means, not "no rate sustained".
func TestKneeLineOfAContradiction(t *testing.T) {
	t.Parallel()
	step := func(rate float64, v capacity.StepVerdict) capacity.StepResult {
		return capacity.StepResult{OfferedRPS: rate, Verdict: v}
	}
	high := 436.2
	r := capacity.Result{Verdict: capacity.VerdictInconclusive, KneeHighRPS: &high, LimitedBy: capacity.CauseLatency, SLO: "p99<=100ms", ErrorBudget: 0.01,
		Steps: []capacity.StepResult{step(400, capacity.StepPass), step(800, capacity.StepFail), step(565.7, capacity.StepFail), step(475.7, capacity.StepFail), step(436.2, capacity.StepFail), step(400, capacity.StepFail)}}
	want := "knee inconclusive: 400.0/s passed in step 0 and 400.0/s failed in step 5 (p99<=100ms, error budget 1%), limited by latency: the target's capacity, or this host's, changed during the search"
	if got := KneeLine(r); got != want {
		t.Errorf("KneeLine\n got %s\nwant %s", got, want)
	}
	r.Steps = r.Steps[:5] // no re-measure: nothing contradicts
	if got := KneeLine(r); strings.Contains(got, "changed during the search") {
		t.Errorf("KneeLine without a contradiction: %s", got)
	}
}
