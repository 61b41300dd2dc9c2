package report

import (
	"encoding/json"
	"fmt"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/internal/human"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jamiealquiza/tachymeter"
	"github.com/olekukonko/tablewriter"

	"github.com/connectbyjbrh/ratecheck/analyze"
)

// JSON writes the schema-1 verdict, indented, with a trailing newline.
// Lists are written as [] when empty, never null.
func JSON(w io.Writer, rep *analyze.Report) error {
	v := rep.Verdict
	v.Surfaces = slices.Clone(v.Surfaces)
	if v.Surfaces == nil {
		v.Surfaces = []analyze.SurfaceVerdict{}
	}
	for i := range v.Surfaces {
		if v.Surfaces[i].ModelAlternatives == nil {
			v.Surfaces[i].ModelAlternatives = []string{}
		}
		if v.Surfaces[i].Checks == nil {
			v.Surfaces[i].Checks = []analyze.Check{}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Tables writes, per surface, a summary line, a table of checks with verdict
// and evidence, and a latency line, then the overall verdict.
func Tables(w io.Writer, rep *analyze.Report) error {
	v := rep.Verdict
	for _, note := range rep.Notes {
		printf(w, "note: %s\n", note)
	}
	for _, warn := range rep.Warnings {
		printf(w, "warning: %s\n", warn)
	}
	for i, s := range v.Surfaces {
		d := rep.Surfaces[i]
		printf(w, "\n%s  %s: %s\n", strings.ToUpper(s.Verdict), strings.ToUpper(s.Surface), summaryLine(s, d))
		printf(w, "  %s\n", countsLine(d))
		if s.Timing != "" {
			printf(w, "  timing: %s\n", s.Timing)
		}
		if s.Missing != "" {
			printf(w, "  missing evidence: %s\n", s.Missing)
		}
		if len(d.Errors) > 0 {
			var kinds []string
			for _, e := range d.Errors[:min(len(d.Errors), 3)] {
				kinds = append(kinds, fmt.Sprintf("%d× %s", e.N, e.Kind))
			}
			printf(w, "  unanswered: %s\n", strings.Join(kinds, "; "))
		}
		t := tablewriter.NewWriter(w)
		t.Header("check", "verdict", "evidence")
		for _, c := range s.Checks {
			if err := t.Append(safe(c.Name), safe(c.Verdict), wrap(safe(c.Detail), 90)); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		if m := d.Latency; m != nil && m.Count > 0 {
			printf(w, "  %s\n", latencyLine(m))
			if m.Histogram != nil {
				printf(w, "  latency histogram (%d samples, bins of %v):\n    %s\n", m.Samples, m.HistogramBinSize.Round(time.Microsecond),
					strings.ReplaceAll(wrap(histogramText(*m.Histogram), 100), "\n", "\n    "))
			}
		}
	}
	printf(w, "\nverdict: %s (window %v", strings.ToUpper(v.Verdict), v.WindowMS.Duration())
	if v.Run != "" {
		printf(w, ", run %s", v.Run)
	}
	printf(w, ")\n")
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

// limiterName names a fitted limiter in a surface's summary: its family,
// how many replicas when several, and its limit when not the documented
// one.
func limiterName(c analyze.Candidate, documented int) string {
	n := c.Family
	if c.Replicas > 1 {
		n = fmt.Sprintf("%d replicas of %s", c.Replicas, c.Family)
	}
	if c.Limit > 0 && c.Limit != documented {
		n += fmt.Sprintf(" of %d", c.Limit)
	}
	return n
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
	model, alts := s.Model, s.ModelAlternatives
	if b := d.Fit.Best; b.Family == s.Model {
		model = limiterName(b, s.ExpectedLimit)
		if !s.ModelDecided && len(alts) == 0 {
			// Left open within the family: replicas against one limiter
			// of their sum, or a limit against another.
			for _, a := range d.Fit.Alternatives {
				if n := limiterName(a, s.ExpectedLimit); a.Family == s.Model && n != model && !slices.Contains(alts, n) {
					alts = append(alts, n)
				}
			}
		}
	}
	if len(alts) > 0 {
		model += " (or " + strings.Join(alts, ", ") + ": the run's timing cannot tell them apart)"
	}
	line := fmt.Sprintf("expected limit %d, observed %s, model %s, refused requests count: %s", s.ExpectedLimit, observed, model, rc)
	if s.MCPRevision != "" {
		line += ", MCP revision " + s.MCPRevision
	}
	return line
}

// countsLine counts a surface's requests by answer and by what the model
// required of them ("no request": a surface the run sent nothing of its
// own, such as a stacked limit).
func countsLine(d analyze.SurfaceDetail) string {
	if d.Requests == 0 && len(d.Sources) == 0 {
		return "no request"
	}
	return fmt.Sprintf("%s from %s: %d admitted, %d refused, %s, %s; required 200: %d, required 429: %d, indeterminate: %d",
		human.Count(d.Requests, "request", ""), joinFew(d.Sources, 8), d.Admitted, d.Refused, human.Count(d.Faults, "fault", ""), human.Count(d.OtherAnswers, "other answer", ""), d.Required200, d.Required429, d.Indet)
}

// joinFew joins the first n of ss and counts the rest, so that a line
// stays a line whatever the input holds.
func joinFew(ss []string, n int) string {
	named := make([]string, len(ss))
	for i, s := range ss {
		named[i] = s
		if s == archive.DefaultSource {
			named[i] = "this machine's own address" // the system chose it
		}
	}
	if len(named) <= n {
		return strings.Join(named, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(named[:n], ", "), len(named)-n)
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
