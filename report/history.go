package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/connectbyjbrh/ratecheck/history"
	"github.com/connectbyjbrh/ratecheck/internal/human"
)

// historyKey is the series of one key of a history, by their index in
// Output.Series.
type historyKey struct {
	history.Key
	series []int
}

// historyKeys groups out's series by key, in order.
func historyKeys(out history.Output) []historyKey {
	var keys []historyKey
	for i, s := range out.Series {
		k := s.Key()
		if len(keys) == 0 || keys[len(keys)-1].Key != k {
			keys = append(keys, historyKey{Key: k})
		}
		keys[len(keys)-1].series = append(keys[len(keys)-1].series, i)
	}
	return keys
}

// keyTitle names a key for a person.
func keyTitle(k history.Key) string {
	scheme := "no label"
	if k.Scheme != "" {
		scheme = "labels " + k.Scheme + "…"
	}
	where := k.Target
	if where == "" {
		where = cmpOr(k.Contract, "built-in") + " contract"
	}
	title := fmt.Sprintf("%s · %s · %s · %s", k.Kind, where, k.Surface, scheme)
	if k.Objective != "" {
		title += " · " + k.Objective
	}
	return safe(title)
}

// HistoryTable writes a history for a terminal: the paths that could not
// be read, then per key a table of its runs in time order (verdict,
// model, each figure, a ▲ or ▼ where a change point begins, and the
// machine's flags), the changes of the key, and the judgement of
// --fail-on regression.
func HistoryTable(w io.Writer, out history.Output) error {
	for _, u := range out.Unread {
		printf(w, "unread: %s: %s\n", safe(u.Path), safe(u.Why))
	}
	runs := map[string]history.RunOut{}
	for _, r := range out.Runs {
		runs[r.Run] = r
	}
	for _, k := range historyKeys(out) {
		if err := keyTable(w, out, k, runs); err != nil {
			return err
		}
	}
	if len(out.Series) == 0 {
		printf(w, "no figure to trend in %s read\n", human.Count(len(out.Runs), "run", ""))
		return nil
	}
	var worse []string
	for _, s := range out.Series {
		if s.Regression {
			worse = append(worse, safe(strings.Join(slices.DeleteFunc([]string{s.Kind, s.Target, s.Surface, string(s.Figure)}, func(f string) bool { return f == "" }), " ")))
		}
	}
	switch {
	case len(worse) > 0:
		printf(w, "\nregression: the newest runs lie after a change for the worse in %s\n", strings.Join(worse, ", "))
	case out.TooShort == len(out.Series):
		printf(w, "\ncannot tell: every series is too short to find a change in (it needs %s; see each table)\n", human.Count(out.Series[0].MinRuns, "run", ""))
	case out.TooShort > 0:
		printf(w, "\nno regression in the series long enough to tell (significance %g, %s); %s too short to find a change in\n",
			out.Significance, human.Count(out.Permutations, "permutation", ""), human.Count(out.TooShort, "series", "series"))
	default:
		printf(w, "\nno regression: no series' newest runs lie after a change for the worse (significance %g, %s)\n", out.Significance, human.Count(out.Permutations, "permutation", ""))
	}
	printf(w, "least change reported: %s\n", floorsText(out))
	return nil
}

// floorsText says the least change reported of each figure of out's
// series, figures of one floor together: "5% and 0.1 ms (p50_ms,
// p99_ms); 1 (observed_limit)".
func floorsText(out history.Output) string {
	var texts []string
	figs := map[string][]string{}
	for _, s := range out.Series {
		var parts []string
		if s.Floor.Relative > 0 {
			parts = append(parts, strconv.FormatFloat(100*s.Floor.Relative, 'g', 4, 64)+"%")
		}
		if s.Floor.Absolute > 0 {
			parts = append(parts, figureText(s.Figure, s.Floor.Absolute))
		}
		t := strings.Join(parts, " and ")
		if t == "" {
			t = "any size"
		}
		if _, ok := figs[t]; !ok {
			texts = append(texts, t)
		}
		if name := string(s.Figure); !slices.Contains(figs[t], name) {
			figs[t] = append(figs[t], name)
		}
	}
	for i, t := range texts {
		texts[i] = t + " (" + strings.Join(figs[t], ", ") + ")"
	}
	return strings.Join(texts, "; ")
}

// keyTable writes one key's table and its changes.
func keyTable(w io.Writer, out history.Output, k historyKey, runs map[string]history.RunOut) error {
	var order []string // the key's runs, in time order
	cells := map[string]map[int]string{}
	for col, si := range k.series {
		s := out.Series[si]
		for _, p := range s.Points {
			if cells[p.Run] == nil {
				order = append(order, p.Run)
				cells[p.Run] = map[int]string{}
			}
			cells[p.Run][col] = figureText(s.Figure, p.Value) + boundsText(s.Figure, p.Bounds)
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return runs[a].Start.Compare(runs[b].Start) })
	var lines []string
	for _, c := range out.Changes {
		if col := slices.Index(k.series, c.Series); col >= 0 {
			mark := map[history.Direction]string{history.Up: " ▲", history.Down: " ▼"}[c.Direction]
			cells[c.Run][col] += cmpOr(mark, " ◆")
			lines = append(lines, changeLine(c))
		}
	}
	for _, e := range out.Events {
		if e.Key() == k.Key {
			lines = append(lines, safe(fmt.Sprintf("%s changed at run %d (%s): %s → %s", e.What, e.Index+1, cmpOr(e.Label, e.Run), orNone(e.From), orNone(e.To))))
		}
	}
	printf(w, "\n%s: %s\n", keyTitle(k.Key), human.Count(len(order), "run", ""))
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off)) // P99, not P 99
	// Grouped by contract, a key's runs may each have a target of their
	// own (a URL per release): a column names it.
	byContract := k.Target == ""
	header := []string{"#", "LABEL", "VERDICT", "MODEL"}
	if byContract {
		header = []string{"#", "LABEL", "TARGET", "VERDICT", "MODEL"}
	}
	for _, si := range k.series {
		header = append(header, columns[out.Series[si].Figure])
	}
	t.Header(append(header, "MACHINE"))
	for i, id := range order {
		r := runs[id]
		verdict, model := "", ""
		for _, s := range r.Surfaces {
			if s.Surface == k.Surface {
				verdict, model = s.Verdict, s.Model
			}
		}
		row := []string{strconv.Itoa(i + 1), cmpOr(r.Label, "-"), verdict, model}
		if byContract {
			row = []string{strconv.Itoa(i + 1), cmpOr(r.Label, "-"), r.Target, verdict, model}
		}
		for col := range k.series {
			row = append(row, cells[id][col])
		}
		row = append(row, flags(r))
		for j := range row {
			row[j] = safe(row[j])
		}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	short := 0
	for _, si := range k.series {
		if out.Series[si].TooShort {
			short = out.Series[si].MinRuns
		}
	}
	switch {
	case len(lines) == 0 && short > 0:
		printf(w, "  too few runs to find a change (%d, needs %d)\n", len(order), short)
	case len(lines) == 0:
		printf(w, "  no change point in %s\n", human.Count(len(k.series), "series", "series"))
	}
	for _, l := range lines {
		printf(w, "  %s\n", l)
	}
	return nil
}

// columns are the figures' column titles.
var columns = map[history.Figure]string{history.ObservedLimit: "LIMIT", history.P50: "P50", history.P95: "P95",
	history.P99: "P99", history.ErrorRate: "ERRORS", history.Knee: "KNEE"}

// changeLine describes a change point for a person.
func changeLine(c history.ChangeOut) string {
	verdict := ""
	if c.Worse {
		verdict = ", for the worse"
	}
	return safe(fmt.Sprintf("%s %s at run %d (%s): median %s → %s, shift %s [%s, %s], p = %.3f%s",
		c.Figure, c.Direction, c.Index+1, cmpOr(c.Label, c.Run), figureText(c.Figure, c.Before), figureText(c.Figure, c.After),
		signed(c.Figure, c.Size), signed(c.Figure, c.SizeLow), signed(c.Figure, c.SizeHigh), c.P, verdict))
}

// figureText is a figure's value with its unit.
func figureText(f history.Figure, v float64) string {
	switch f {
	case history.ObservedLimit:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case history.ErrorRate:
		return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
	case history.Knee:
		return strconv.FormatFloat(v, 'f', 0, 64) + "/s"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
}

// boundsText is the interval a value was measured within, " [low, high]"
// in the figure's units, "" when it has none; a bound not found is "-"
// (capacity: no rate tried failed).
func boundsText(f history.Figure, b history.Bounds) string {
	if b.Low == nil && b.High == nil {
		return ""
	}
	bound := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return strings.TrimSuffix(figureText(f, *v), "/s")
	}
	return " [" + bound(b.Low) + ", " + bound(b.High) + "]"
}

// signed is figureText with a sign.
func signed(f history.Figure, v float64) string {
	if v >= 0 {
		return "+" + figureText(f, v)
	}
	return figureText(f, v)
}

// flags says what was wrong with a run's machine.
func flags(r history.RunOut) string {
	var out []string
	if r.Starved {
		out = append(out, "starved")
	}
	if r.FellBehind {
		out = append(out, "behind")
	}
	return strings.Join(out, ", ")
}

func orNone(s string) string { return cmpOr(s, "none") }

// cmpOr is s, or or when s is empty.
func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}
