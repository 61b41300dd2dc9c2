package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/olekukonko/tablewriter"
)

// dur formats milliseconds as a rounded duration.
func dur(ms clock.Millis) string {
	return ms.Duration().Round(100 * time.Microsecond).String()
}

// FleetTables writes a fleet's waves side by side (one column per attempt
// wave), its checks with evidence, and the verdict.
func FleetTables(w io.Writer, rep *jitter.Report, strategy, run string) error {
	printf(w, "%s  fleet of %d clients, strategy %s: %d requests, %.2f attempts each (at most %d); ε %gms\n",
		strings.ToUpper(rep.Verdict), rep.Clients, strategy, rep.Requests, rep.AttemptsMean, rep.AttemptsMax, rep.EpsilonMS)
	if rep.Null != "" {
		printf(w, "judged against independent %s jitter: %d simulated fleets per wave, false-alarm rate %g\n", rep.Null, rep.Sims, rep.Alpha)
	}
	if rep.EpsilonBasis != "" {
		printf(w, "ε %gms %s\n", rep.EpsilonMS, rep.EpsilonBasis)
	}
	for _, n := range rep.Notes {
		printf(w, "note: %s\n", n)
	}
	if len(rep.Waves) > 0 {
		if err := waveTable(w, rep.Waves); err != nil {
			return err
		}
	}
	t := tablewriter.NewWriter(w)
	t.Header("check", "verdict", "evidence")
	for _, c := range rep.Checks {
		if err := t.Append(safe(c.Name), safe(c.Verdict), wrap(safe(c.Detail), 90)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	printf(w, "\nverdict: %s (collision ratio %.2f, re-collision %.0f%%, KS p %.2g; run %s)\n",
		strings.ToUpper(rep.Verdict), rep.CollisionRatio, 100*rep.RecollisionRate, rep.KSP, run)
	return nil
}

// waveTable writes the figures of each wave of a fleet, a column each.
func waveTable(w io.Writer, waves []jitter.Wave) error {
	t := tablewriter.NewWriter(w)
	header := []any{"figure"}
	for _, wv := range waves {
		header = append(header, fmt.Sprintf("attempt %d", wv.Attempt))
	}
	t.Header(header...)
	row := func(name string, f func(jitter.Wave) string) error {
		cells := []any{name}
		for _, wv := range waves {
			cells = append(cells, safe(f(wv)))
		}
		return t.Append(cells...)
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }
	last := waves[len(waves)-1].Attempt // no wave after it to re-collide in
	rows := []struct {
		name string
		f    func(jitter.Wave) string
	}{
		{"clients", func(wv jitter.Wave) string { return strconv.Itoa(wv.Clients) }},
		{"range", func(wv jitter.Wave) string {
			if wv.RangeLowMS > 0 {
				return dur(wv.RangeLowMS) + "–" + dur(wv.RangeMS)
			}
			return dur(wv.RangeMS)
		}},
		{"collisions (bound)", func(wv jitter.Wave) string { return fmt.Sprintf("%d (%d)", wv.Collisions, wv.Bound) }},
		{"expected", func(wv jitter.Wave) string { return g(wv.Expected) }},
		{"collision ratio", func(wv jitter.Wave) string { return g(wv.CollisionRatio) }},
		{"re-collided next (bound)", func(wv jitter.Wave) string {
			if wv.Attempt == last {
				return "-"
			}
			return fmt.Sprintf("%d (%d)", wv.Recollided, wv.RecollBound)
		}},
		{"re-collision rate (expected)", func(wv jitter.Wave) string {
			if wv.Attempt == last {
				return "-"
			}
			return fmt.Sprintf("%.0f%% (%.0f%%)", 100*wv.RecollisionRate, 100*wv.RecollisionMax)
		}},
		{"KS p", func(wv jitter.Wave) string { return g(wv.KSP) }},
		{"peak ε-bin (bound)", func(wv jitter.Wave) string { return fmt.Sprintf("%d (%d)", wv.PeakBin, wv.PeakBound) }},
		{"late p99 (machine)", func(wv jitter.Wave) string { return dur(wv.LateP99MS) }},
		{"verdict", func(wv jitter.Wave) string { return wv.Verdict }},
	}
	for _, r := range rows {
		if err := row(r.name, r.f); err != nil {
			return err
		}
	}
	return t.Render()
}
