package history

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestScheme(t *testing.T) {
	t.Parallel()
	for label, want := range map[string]string{
		"v1.4.2": "v", "v21": "v", "nightly-20261129": "nightly-", "pr-17": "pr-", "main": "main", "": "", "2026.1": "",
	} {
		if got := Scheme(label); got != want {
			t.Errorf("Scheme(%q) = %q, want %q", label, got, want)
		}
	}
}

// synthetic returns n verify runs on two surfaces, given out of order: REST
// p99 near 5 ms and rising by a quarter from run 20 on (index 19), MCP
// steady; run 25 fails on REST with another model; a capacity run and a
// run labelled in another scheme make keys of their own.
func synthetic(n int) []Run {
	rng := rand.New(rand.NewPCG(21, 22))
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var runs []Run
	for i := range n {
		rest := 5 * (1 + 0.03*rng.NormFloat64())
		if i >= 19 {
			rest *= 1.25
		}
		verdict, model := "pass", "sliding-log"
		if i == 24 {
			verdict, model = "fail", "fixed-window"
		}
		runs = append(runs, Run{
			ID: fmt.Sprintf("run%02d", i+1), Kind: "verify", Target: "http://127.0.0.1:8080", Label: fmt.Sprintf("v%d", i+1),
			Start: t0.Add(time.Duration(i) * time.Hour),
			Surfaces: []Sample{
				{Surface: "rest", Verdict: verdict, Model: model, Values: map[Figure]float64{P99: rest, ObservedLimit: 240}},
				{Surface: "mcp", Verdict: "pass", Model: "sliding-log", Values: map[Figure]float64{P99: 4 * (1 + 0.03*rng.NormFloat64()), ObservedLimit: 120}},
			}})
	}
	runs = append(runs,
		Run{ID: "cap1", Kind: "capacity", Target: "http://127.0.0.1:8080", Start: t0, Surfaces: []Sample{{Surface: "rest", Values: map[Figure]float64{Knee: 900}}}},
		Run{ID: "pr", Kind: "verify", Target: "http://127.0.0.1:8080", Label: "pr-3", Start: t0, Surfaces: []Sample{{Surface: "rest", Values: map[Figure]float64{P99: 50}}}})
	rng.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
	return runs
}

func TestBuild(t *testing.T) {
	t.Parallel()
	h := build(synthetic(30), Options{GroupByTarget: true})
	type row struct {
		Key
		Figure  Figure
		Points  int
		Changes []string // run: direction worse
	}
	var got []row
	for _, s := range h.Series {
		r := row{Key: s.Key, Figure: s.Figure, Points: len(s.Points)}
		for _, c := range s.Changes {
			r.Changes = append(r.Changes, fmt.Sprintf("%s %s: %s %v", c.Run, c.Label, c.Direction, c.Worse))
		}
		got = append(got, r)
	}
	target := "http://127.0.0.1:8080"
	want := []row{
		{Key{"capacity", "", target, "rest", "", ""}, Knee, 1, nil},
		{Key{"verify", "", target, "mcp", "v", ""}, ObservedLimit, 30, nil},
		{Key{"verify", "", target, "mcp", "v", ""}, P99, 30, nil},
		{Key{"verify", "", target, "rest", "pr-", ""}, P99, 1, nil},
		{Key{"verify", "", target, "rest", "v", ""}, ObservedLimit, 30, nil},
		{Key{"verify", "", target, "rest", "v", ""}, P99, 30, []string{"run20 v20: up true"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	wantEvents := []event{
		{Key: want[4].Key, What: "verdict", Index: 24, Run: "run25", Label: "v25", From: "pass", To: "fail"},
		{Key: want[4].Key, What: "model", Index: 24, Run: "run25", Label: "v25", From: "sliding-log", To: "fixed-window"},
		{Key: want[4].Key, What: "verdict", Index: 25, Run: "run26", Label: "v26", From: "fail", To: "pass"},
		{Key: want[4].Key, What: "model", Index: 25, Run: "run26", Label: "v26", From: "fixed-window", To: "sliding-log"},
	}
	if diff := cmp.Diff(wantEvents, h.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !h.FailOnRegression() {
		t.Error("FailOnRegression = false after REST's p99 rose, want true")
	}
	for _, s := range h.Series {
		for i := 1; i < len(s.Points); i++ {
			if s.Points[i].Start.Before(s.Points[i-1].Start) {
				t.Fatalf("%v %s: points out of time order", s.Key, s.Figure)
			}
		}
	}
}

// TestBuildSeedPerSeries checks that a series' answer does not depend on
// the other runs of the archive.
func TestBuildSeedPerSeries(t *testing.T) {
	t.Parallel()
	all := build(synthetic(30), Options{Seed: 4})
	var restOnly []Run
	for _, r := range synthetic(30) {
		if r.Kind == "verify" && r.Label != "pr-3" {
			r.Surfaces = r.Surfaces[:1]
			restOnly = append(restOnly, r)
		}
	}
	alone := build(restOnly, Options{Seed: 4})
	find := func(h history) Series {
		for _, s := range h.Series {
			if s.Surface == "rest" && s.Figure == P99 && s.Scheme == "v" {
				return s
			}
		}
		t.Fatal("no REST p99 series")
		return Series{}
	}
	// The p-value is drawn from more permutations where more series share
	// the history (Options.PerSeries); a change as clear as this one is
	// found alike, where it is and its size do not depend on the others.
	if diff := cmp.Diff(find(all).Changes, find(alone).Changes, cmpopts.IgnoreFields(Change{}, "P")); diff != "" {
		t.Errorf("REST p99's changes differ with other runs present (-all +alone):\n%s", diff)
	}
}

func TestFailOnRegression(t *testing.T) {
	t.Parallel()
	worse := Change{Direction: Up, Worse: true}
	better := Change{Direction: Down}
	tests := []struct {
		name    string
		changes []Change
		want    bool
	}{
		{"no change", nil, false},
		{"worse last", []Change{better, worse}, true},
		{"undone", []Change{worse, better}, false},
		{"better", []Change{better}, false},
	}
	for _, tt := range tests {
		if got := (Series{Changes: tt.changes}).FailOnRegression(); got != tt.want {
			t.Errorf("%s: FailOnRegression = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWorse(t *testing.T) {
	t.Parallel()
	want := map[Figure]Direction{ObservedLimit: none, P50: Up, P95: Up, P99: Up, ErrorRate: Up, Knee: Down}
	for _, f := range figures {
		if got := f.Worse(); got != want[f] {
			t.Errorf("%s.Worse() = %q, want %q", f, got, want[f])
		}
	}
}

// kneeRuns returns ten capacity runs labelled v1 … v10 on one target and
// surface, their knees near 1500/s to v5 and near 1000/s from v6 on, each
// with its interval; the first five are held to objective before, the
// others to after.
func kneeRuns(before, after string) []Run {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	jitter := []float64{1.01, 0.98, 1.02, 0.99, 1.0, 0.97, 1.03, 1.0, 0.99, 1.01}
	var runs []Run
	for i := range 10 {
		knee, obj := 1500*jitter[i], before
		if i >= 5 {
			knee, obj = 1000*jitter[i], after
		}
		high := knee * 1.05
		runs = append(runs, Run{ID: fmt.Sprintf("cap%02d", i+1), Kind: "capacity", Target: Embedded, Label: fmt.Sprintf("v%d", i+1),
			Start: t0.Add(time.Duration(i) * time.Hour),
			Surfaces: []Sample{{Surface: "rest", Verdict: "found", Objective: obj,
				Values: map[Figure]float64{Knee: knee}, Bounds: map[Figure]Bounds{Knee: {Low: &knee, High: &high}}}}})
	}
	return runs
}

// TestBuildKneeObjective: a knee that falls from about 1500/s to about
// 1000/s at v6 is a change for the worse there, and a regression, when the
// runs were held to one objective; when the objective changed at v6, the
// runs before and after are two series, neither with a change.
func TestBuildKneeObjective(t *testing.T) {
	t.Parallel()
	const p99, p50 = "p99<=100ms, error budget 1%", "p99<=50ms, error budget 1%"
	type series struct {
		Objective string
		Points    int
		Changes   []string // label: direction worse
	}
	tests := []struct {
		name       string
		after      string
		want       []series
		regression bool
	}{
		{"one objective", p99, []series{{p99, 10, []string{"v6: down true"}}}, true},
		{"objective changed", p50, []series{{p99, 5, nil}, {p50, 5, nil}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := build(kneeRuns(p99, tt.after), Options{})
			var got []series
			for _, s := range h.Series {
				if s.Figure != Knee || s.Kind != "capacity" || s.Surface != "rest" || s.Scheme != "v" {
					t.Errorf("series %+v %s, want the knee of capacity runs on rest labelled v…", s.Key, s.Figure)
				}
				g := series{Objective: s.Objective, Points: len(s.Points)}
				for _, c := range s.Changes {
					g.Changes = append(g.Changes, fmt.Sprintf("%s: %s %v", c.Label, c.Direction, c.Worse))
				}
				for _, p := range s.Points {
					if p.Bounds.Low == nil || *p.Bounds.Low != p.Value || p.Bounds.High == nil || *p.Bounds.High <= p.Value {
						t.Errorf("%s: bounds %+v of %g, want the knee's interval kept with it", p.Label, p.Bounds, p.Value)
					}
				}
				got = append(got, g)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("series (-want +got):\n%s", diff)
			}
			if h.FailOnRegression() != tt.regression {
				t.Errorf("FailOnRegression = %v, want %v", h.FailOnRegression(), tt.regression)
			}
			if len(h.Events) != 0 {
				t.Errorf("events %+v, want none (every run found its knee)", h.Events)
			}
		})
	}
}

// TestBuildGroupsByContract: runs of one contract against a target per
// release (v1.staging…, v2.staging…) make one series by default, each
// point naming its run's target; grouped by target they make a series
// each, one run long, as before.
func TestBuildGroupsByContract(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var runs []Run
	for i := range 3 {
		runs = append(runs, Run{ID: fmt.Sprintf("run%d", i+1), Kind: "verify", Contract: BuiltinContract, Target: fmt.Sprintf("https://v%d.staging.example.com", i+1),
			Label: fmt.Sprintf("v%d", i+1), Start: t0.Add(time.Duration(i) * time.Hour),
			Surfaces: []Sample{{Surface: "rest", Verdict: "pass", Values: map[Figure]float64{P99: 5}}}})
	}
	h := build(runs, Options{})
	if len(h.Series) != 1 || len(h.Series[0].Points) != 3 || h.Series[0].Target != "" || h.Series[0].Contract != BuiltinContract {
		t.Fatalf("series %+v, want one of 3 points, of the built-in contract, naming no target", h.Series)
	}
	for i, p := range h.Series[0].Points {
		if p.Target != runs[i].Target {
			t.Errorf("point %d names target %q, want its run's %q", i, p.Target, runs[i].Target)
		}
	}
	h = build(runs, Options{GroupByTarget: true})
	if len(h.Series) != 3 || h.Series[0].Target != "https://v1.staging.example.com" || len(h.Series[0].Points) != 1 {
		t.Errorf("grouped by target: %d series, want 3 of one run each", len(h.Series))
	}
}
