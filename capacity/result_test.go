package capacity

import "testing"

// TestOutcome: what a result means to a gate, per verdict and expected
// rate.
func TestOutcome(t *testing.T) {
	t.Parallel()
	knee := 250.0
	for _, tc := range []struct {
		name   string
		r      Result
		expect float64
		want   Outcome
		why    string
	}{
		{"found", Result{Verdict: VerdictFound, KneeRPS: &knee}, 0, Met, ""},
		{"found at the rate expected", Result{Verdict: VerdictFound, KneeRPS: &knee}, 250, Met, ""},
		{"found below the rate expected", Result{Verdict: VerdictFound, KneeRPS: &knee}, 300, Missed, "below the expected 300/s"},
		{"not found", Result{Verdict: VerdictNotFound, Steps: []StepResult{{ErrorRate: 0.5}}}, 0, Missed, ""},
		{"every request failed", Result{Verdict: VerdictNotFound, Steps: []StepResult{{ErrorRate: 1}}}, 0, Unreachable, "the target failed every request from the start"},
		{"client", Result{Verdict: VerdictClient}, 0, Undecided, ""},
		{"inconclusive", Result{Verdict: VerdictInconclusive}, 300, Undecided, ""},
	} {
		if got, why := tc.r.Outcome(tc.expect); got != tc.want || why != tc.why {
			t.Errorf("%s: Outcome(%g) = %d, %q; want %d, %q", tc.name, tc.expect, got, why, tc.want, tc.why)
		}
	}
}

// TestContradiction: a step that failed at a rate at or below one that
// passed is found, with the step that passed; a failure above every pass,
// or an undecided step, is none.
func TestContradiction(t *testing.T) {
	t.Parallel()
	step := func(rate float64, v StepVerdict) StepResult { return StepResult{OfferedRPS: rate, Verdict: v} }
	for _, tc := range []struct {
		name         string
		steps        []StepResult
		failed, pass int
		ok           bool
	}{
		{"a re-measure failed where the ramp passed (a suite run)", []StepResult{step(400, StepPass), step(800, StepFail), step(565.7, StepFail), step(475.7, StepFail), step(436.2, StepFail), step(400, StepFail)}, 5, 0, true},
		{"failed below a rate that passed", []StepResult{step(300, StepPass), step(600, StepPass), step(450, StepFail)}, 2, 1, true},
		{"every failure above every pass", []StepResult{step(300, StepPass), step(600, StepFail), step(424, StepPass), step(504, StepFail)}, 0, 0, false},
		{"undecided at a rate that passed", []StepResult{step(300, StepPass), step(300, StepUndecided)}, 0, 0, false},
		{"no step", nil, 0, 0, false},
	} {
		f, p, ok := Result{Steps: tc.steps}.Contradiction()
		if f != tc.failed || p != tc.pass || ok != tc.ok {
			t.Errorf("%s: Contradiction() = %d, %d, %v; want %d, %d, %v", tc.name, f, p, ok, tc.failed, tc.pass, tc.ok)
		}
	}
}
