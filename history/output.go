package history

import (
	"math"
	"slices"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// schema is the schema of Output, history's JSON
// (docs/schema/history.json). Fields may be added within a schema, none
// renamed or removed.
const schema = 1

// Output is the history of an archive of runs, in the form of history
// --json: every run read with its figures, the paths that could not be
// read and why, the series with their points, the change points of all
// series, and the changes of verdict and model. Lists are never null.
type Output struct {
	Schema int `json:"schema"`
	// Regression says the newest runs of some series lie after a
	// significant change for the worse (history --fail-on regression).
	Regression bool `json:"regression"`
	// TooShort counts the series too short to find a change in (see
	// SeriesOut.TooShort).
	TooShort int `json:"too_short"`
	// Significance is the false-alarm rate of the whole history (over all
	// its series), Confidence that of the change sizes' intervals.
	// SeriesSignificance and Permutations are what each series was tested
	// with (Options.PerSeries).
	Significance       float64     `json:"significance"`
	SeriesSignificance float64     `json:"series_significance"`
	Permutations       int         `json:"permutations"`
	Confidence         float64     `json:"confidence"`
	Runs               []RunOut    `json:"runs"`
	Unread             []Unread    `json:"unread"`
	Series             []SeriesOut `json:"series"`
	Changes            []ChangeOut `json:"changes"`
	Events             []EventOut  `json:"events"`
}

// RunOut is one run read, in time order.
type RunOut struct {
	Run     string               `json:"run"` // its folder
	Kind    string               `json:"kind"`
	Target  string               `json:"target"` // Embedded for the embedded target
	Label   string               `json:"label"`
	Start   time.Time            `json:"start"`
	Version string               `json:"version"` // ratecheck's
	Host    string               `json:"host"`
	Machine *archive.MachineInfo `json:"machine"` // null when run.json does not say
	// Starved and FellBehind flag a run whose timings carry its
	// machine's trouble; it stays in its series, its points flagged.
	Starved    bool         `json:"starved"`
	FellBehind bool         `json:"fell_behind"`
	BehindMS   clock.Millis `json:"behind_ms"`
	Notes      []string     `json:"notes"`
	Surfaces   []SampleOut  `json:"surfaces"`
}

// SampleOut is a run's figures on one surface, and the intervals of those
// measured within one.
type SampleOut struct {
	Surface   string             `json:"surface"`
	Verdict   string             `json:"verdict"`   // "" for none
	Model     string             `json:"model"`     // "" for none
	Objective string             `json:"objective"` // "" for none
	Figures   map[Figure]float64 `json:"figures"`
	Bounds    map[Figure]Bounds  `json:"bounds"`
}

// SeriesOut is one series: a figure of one key over time.
type SeriesOut struct {
	Kind     string `json:"kind"`
	Contract string `json:"contract"`
	// Target is the series' target when runs are grouped by target, else
	// "" (each point names its run's).
	Target    string `json:"target"`
	Surface   string `json:"surface"`
	Scheme    string `json:"scheme"`
	Objective string `json:"objective"`
	Figure    Figure `json:"figure"`
	// Worse is the direction a change of the figure is for the worse in.
	Worse Direction `json:"worse"`
	// Regression says the series' newest runs lie after a change for the
	// worse.
	Regression bool `json:"regression"`
	// Floor is the least change of the series reported: a change point
	// with a smaller shift is not one.
	Floor Floor `json:"floor"`
	// MinRuns is the fewest runs in which the series' test finds even the
	// clearest change more often than not (Options.MinRuns at its
	// significance); TooShort says the series has fewer: no change found
	// in it is no evidence of none.
	MinRuns  int        `json:"min_runs"`
	TooShort bool       `json:"too_short"`
	Points   []PointOut `json:"points"`
}

// PointOut is one run's value in a series, with the interval the run
// measured it within (Low and High nil where it has none).
type PointOut struct {
	Run    string    `json:"run"`
	Label  string    `json:"label"`
	Target string    `json:"target"` // the run's (Embedded for the embedded target)
	Start  time.Time `json:"start"`
	Value  float64   `json:"value"`
	Bounds
	Flagged bool `json:"flagged"` // the run was starved or fell behind
}

// ChangeOut is a change point of the series at index Series of
// Output.Series.
type ChangeOut struct {
	Series    int       `json:"series"`
	Figure    Figure    `json:"figure"`
	Run       string    `json:"run"`
	Label     string    `json:"label"`
	Index     int       `json:"index"` // of the run in the series' points, from 0
	Before    float64   `json:"before"`
	After     float64   `json:"after"`
	Size      float64   `json:"size"`
	SizeLow   float64   `json:"size_low"`
	SizeHigh  float64   `json:"size_high"`
	Direction Direction `json:"direction"`
	Worse     bool      `json:"worse"`
	P         float64   `json:"p"`
}

// EventOut is a change of verdict or model from one run of a key to the
// next.
type EventOut struct {
	Kind      string `json:"kind"`
	Contract  string `json:"contract"`
	Target    string `json:"target"` // "" unless grouped by target
	Surface   string `json:"surface"`
	Scheme    string `json:"scheme"`
	Objective string `json:"objective"`
	What      string `json:"what"`
	Index     int    `json:"index"`
	Run       string `json:"run"`
	Label     string `json:"label"`
	From      string `json:"from"`
	To        string `json:"to"`
}

// Trend builds the history of archived runs with Build and sets it out as
// Output, with the paths that could not be read.
func Trend(runs []Archived, unread []Unread, o Options) Output {
	plain := make([]Run, len(runs))
	flagged := map[string]bool{}
	for i := range runs {
		plain[i] = runs[i].Run
		flagged[runs[i].ID] = runs[i].Flagged()
	}
	h := build(plain, o)
	per := o.PerSeries(len(h.Series))
	out := Output{Schema: schema, Regression: h.FailOnRegression(), Significance: o.significance(),
		SeriesSignificance: per.significance(), Permutations: per.permutations(),
		Confidence: o.confidence(), Runs: runsOut(runs), Unread: append([]Unread{}, unread...),
		Series: []SeriesOut{}, Changes: []ChangeOut{}, Events: []EventOut{}}
	for i, s := range h.Series {
		so := SeriesOut{Kind: s.Kind, Contract: s.Contract, Target: s.Target, Surface: s.Surface, Scheme: s.Scheme, Objective: s.Objective, Figure: s.Figure,
			Worse: s.Figure.Worse(), Regression: s.FailOnRegression(), Floor: o.floor(s.Figure), Points: []PointOut{},
			MinRuns: per.MinRuns(), TooShort: len(s.Points) < per.MinRuns()}
		for _, p := range s.Points {
			so.Points = append(so.Points, PointOut{Run: p.Run, Label: p.Label, Target: p.Target, Start: p.Start, Value: p.Value, Bounds: p.Bounds, Flagged: flagged[p.Run]})
		}
		out.Series = append(out.Series, so)
		if so.TooShort {
			out.TooShort++
		}
		for _, c := range s.Changes {
			out.Changes = append(out.Changes, ChangeOut{Series: i, Figure: s.Figure, Run: c.Run, Label: c.Label, Index: c.Index,
				Before: c.Before, After: c.After, Size: c.Size, SizeLow: c.SizeLow, SizeHigh: c.SizeHigh, Direction: c.Direction, Worse: c.Worse, P: c.P})
		}
	}
	for _, e := range h.Events {
		out.Events = append(out.Events, EventOut{Kind: e.Kind, Contract: e.Contract, Target: e.Target, Surface: e.Surface, Scheme: e.Scheme, Objective: e.Objective,
			What: e.What, Index: e.Index, Run: e.Run, Label: e.Label, From: e.From, To: e.To})
	}
	return out
}

// runsOut is every run, in the time order Build sets them in.
func runsOut(runs []Archived) []RunOut {
	runs = slices.Clone(runs)
	slices.SortStableFunc(runs, func(a, b Archived) int { return byStart(a.Run, b.Run) })
	out := []RunOut{}
	for _, a := range runs {
		r := RunOut{Run: a.ID, Kind: a.Kind, Target: a.Target, Label: a.Label, Start: a.Start, Version: a.Info.Version,
			Host: a.Info.Host, Machine: a.Info.Machine, Starved: a.Starved, FellBehind: a.Behind, BehindMS: a.Info.BehindMS,
			Notes: append([]string{}, a.Notes...), Surfaces: []SampleOut{}}
		for _, s := range a.Surfaces {
			so := SampleOut{Surface: s.Surface, Verdict: s.Verdict, Model: s.Model, Objective: s.Objective,
				Figures: map[Figure]float64{}, Bounds: map[Figure]Bounds{}}
			for f, v := range s.Values {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					so.Figures[f] = v
				}
			}
			for f, b := range s.Bounds {
				if _, ok := so.Figures[f]; ok {
					so.Bounds[f] = b
				}
			}
			r.Surfaces = append(r.Surfaces, so)
		}
		out = append(out, r)
	}
	return out
}

// Key is the key of the series.
func (s SeriesOut) Key() Key {
	return Key{Kind: s.Kind, Contract: s.Contract, Target: s.Target, Surface: s.Surface, Scheme: s.Scheme, Objective: s.Objective}
}

// Key is the key of the runs the event is between.
func (e EventOut) Key() Key {
	return Key{Kind: e.Kind, Contract: e.Contract, Target: e.Target, Surface: e.Surface, Scheme: e.Scheme, Objective: e.Objective}
}
