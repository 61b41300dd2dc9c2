package history

import (
	"cmp"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Figure names one figure of a run on one surface, as the JSON of history
// names it.
type Figure string

// The figures a series can follow.
const (
	ObservedLimit Figure = "observed_limit" // requests admitted in a window
	P50           Figure = "p50_ms"         // latency quantiles, in milliseconds
	P95           Figure = "p95_ms"
	P99           Figure = "p99_ms"
	ErrorRate     Figure = "error_rate" // share of requests that failed
	Knee          Figure = "knee_rps"   // capacity's knee, requests per second
)

// figures lists the figures in the order series of one key are built.
var figures = []Figure{ObservedLimit, P50, P95, P99, ErrorRate, Knee}

// Worse returns the direction in which a change of f is for the worse:
// Up for the latencies and the error rate, Down for the knee, None for
// the observed limit (a departure either way from the contract is the
// verdict's to judge, and it is reported as a change, not a regression).
func (f Figure) Worse() Direction {
	switch f {
	case P50, P95, P99, ErrorRate:
		return Up
	case Knee:
		return Down
	}
	return none
}

// Run is what history needs of one archived run, read by the caller.
type Run struct {
	ID     string // names the run (its folder), unique
	Kind   string // verify, attack, fleet, capacity
	Target string // the target's address
	// Contract names the limits contract the run was judged against
	// (BuiltinContract: the documented API's).
	Contract string
	Label    string    // the run's label (the release under test), or ""
	Start    time.Time // when the run began; runs are ordered by it
	Notes    []string  // facts to show beside the run, e.g. that it fell behind
	Surfaces []Sample  // the run's figures per surface
}

// Sample is a run's figures on one surface. A figure the run does not
// have is absent from Values (not zero); an empty Verdict or Model is no
// verdict or model. Bounds holds the interval a figure was measured
// within, for the figures that have one (capacity's knee); Objective is
// what a capacity run's figures were held to, "" for other runs.
type Sample struct {
	Surface   string
	Verdict   string
	Model     string
	Objective string
	Values    map[Figure]float64
	Bounds    map[Figure]Bounds
}

// Bounds is the interval a run measured a figure within: of capacity's
// knee, the last rate that passed the objective and the first that did
// not. A bound the run did not find is nil (no rate failed: no high
// bound).
type Bounds struct {
	Low  *float64 `json:"low"`
	High *float64 `json:"high"`
}

// Key identifies the runs that make comparable series: one kind of run
// judged against one contract, on one surface (one of its limits), held to
// one objective, with labels of one scheme; and, grouped by target
// (Options.GroupByTarget), on one target, else Target is "" and each
// point names its run's target, so that releases deployed at URLs of
// their own make one series. A capacity run's knee is measured against
// its objective, so runs held to another objective make another series,
// not a change.
type Key struct {
	Kind, Contract, Target, Surface string
	Scheme                          string // Scheme of the runs' labels
	// Objective is what a capacity run was held to: its latency
	// objective and error budget, such as "p99<=100ms, error budget 1%";
	// "" for the other kinds of run.
	Objective string
}

// Scheme returns the scheme of a label: its text before the first digit
// ("v1.4.2" and "v21" are "v", "nightly-20261129" is "nightly-"), or the
// whole label when it has no digit. Releases of one scheme make one
// series; runs labelled "pr-17" are not set among the releases.
func Scheme(label string) string {
	if i := strings.IndexAny(label, "0123456789"); i >= 0 {
		return label[:i]
	}
	return label
}

// Point is one run's value in a series, with the interval the run
// measured it within, where it has one.
type Point struct {
	Run, Label string
	Target     string // the run's target
	Start      time.Time
	Value      float64
	Bounds     Bounds
	Notes      []string
}

// Series is one figure of one key over time, with its change points.
type Series struct {
	Key
	Figure  Figure
	Points  []Point  // in time order
	Changes []Change // in the order of the series
}

// event is a change of verdict or model of one key from one run to the
// next (a change in kind, not a change point).
type event struct {
	Key
	What       string // "verdict" or "model"
	Index      int    // of the run in the key's runs in time order
	Run, Label string
	From, To   string
}

// history is the series and events of a set of runs.
type history struct {
	Series []Series
	Events []event
}

// build groups runs into series, finds each series' change points with
// detect, and lists the changes of verdict and model. Runs are set in
// order of Start (then ID); keys in order of kind, target, surface,
// scheme and objective; within a key, series in the order of Figures, one for each
// figure some run has. Each series draws its permutations from its own
// source, seeded with o.Seed and the series' key and figure, so a series'
// answer does not depend on the other runs of the archive.
func build(runs []Run, o Options) history {
	runs = slices.Clone(runs)
	slices.SortStableFunc(runs, byStart)
	byKey := map[Key][]entry{}
	var keys []Key
	for i := range runs {
		r := &runs[i]
		for _, s := range r.Surfaces {
			k := Key{Kind: r.Kind, Contract: r.Contract, Surface: s.Surface, Scheme: Scheme(r.Label), Objective: s.Objective}
			if o.GroupByTarget {
				k.Target = r.Target
			}
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], entry{r, s})
		}
	}
	slices.SortFunc(keys, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Contract, b.Contract), cmp.Compare(a.Target, b.Target),
			cmp.Compare(a.Surface, b.Surface), cmp.Compare(a.Scheme, b.Scheme), cmp.Compare(a.Objective, b.Objective))
	})
	var h history
	for _, k := range keys {
		es := byKey[k]
		for _, f := range figures {
			s := Series{Key: k, Figure: f}
			for _, e := range es {
				if v, ok := e.sample.Values[f]; ok && !math.IsNaN(v) {
					s.Points = append(s.Points, Point{Run: e.run.ID, Label: e.run.Label, Target: e.run.Target, Start: e.run.Start, Value: v,
						Bounds: e.sample.Bounds[f], Notes: e.run.Notes})
				}
			}
			if len(s.Points) > 0 {
				h.Series = append(h.Series, s)
			}
		}
		h.Events = append(h.Events, events(k, es)...)
	}
	per := o.PerSeries(len(h.Series))
	for i := range h.Series {
		h.Series[i].detect(per)
	}
	return h
}

// PerSeries returns the options each of m series of one history is tested
// with, so that the history as a whole flags a change where there is none
// at most at the stated significance (Bonferroni: Significance/m for each
// series, with enough permutations that a p-value can reach it: at least
// 2m/Significance − 1). A verify run alone makes ten series (five figures
// of two surfaces): tested each at 5 %, an archive with no change would
// flag one of them four times in ten.
func (o Options) PerSeries(m int) Options {
	if m <= 1 {
		return o
	}
	alpha := o.significance() / float64(m)
	o.Significance = alpha
	o.Permutations = max(o.permutations(), int(math.Ceil(2/alpha))-1)
	return o
}

// byStart orders runs by Start, then ID.
func byStart(a, b Run) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID)) }

// entry is one run's sample of one key.
type entry struct {
	run    *Run
	sample Sample
}

// events returns the changes of verdict and model from each of a key's
// runs to the next.
func events(k Key, es []entry) []event {
	var out []event
	for i := 1; i < len(es); i++ {
		prev, cur := es[i-1], es[i]
		for _, ch := range []struct{ what, from, to string }{
			{"verdict", prev.sample.Verdict, cur.sample.Verdict}, {"model", prev.sample.Model, cur.sample.Model}} {
			if ch.from != ch.to {
				out = append(out, event{Key: k, What: ch.what, Index: i,
					Run: cur.run.ID, Label: cur.run.Label, From: ch.from, To: ch.to})
			}
		}
	}
	return out
}

// detect fills s.Changes from s.Points.
func (s *Series) detect(o Options) {
	xs := make([]float64, len(s.Points))
	for i, p := range s.Points {
		xs[i] = p.Value
	}
	s.Changes = detect(xs, s.Figure, rand.New(rand.NewPCG(o.Seed, s.seed())), o)
	for i := range s.Changes {
		c := &s.Changes[i]
		c.Run, c.Label = s.Points[c.Index].Run, s.Points[c.Index].Label
		c.Worse = c.Direction != none && c.Direction == s.Figure.Worse()
	}
}

// seed returns a hash of the series' key and figure (the objective and
// a contract other than the built-in only when there is one, so that the
// series of other runs keep their seeds).
func (s *Series) seed() uint64 {
	h := fnv.New64a()
	fields := []string{s.Kind, s.Target, s.Surface, s.Scheme, string(s.Figure)}
	if s.Objective != "" {
		fields = append(fields, s.Objective)
	}
	if s.Contract != BuiltinContract && s.Contract != "" {
		fields = append(fields, "contract", s.Contract)
	}
	for _, f := range fields {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// FailOnRegression reports whether the newest runs of s lie after a
// significant change for the worse: whether its last change point is for
// the worse (a regression that a later change undid is not).
func (s Series) FailOnRegression() bool {
	return len(s.Changes) > 0 && s.Changes[len(s.Changes)-1].Worse
}

// FailOnRegression reports whether the newest runs of any series lie after
// a significant change for the worse.
func (h history) FailOnRegression() bool {
	return slices.ContainsFunc(h.Series, Series.FailOnRegression)
}
