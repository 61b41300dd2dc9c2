// Package report renders verdicts for people and machines: tables, JSON.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jamiealquiza/tachymeter"
	"github.com/olekukonko/tablewriter"

	"github.com/connectbyjbrh/ratecheck/analyze"
)

// JSON writes the schema-1 verdict, indented, with a trailing newline.
func JSON(w io.Writer, rep *analyze.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep.Verdict)
}

// Tables writes, per surface, a summary line, a table of checks with verdict
// and evidence, and a latency line, then the overall verdict.
func Tables(w io.Writer, rep *analyze.Report) error {
	v := rep.Verdict
	for _, note := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", note)
	}
	for _, warn := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	for i, s := range v.Surfaces {
		d := rep.Surfaces[i]
		fmt.Fprintf(w, "\n%s  %s: %s\n", strings.ToUpper(s.Verdict), strings.ToUpper(s.Surface), summaryLine(s, d))
		fmt.Fprintf(w, "  %s\n", countsLine(d))
		if len(d.Errors) > 0 {
			var kinds []string
			for _, e := range d.Errors[:min(len(d.Errors), 3)] {
				kinds = append(kinds, fmt.Sprintf("%d× %s", e.N, e.Kind))
			}
			fmt.Fprintf(w, "  unanswered: %s\n", strings.Join(kinds, "; "))
		}
		t := tablewriter.NewWriter(w)
		t.Header("check", "verdict", "evidence")
		for _, c := range s.Checks {
			if err := t.Append(c.Name, c.Verdict, wrap(c.Detail, 90)); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		if m := d.Latency; m != nil && m.Count > 0 {
			fmt.Fprintf(w, "  %s\n", latencyLine(m))
			if m.Histogram != nil {
				fmt.Fprintf(w, "  latency histogram (%d samples, bins of %v):\n    %s\n", m.Samples, m.HistogramBinSize.Round(time.Microsecond),
					strings.ReplaceAll(wrap(histogramText(*m.Histogram), 100), "\n", "\n    "))
			}
		}
	}
	fmt.Fprintf(w, "\nverdict: %s (window %v", strings.ToUpper(v.Verdict), time.Duration(v.WindowMS)*time.Millisecond)
	if v.Run != "" {
		fmt.Fprintf(w, ", run %s", v.Run)
	}
	fmt.Fprintln(w, ")")
	return nil
}

// histogramText lists a latency histogram's bins as "low-high:count".
func histogramText(h tachymeter.Histogram) string {
	var bins []string
	for _, bin := range h {
		for k, n := range bin {
			bins = append(bins, fmt.Sprintf("%s:%d", strings.ReplaceAll(k, " ", ""), n))
		}
	}
	return strings.Join(bins, "  ")
}

// summaryLine says what a surface's limit looked like from outside.
func summaryLine(s analyze.SurfaceVerdict, d analyze.SurfaceDetail) string {
	observed := "none refused"
	if s.ObservedLimit != nil {
		observed = strconv.Itoa(*s.ObservedLimit)
	}
	rc := "unknown"
	if s.RejectedCount != nil {
		rc = strconv.FormatBool(*s.RejectedCount)
	}
	return fmt.Sprintf("expected limit %d, observed %s, model %s, refused requests count: %s", s.ExpectedLimit, observed, s.Model, rc)
}

// countsLine counts a surface's requests by answer and by what the model
// required of them.
func countsLine(d analyze.SurfaceDetail) string {
	return fmt.Sprintf("%d requests from %s: %d admitted, %d refused, %d faults; required 200: %d, required 429: %d, indeterminate: %d",
		d.Requests, strings.Join(d.Sources, ", "), d.Admitted, d.Refused, d.Faults, d.Required200, d.Required429, d.Indet)
}

// latencyLine gives a surface's latency percentiles.
func latencyLine(m *tachymeter.Metrics) string {
	r := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
	return fmt.Sprintf("latency: min %s  p50 %s  p95 %s  p99 %s  max %s", r(m.Time.Min), r(m.Time.P50), r(m.Time.P95), r(m.Time.P99), r(m.Time.Max))
}

// wrap breaks s into lines of at most n bytes at spaces.
func wrap(s string, n int) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if line+1+len(word) > n {
				b.WriteByte('\n')
				line = 0
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}
