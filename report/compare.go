package report

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/olekukonko/tablewriter"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
)

// RunSummary is what a comparison reads of one run.
type RunSummary struct {
	Run      string           `json:"run"`
	Verdict  string           `json:"verdict"`
	Surfaces []SurfaceSummary `json:"surfaces"`
}

// SurfaceSummary is one surface of a run: load, latency, limit, verdict.
type SurfaceSummary struct {
	Surface  string `json:"surface"`
	Requests int    `json:"requests"`
	// Rate is requests sent per second, Throughput requests admitted per
	// second, over the span of the surface's sends (as vegeta report).
	Rate          float64 `json:"rate"`
	Throughput    float64 `json:"throughput"`
	P50MS         float64 `json:"p50_ms"`
	P95MS         float64 `json:"p95_ms"`
	P99MS         float64 `json:"p99_ms"`
	MaxMS         float64 `json:"max_ms"`
	ObservedLimit *int    `json:"observed_limit"`
	Model         string  `json:"model"`
	Verdict       string  `json:"verdict"`
}

// Summarize reads the summary of a run from its records and verdict.
func Summarize(in *archive.Input, rep *analyze.Report) RunSummary {
	s := RunSummary{Run: rep.Verdict.Run, Verdict: rep.Verdict.Verdict}
	// The span of each surface's sends, in one pass.
	first, last := map[string]int64{}, map[string]int64{}
	for j := range in.Records {
		r := &in.Records[j]
		sf := in.Tables().Labels(r).Surface
		if f, ok := first[sf]; !ok || r.Start < f {
			first[sf] = r.Start
		}
		if l, ok := last[sf]; !ok || r.Start > l {
			last[sf] = r.Start
		}
	}
	for i, sv := range rep.Verdict.Surfaces {
		sd := rep.Surfaces[i]
		ss := SurfaceSummary{Surface: sv.Surface, Requests: sd.Requests, ObservedLimit: sv.ObservedLimit, Model: sv.Model, Verdict: sv.Verdict}
		if span := secs(last[sv.Surface], first[sv.Surface]); span > 0 {
			ss.Rate, ss.Throughput = float64(sd.Requests)/span, float64(sd.Admitted)/span
		}
		if m := sd.Latency; m != nil && m.Count > 0 {
			ss.P50MS, ss.P95MS, ss.P99MS, ss.MaxMS = msOf(m.Time.P50), msOf(m.Time.P95), msOf(m.Time.P99), msOf(m.Time.Max)
		}
		s.Surfaces = append(s.Surfaces, ss)
	}
	return s
}

func msOf(d time.Duration) float64 { return float64(d) / 1e6 }

// Comparison is a run set against a baseline.
type Comparison struct {
	Baseline RunSummary `json:"baseline"`
	Run      RunSummary `json:"run"`
	// MaxP99Increase is the largest p99 increase allowed, as a fraction.
	MaxP99Increase float64 `json:"max_p99_increase"`
	// Regressions says what got worse; any makes the verdict fail.
	Regressions []string `json:"regressions"`
	Verdict     string   `json:"verdict"`
}

// Compare sets run against base: a surface's verdict going from pass to
// fail, its p99 rising by more than maxP99Increase, its observed limit or
// limiter model changing, or a surface missing, are regressions.
func Compare(base, run RunSummary, maxP99Increase float64) Comparison {
	c := Comparison{Baseline: base, Run: run, MaxP99Increase: maxP99Increase, Regressions: []string{}, Verdict: analyze.Pass}
	if base.Verdict == analyze.Pass && run.Verdict != analyze.Pass {
		c.Regressions = append(c.Regressions, fmt.Sprintf("verdict %s → %s", base.Verdict, run.Verdict))
	}
	for _, b := range base.Surfaces {
		r, ok := surfaceOf(run, b.Surface)
		if !ok {
			c.Regressions = append(c.Regressions, fmt.Sprintf("%s: not in the run", b.Surface))
			continue
		}
		if b.Verdict == analyze.Pass && r.Verdict != analyze.Pass {
			c.Regressions = append(c.Regressions, fmt.Sprintf("%s: verdict %s → %s", b.Surface, b.Verdict, r.Verdict))
		}
		if b.P99MS > 0 && r.P99MS > b.P99MS*(1+maxP99Increase) {
			c.Regressions = append(c.Regressions, fmt.Sprintf("%s: p99 %.2f ms → %.2f ms (+%.0f%%, more than +%.0f%%)",
				b.Surface, b.P99MS, r.P99MS, 100*(r.P99MS/b.P99MS-1), 100*maxP99Increase))
		}
		if limitText(b.ObservedLimit) != limitText(r.ObservedLimit) {
			c.Regressions = append(c.Regressions, fmt.Sprintf("%s: observed limit %s → %s", b.Surface, limitText(b.ObservedLimit), limitText(r.ObservedLimit)))
		}
		if b.Model != r.Model {
			c.Regressions = append(c.Regressions, fmt.Sprintf("%s: model %s → %s", b.Surface, b.Model, r.Model))
		}
	}
	if len(c.Regressions) > 0 {
		c.Verdict = analyze.Fail
	}
	return c
}

func surfaceOf(s RunSummary, name string) (SurfaceSummary, bool) {
	for _, x := range s.Surfaces {
		if x.Surface == name {
			return x, true
		}
	}
	return SurfaceSummary{}, false
}

func limitText(l *int) string {
	if l == nil {
		return "none"
	}
	return strconv.Itoa(*l)
}

// CompareTable writes the comparison side by side, surface by surface, then
// the regressions and the verdict.
func CompareTable(w io.Writer, c Comparison) error {
	printf(w, "baseline %s\nrun      %s\n", c.Baseline.Run, c.Run.Run)
	t := tablewriter.NewWriter(w)
	t.Header("surface", "metric", "baseline", "run", "change")
	num := func(v float64, unit string) string { return strconv.FormatFloat(v, 'f', 2, 64) + unit }
	change := func(b, r float64) string {
		if b == 0 {
			return ""
		}
		return fmt.Sprintf("%+.1f%%", 100*(r/b-1))
	}
	for _, b := range c.Baseline.Surfaces {
		r, _ := surfaceOf(c.Run, b.Surface)
		rows := [][]string{
			{"requests", strconv.Itoa(b.Requests), strconv.Itoa(r.Requests), change(float64(b.Requests), float64(r.Requests))},
			{"rate", num(b.Rate, "/s"), num(r.Rate, "/s"), change(b.Rate, r.Rate)},
			{"throughput", num(b.Throughput, "/s"), num(r.Throughput, "/s"), change(b.Throughput, r.Throughput)},
			{"p50", num(b.P50MS, " ms"), num(r.P50MS, " ms"), change(b.P50MS, r.P50MS)},
			{"p95", num(b.P95MS, " ms"), num(r.P95MS, " ms"), change(b.P95MS, r.P95MS)},
			{"p99", num(b.P99MS, " ms"), num(r.P99MS, " ms"), change(b.P99MS, r.P99MS)},
			{"max", num(b.MaxMS, " ms"), num(r.MaxMS, " ms"), change(b.MaxMS, r.MaxMS)},
			{"observed limit", limitText(b.ObservedLimit), limitText(r.ObservedLimit), ""},
			{"model", b.Model, r.Model, ""},
			{"verdict", b.Verdict, r.Verdict, ""},
		}
		for _, row := range rows {
			row = append([]string{b.Surface}, row...)
			for i := range row {
				row[i] = Safe(row[i])
			}
			if err := t.Append(row); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, reg := range c.Regressions {
		printf(w, "regression: %s\n", reg)
	}
	if len(c.Regressions) == 0 {
		printf(w, "no regression (p99 may rise by up to %.0f%%)\n", 100*c.MaxP99Increase)
	}
	return nil
}
