package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// RunSummary is what a comparison reads of one run.
type RunSummary struct {
	Run      string           `json:"run"`
	Verdict  string           `json:"verdict"`
	Surfaces []SurfaceSummary `json:"surfaces"`
	// Kind is the command that made the run (verify, attack, fleet, ...),
	// as its run.json says; empty for results without one.
	Kind string `json:"kind"`
	// WindowMS is the window the run was made with (its run.json's), else
	// the one it was judged with.
	WindowMS clock.Millis `json:"window_ms"`
	// Target is where the run was sent; EmbeddedTarget says it was the
	// embedded reference target, which listens on a port of its own in
	// every run (so two embedded runs have one target).
	Target         string `json:"target"`
	EmbeddedTarget bool   `json:"embedded_target"`
	// Label is the release the run was made of (its run.json's --label),
	// "" for none.
	Label string `json:"label"`
	// Contract names the limits contract the run was made against, as
	// its run.json records it (archive.ContractName: "built-in" for the
	// documented API's); empty for results without one.
	Contract string `json:"contract"`
}

// SurfaceSummary is one surface of a run: load, latency, limit, verdict.
type SurfaceSummary struct {
	Surface  string `json:"surface"`
	Requests int    `json:"requests"`
	// Rate is requests sent per second, Throughput requests admitted per
	// second, over the span of the surface's sends (as vegeta report).
	Rate          float64      `json:"rate"`
	Throughput    float64      `json:"throughput"`
	P50MS         clock.Millis `json:"p50_ms"`
	P95MS         clock.Millis `json:"p95_ms"`
	P99MS         clock.Millis `json:"p99_ms"`
	MaxMS         clock.Millis `json:"max_ms"`
	ObservedLimit *int         `json:"observed_limit"`
	Model         string       `json:"model"`
	// ModelDecided says the run named Model by a margin its timing
	// cannot produce (see SurfaceVerdict.ModelDecided).
	ModelDecided bool   `json:"model_decided"`
	Verdict      string `json:"verdict"`
	// Premise, when set, is why the run could not show the surface's
	// limiter (a budget spent before it, an API that is not there): its
	// limit, model and verdict say nothing of the limiter.
	Premise string `json:"premise,omitempty"`
	// Latencies are every latency of the surface, in send order, and
	// Sent when each was sent, from the surface's first send: what the
	// test of a p99 change takes apart (not in JSON).
	Latencies, Sent []time.Duration `json:"-"`
}

// Summarize reads the summary of a run from its records and verdict.
func Summarize(in *decode.Input, rep *Report) RunSummary {
	s := RunSummary{Run: rep.Verdict.Run, Verdict: rep.Verdict.Verdict, WindowMS: rep.Verdict.WindowMS, Target: rep.Verdict.Target}
	if runs := in.Meta.Runs; len(runs) == 1 {
		s.Kind, s.Target, s.EmbeddedTarget, s.Label = runs[0].Command, runs[0].Target, runs[0].Embedded, runs[0].Label
		s.Contract = archive.ContractName(runs[0].Contract)
		if runs[0].WindowMS > 0 {
			s.WindowMS = runs[0].WindowMS
		}
	}
	// The span of each surface's sends, and its latencies by send time, in
	// one pass.
	first, last := map[string]int64{}, map[string]int64{}
	lat, sent := map[string][]time.Duration{}, map[string][]time.Duration{}
	for j := range in.Records {
		r := &in.Records[j]
		sf := in.Tables().Labels(r).Surface
		if f, ok := first[sf]; !ok || r.Start < f {
			first[sf] = r.Start
		}
		if l, ok := last[sf]; !ok || r.Start > l {
			last[sf] = r.Start
		}
		lat[sf] = append(lat[sf], r.Latency())
		// records come in send order (decode.Read sorts them): first is
		// the earliest so far, and spans past an int64 (a hostile file)
		// saturate
		sent[sf] = append(sent[sf], time.Duration(min(since(r.Start, first[sf]), math.MaxInt64)))
	}
	for i, sv := range rep.Verdict.Surfaces {
		sd := rep.Surfaces[i]
		ss := SurfaceSummary{Surface: sv.Surface, Requests: sd.Requests, ObservedLimit: sv.ObservedLimit, Model: sv.Model, ModelDecided: sv.ModelDecided, Verdict: sv.Verdict,
			Premise: sd.Premise, Latencies: lat[sv.Surface], Sent: sent[sv.Surface]}
		if span := secs(last[sv.Surface], first[sv.Surface]); span > 0 {
			ss.Rate, ss.Throughput = float64(sd.Requests)/span, float64(sd.Admitted)/span
		}
		if m := sd.Latency; m != nil && m.Count > 0 {
			ss.P50MS, ss.P95MS, ss.P99MS, ss.MaxMS = clock.Ms(m.Time.P50), clock.Ms(m.Time.P95), clock.Ms(m.Time.P99), clock.Ms(m.Time.Max)
		}
		s.Surfaces = append(s.Surfaces, ss)
	}
	return s
}

// p99Confidence is the confidence of the interval of a p99 ratio.
const p99Confidence = 0.98

// CompareOptions say when a surface's p99 rose enough to be a regression.
type CompareOptions struct {
	// MaxP99Increase is the largest rise of p99 allowed, as a fraction
	// (0.10: 10 %).
	MaxP99Increase float64
	// P99Floor is the least rise of p99 that can count: a rise is a
	// regression only when the rise its interval is sure of, (lower end
	// of the ratio − 1) × the baseline's p99, is at least this.
	P99Floor time.Duration
}

// P99Change is a surface's p99, baseline against run, with the interval of
// their ratio.
type P99Change struct {
	Surface    string       `json:"surface"`
	BaselineMS clock.Millis `json:"baseline_ms"`
	RunMS      clock.Millis `json:"run_ms"`
	Ratio      float64      `json:"ratio"`
	// RatioLow and RatioHigh bound the ratio run/baseline with confidence
	// p99Confidence: a paired permutation test of both runs' latencies
	// (32 slices of time, paired run against baseline, swapped in 2000
	// seeded splits) inverted over the ratio. Null when a run has no
	// latencies.
	RatioLow  *float64 `json:"ratio_low"`
	RatioHigh *float64 `json:"ratio_high"`
	// Regressed says the rise is a regression: the interval lies above
	// 1 + MaxP99Increase and the rise it is sure of reaches the floor.
	Regressed bool `json:"regressed"`
}

// Comparison is a run set against a baseline.
type Comparison struct {
	Baseline RunSummary `json:"baseline"`
	Run      RunSummary `json:"run"`
	// MaxP99Increase is the largest p99 increase allowed, as a fraction;
	// P99FloorMS the least rise that counts; Confidence that of the p99
	// ratio's interval.
	MaxP99Increase float64      `json:"max_p99_increase"`
	P99FloorMS     clock.Millis `json:"p99_floor_ms"`
	Confidence     float64      `json:"confidence"`
	// P99 is each surface's p99 change with the interval of its ratio.
	P99 []P99Change `json:"p99"`
	// Regressions says what got worse; any makes the verdict fail. Notes
	// say what changed within the noise.
	Regressions []string `json:"regressions"`
	Notes       []string `json:"notes"`
	// Incomparable says how the two runs differ in kind, window, surfaces
	// or target: then their differences are no regressions (they are
	// notes) and the verdict is Incomparable.
	Incomparable []string `json:"incomparable"`
	// Unjudged names the surfaces one run could not show the limiter of,
	// and why (SurfaceSummary.Premise): their limit, model and verdict
	// are not compared (a change is a note); with no regression
	// elsewhere the verdict is Inconclusive.
	Unjudged []string `json:"unjudged"`
	Verdict  string   `json:"verdict"`
}

// Incomparable is the verdict of a comparison of two runs made in
// different ways (see Comparison.Incomparable).
const Incomparable = "incomparable"

// Compare sets run against base: a surface's verdict going from pass to
// fail, its observed limit changing, its limiter model changing where both
// runs decided it (an undecided model is no claim to change), or a surface
// missing, are regressions, exactly; its p99 rising is one only when the
// rise is beyond what the two runs' own spread explains: the interval of
// the p99 ratio lies above 1 + MaxP99Increase, and the rise it is sure of
// is at least P99Floor. Two runs of one build against one target differ
// in p99 by tens of percent, more on a busy host, since the p99 of a few
// hundred requests rests on a handful of them.
func Compare(base, run RunSummary, o CompareOptions) Comparison {
	c := Comparison{Baseline: base, Run: run, MaxP99Increase: o.MaxP99Increase, P99FloorMS: clock.Ms(o.P99Floor), Confidence: p99Confidence,
		P99: []P99Change{}, Regressions: []string{}, Notes: []string{}, Incomparable: []string{}, Unjudged: []string{}, Verdict: Pass}
	unjudged := false
	for _, b := range base.Surfaces {
		r, ok := run.Surface(b.Surface)
		if !ok {
			c.Regressions = append(c.Regressions, fmt.Sprintf("%s: not in the run", b.Surface))
			continue
		}
		if b.P99MS > 0 {
			c.p99(b, r, o)
		}
		// A change the limiter did not show is no regression: say it.
		worse := func(what string) { c.Regressions = append(c.Regressions, what) }
		if who := unshown(b, r); who != "" {
			unjudged = true
			c.Unjudged = append(c.Unjudged, fmt.Sprintf("%s: %s (%s)", b.Surface, who, cmp.Or(b.Premise, r.Premise)))
			worse = func(what string) { c.Notes = append(c.Notes, what+", not a regression: "+who) }
		}
		if b.Verdict == Pass && r.Verdict != Pass {
			worse(fmt.Sprintf("%s: verdict %s → %s", b.Surface, b.Verdict, r.Verdict))
		}
		if LimitText(b.ObservedLimit) != LimitText(r.ObservedLimit) {
			worse(fmt.Sprintf("%s: observed limit %s → %s", b.Surface, LimitText(b.ObservedLimit), LimitText(r.ObservedLimit)))
		}
		switch {
		case b.Model == r.Model:
		case b.ModelDecided && r.ModelDecided:
			worse(fmt.Sprintf("%s: model %s → %s", b.Surface, b.Model, r.Model))
		default:
			c.Notes = append(c.Notes, fmt.Sprintf("%s: model %s → %s, not a regression: %s", b.Surface, b.Model, r.Model, undecided(b, r)))
		}
	}
	if base.Verdict == Pass && run.Verdict != Pass && !unjudged {
		c.Regressions = append([]string{fmt.Sprintf("verdict %s → %s", base.Verdict, run.Verdict)}, c.Regressions...)
	}
	switch {
	case len(c.Regressions) > 0:
		c.Verdict = Fail
	case unjudged:
		c.Verdict = Inconclusive
	}
	if c.Incomparable = unlike(base, run); len(c.Incomparable) > 0 {
		for _, r := range c.Regressions {
			c.Notes = append(c.Notes, "not a regression, the runs are not comparable: "+r)
		}
		for i := range c.P99 {
			c.P99[i].Regressed = false
		}
		c.Regressions, c.Verdict = []string{}, Incomparable
	}
	return c
}

// unlike says how two runs differ in the way they were made: the command
// and the limits contract (when both runs say), the window, the surfaces, the target (when both
// say; two runs of the embedded target have one).
func unlike(base, run RunSummary) []string {
	out := []string{}
	if base.Kind != "" && run.Kind != "" && base.Kind != run.Kind {
		out = append(out, fmt.Sprintf("kind %s → %s", base.Kind, run.Kind))
	}
	if base.Contract != "" && run.Contract != "" && base.Contract != run.Contract {
		out = append(out, fmt.Sprintf("contract %s → %s", base.Contract, run.Contract))
	}
	if base.WindowMS != run.WindowMS {
		out = append(out, fmt.Sprintf("window %v → %v", base.WindowMS.Duration(), run.WindowMS.Duration()))
	}
	names := func(s RunSummary) string {
		var ns []string
		for _, x := range s.Surfaces {
			ns = append(ns, x.Surface)
		}
		if len(ns) == 0 {
			return "none"
		}
		slices.Sort(ns)
		return strings.Join(ns, ", ")
	}
	if b, r := names(base), names(run); b != r {
		out = append(out, fmt.Sprintf("surfaces %s → %s", b, r))
	}
	target := func(s RunSummary) string {
		if s.EmbeddedTarget {
			return "the embedded target"
		}
		return s.Target
	}
	if b, r := target(base), target(run); b != "" && r != "" && b != r {
		out = append(out, fmt.Sprintf("target %s → %s", b, r))
	}
	return out
}

// undecided says which of the two runs left its model undecided.
func undecided(b, r SurfaceSummary) string {
	switch {
	case !b.ModelDecided && !r.ModelDecided:
		return "both runs left it undecided"
	case !b.ModelDecided:
		return "the baseline left it undecided"
	}
	return "the run left it undecided"
}

// unshown says which of the two runs could not show the surface's
// limiter ("" when both did).
func unshown(b, r SurfaceSummary) string {
	switch {
	case b.Premise != "" && r.Premise != "":
		return "neither run could show the limiter"
	case b.Premise != "":
		return "the baseline could not show the limiter"
	case r.Premise != "":
		return "the run could not show the limiter"
	}
	return ""
}

// p99 judges a surface's p99 change.
func (c *Comparison) p99(b, r SurfaceSummary, o CompareOptions) {
	ch := judgeP99(b, r, o, true)
	rise := fmt.Sprintf("%s: p99 %.2f ms → %.2f ms (%+.0f%%", b.Surface, b.P99MS, r.P99MS, 100*(ch.Ratio-1))
	if ch.RatioLow != nil {
		rise += fmt.Sprintf("; %.0f%% interval of the ratio %.2f–%.2f", 100*p99Confidence, *ch.RatioLow, *ch.RatioHigh)
	}
	switch {
	case ch.Regressed:
		c.Regressions = append(c.Regressions, fmt.Sprintf("%s, above %.2f)", rise, 1+o.MaxP99Increase))
	case ch.Ratio > 1+o.MaxP99Increase && ch.RatioLow != nil && *ch.RatioLow > 1+o.MaxP99Increase:
		c.Notes = append(c.Notes, fmt.Sprintf("%s): a rise of less than %v does not count", rise, o.P99Floor))
	case ch.Ratio > 1+o.MaxP99Increase:
		c.Notes = append(c.Notes, fmt.Sprintf("%s): more than +%.0f%%, but within the spread of the two runs", rise, 100*o.MaxP99Increase))
	}
	c.P99 = append(c.P99, ch)
}

// judgeP99 sets a surface's p99 in the run against the baseline's. The
// rise is a regression when the ratio exceeds θ = max(1 + MaxP99Increase,
// 1 + P99Floor/baseline p99) and the paired permutation test rejects "the
// ratio is at most θ" at (1 − P99Confidence)/2, that is when the
// interval's lower end lies above θ. Without latencies to test (a summary
// made by hand) the ratio alone decides. withInterval computes the
// interval, which takes a few dozen rounds of the test.
func judgeP99(b, r SurfaceSummary, o CompareOptions, withInterval bool) P99Change {
	ch := P99Change{Surface: b.Surface, BaselineMS: b.P99MS, RunMS: r.P99MS, Ratio: float64(r.P99MS / b.P99MS)}
	theta := max(1+o.MaxP99Increase, 1+float64(clock.Ms(o.P99Floor)/b.P99MS))
	t, ok := newP99Test(b.Latencies, b.Sent, r.Latencies, r.Sent)
	if !ok {
		ch.Regressed = ch.Ratio > 1+o.MaxP99Increase && r.P99MS-b.P99MS >= clock.Ms(o.P99Floor)
		return ch
	}
	ch.Regressed = ch.Ratio > theta && t.pUpper(theta) <= (1-p99Confidence)/2
	if withInterval {
		lo, hi := t.interval(p99Confidence)
		ch.RatioLow, ch.RatioHigh = &lo, &hi
	}
	return ch
}

// Surface returns the summary of the surface named name, and false when
// the run has none.
func (s RunSummary) Surface(name string) (SurfaceSummary, bool) {
	for _, x := range s.Surfaces {
		if x.Surface == name {
			return x, true
		}
	}
	return SurfaceSummary{}, false
}

// LimitText is an observed limit in words: its number, or "none".
func LimitText(l *int) string {
	if l == nil {
		return "none"
	}
	return strconv.Itoa(*l)
}

// since is t − from in nanoseconds, as unsigned so that spans past an
// int64 (a hostile file) do not wrap negative.
func since(t, from int64) uint64 { return uint64(t) - uint64(from) }

// secs is t in seconds since t0 (t >= t0).
func secs(t, t0 int64) float64 { return float64(since(t, t0)) / 1e9 }

// KneeSummary is what a comparison reads of a capacity run: its verdict
// and knee with the bracket around it (a nil high: nothing above failed).
type KneeSummary struct {
	Run     string   `json:"run"`
	Verdict string   `json:"verdict"`
	KneeRPS *float64 `json:"knee_rps"`
	LowRPS  *float64 `json:"knee_low_rps"`
	HighRPS *float64 `json:"knee_high_rps"`
	// Contract names the limits contract the search was made against
	// (archive.ContractName), Load what it sent (a surface, or the
	// contract's route) and Objective what it held each step to.
	Contract  string `json:"contract"`
	Load      string `json:"load"`
	Objective string `json:"objective"`
}

// KneeChange is the comparison of two capacity runs: how the knee moved,
// and whether the two brackets [low, high] separate (neither holds a rate
// of the other's), which is when the move is more than the searches'
// precision. A lower knee whose brackets separate is a regression (fail).
type KneeChange struct {
	Base KneeSummary `json:"base"`
	Run  KneeSummary `json:"run"`
	// ChangeRPS is run's knee minus base's; Relative that over base's
	// (nil unless both found a knee).
	ChangeRPS *float64 `json:"change_rps"`
	Relative  *float64 `json:"relative"`
	// Separate reports whether the brackets separate.
	Separate bool `json:"separate"`
	// Incomparable says how the two searches differ in contract, load or
	// objective: then the knees measure different things and the verdict
	// is Incomparable.
	Incomparable []string `json:"incomparable"`
	// Verdict is Pass, Fail (lower and separate), Inconclusive (a run
	// without a knee) or Incomparable.
	Verdict string `json:"verdict"`
}

// CompareKnees compares the knee of run with that of base.
func CompareKnees(base, run KneeSummary) KneeChange {
	c := KneeChange{Base: base, Run: run, Incomparable: []string{}, Verdict: Inconclusive}
	for _, d := range []struct{ what, b, r string }{{"contract", base.Contract, run.Contract}, {"load", base.Load, run.Load}, {"objective", base.Objective, run.Objective}} {
		if d.b != d.r {
			c.Incomparable = append(c.Incomparable, fmt.Sprintf("%s %s → %s", d.what, d.b, d.r))
		}
	}
	if len(c.Incomparable) > 0 {
		c.Verdict = Incomparable
		return c
	}
	if base.KneeRPS == nil || run.KneeRPS == nil {
		return c
	}
	d := *run.KneeRPS - *base.KneeRPS
	rel := d / *base.KneeRPS
	c.ChangeRPS, c.Relative = &d, &rel
	top := func(s KneeSummary) float64 {
		if s.HighRPS == nil {
			return math.Inf(1)
		}
		return *s.HighRPS
	}
	low := func(s KneeSummary) float64 {
		if s.LowRPS == nil {
			return *s.KneeRPS
		}
		return *s.LowRPS
	}
	c.Separate = top(base) < low(run) || top(run) < low(base)
	c.Verdict = Pass
	if c.Separate && d < 0 {
		c.Verdict = Fail
	}
	return c
}
