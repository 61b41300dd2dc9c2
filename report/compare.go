package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/olekukonko/tablewriter"
)

// CompareTable writes the comparison side by side, surface by surface, then
// the regressions and the verdict.
func CompareTable(w io.Writer, c analyze.Comparison) error {
	label := func(r analyze.RunSummary) string {
		if r.Label == "" {
			return ""
		}
		return " (" + r.Label + ")"
	}
	printf(w, "baseline %s%s\nrun      %s%s\n", safe(c.Baseline.Run), safe(label(c.Baseline)), safe(c.Run.Run), safe(label(c.Run)))
	for _, u := range c.Incomparable {
		printf(w, "warning: not comparable: %s\n", u)
	}
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
		r, _ := c.Run.Surface(b.Surface)
		rows := [][]string{
			{"requests", strconv.Itoa(b.Requests), strconv.Itoa(r.Requests), change(float64(b.Requests), float64(r.Requests))},
			{"rate", num(b.Rate, "/s"), num(r.Rate, "/s"), change(b.Rate, r.Rate)},
			{"throughput", num(b.Throughput, "/s"), num(r.Throughput, "/s"), change(b.Throughput, r.Throughput)},
			{"p50", num(float64(b.P50MS), " ms"), num(float64(r.P50MS), " ms"), change(float64(b.P50MS), float64(r.P50MS))},
			{"p95", num(float64(b.P95MS), " ms"), num(float64(r.P95MS), " ms"), change(float64(b.P95MS), float64(r.P95MS))},
			{"p99", num(float64(b.P99MS), " ms"), num(float64(r.P99MS), " ms"), change(float64(b.P99MS), float64(r.P99MS))},
			{fmt.Sprintf("p99 ratio (%.0f%% interval)", 100*c.Confidence), "", "", ratioText(c, b.Surface)},
			{"max", num(float64(b.MaxMS), " ms"), num(float64(r.MaxMS), " ms"), change(float64(b.MaxMS), float64(r.MaxMS))},
			{"observed limit", analyze.LimitText(b.ObservedLimit), analyze.LimitText(r.ObservedLimit), ""},
			{"model", b.Model, r.Model, ""},
			{"verdict", b.Verdict, r.Verdict, ""},
		}
		for _, row := range rows {
			row = append([]string{b.Surface}, row...)
			for i := range row {
				row[i] = safe(row[i])
			}
			if err := t.Append(row); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, note := range c.Notes {
		printf(w, "note: %s\n", note)
	}
	for _, reg := range c.Regressions {
		printf(w, "regression: %s\n", reg)
	}
	switch {
	case len(c.Incomparable) > 0:
		printf(w, "no verdict: the runs were made in different ways (%s), so their differences are not regressions; compare runs made the same way\n", strings.Join(c.Incomparable, "; "))
	case len(c.Unjudged) > 0 && len(c.Regressions) == 0:
		printf(w, "inconclusive: %s; the limit, model and verdict there are not compared\n", safe(strings.Join(c.Unjudged, "; ")))
	case len(c.Regressions) == 0:
		printf(w, "no regression (p99 may rise by up to %.0f%%: a rise counts when the %.0f%% interval of its ratio lies above %.2f and the rise it is sure of is at least %v)\n",
			100*c.MaxP99Increase, 100*c.Confidence, 1+c.MaxP99Increase, c.P99FloorMS.Duration())
	}
	return nil
}

// ratioText is a surface's p99 ratio with its interval.
func ratioText(c analyze.Comparison, surface string) string {
	for _, ch := range c.P99 {
		if ch.Surface != surface {
			continue
		}
		if ch.RatioLow == nil {
			return fmt.Sprintf("%.2f", ch.Ratio)
		}
		return fmt.Sprintf("%.2f (%.2f–%.2f)", ch.Ratio, *ch.RatioLow, *ch.RatioHigh)
	}
	return ""
}
