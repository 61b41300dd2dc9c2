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
