package capacity

import (
	"fmt"

	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// Result is the outcome of a search, in the form of capacity --json
// (docs/schema/capacity.json). Rates are per second, durations in
// milliseconds; an absent figure is nil (JSON null).
type Result struct {
	// Verdict is VerdictFound, VerdictNotFound, VerdictClient or
	// VerdictInconclusive.
	Verdict Verdict `json:"verdict"`
	// KneeRPS is the highest rate the API was proved to sustain (the
	// last passing rate, re-measured when the verdict is found); nil when
	// no rate passed.
	KneeRPS *float64 `json:"knee_rps"`
	// KneeLowRPS is the low end of the knee's bracket: KneeRPS.
	KneeLowRPS *float64 `json:"knee_low_rps"`
	// KneeHighRPS is the high end: the lowest rate that failed the
	// objective (or stayed undecided); nil when none did.
	KneeHighRPS *float64 `json:"knee_high_rps"`
	// LimitedBy is what ended the search: CauseLatency, CauseErrors,
	// causeClient, CauseLimits or CauseMaxRate; none (null) when it ran
	// out of steps.
	LimitedBy Cause `json:"limited_by"`
	// SLO is the latency objective as written, such as "p99<=100ms".
	SLO string `json:"slo"`
	// Quantile is the objective's quantile, such as 0.99.
	Quantile float64 `json:"quantile"`
	// SLOMS is the objective's bound in milliseconds.
	SLOMS clock.Millis `json:"slo_ms"`
	// ErrorBudget is the share of requests that may fail.
	ErrorBudget float64 `json:"error_budget"`
	// Confidence is that of every interval.
	Confidence float64 `json:"confidence"`
	// Precision is how close the bracket had to close.
	Precision float64 `json:"precision"`
	// StartRPS is the first rate of the search.
	StartRPS float64 `json:"start_rps"`
	// MaxRPS is the highest rate it could offer.
	MaxRPS float64 `json:"max_rps"`
	// Steps are the judged steps, in the order they ran.
	Steps []StepResult `json:"steps"`
	// USL is the model fitted over every step that measured the API's
	// throughput (passing, failed and undecided steps alike: see [StepResult.Fitted]);
	// nil with fewer than 4 of them.
	USL *USL `json:"usl"`
}

// Result returns the search's outcome; before the search is done its
// verdict is VerdictInconclusive and its figures those so far. The USL
// model is fitted on every call.
func (s *Search) Result() Result {
	o := s.o
	r := Result{Verdict: VerdictInconclusive, LimitedBy: s.cause,
		SLO: o.Objective.SLO.String(), Quantile: o.Objective.SLO.Quantile, SLOMS: clock.Ms(o.Objective.SLO.Max),
		ErrorBudget: o.Objective.ErrorBudget, Confidence: o.Confidence, Precision: o.Precision,
		StartRPS: o.StartRate, MaxRPS: o.MaxRate, Steps: append([]StepResult{}, s.steps...)}
	if s.done {
		r.Verdict = s.verdict
	}
	if s.low > 0 {
		r.KneeRPS, r.KneeLowRPS = ptr(s.low), ptr(s.low)
	}
	if s.high > 0 {
		r.KneeHighRPS = ptr(s.high)
	}
	r.USL = modelOf(s.steps, o)
	return r
}

// modelOf is the USL fitted over the steps that measured the API's
// throughput (see [StepResult.Fitted]), with o's bootstrap; nil with fewer than 4.
func modelOf(steps []StepResult, o Options) *USL {
	var pts []point
	for _, st := range steps {
		if st.Fitted() {
			pts = append(pts, point{Concurrency: st.Concurrency, Throughput: st.ThroughputRPS, Behind: st.FellBehind()})
		}
	}
	u, err := FitUSL(pts, o.Resamples, o.Seed, o.Confidence)
	if err != nil {
		return nil
	}
	u.ExcludedSteps = len(steps) - len(pts)
	return u
}

// Fitted reports whether the USL is fitted to step s: whether it
// measured the API's throughput at its concurrency. Passing steps do, and
// so do the steps that failed or stayed undecided: past the knee they
// are what places the peak. Left out are a step the generator could not
// send on schedule (its rate and concurrency are the generator's, which
// the search never charges to the API), a step a 429 answered even in
// part (its throughput is the limiter's as much as the API's: refused
// requests are neither served nor a sign of saturation), a step that
// caught up (see caughtUp) and a step with no throughput or concurrency
// to place.
func (s StepResult) Fitted() bool {
	return s.Verdict != StepClient && s.Verdict != StepLimits && s.Refused == 0 && !s.caughtUp() &&
		s.ThroughputRPS > 0 && s.Concurrency > 0
}

// caughtUp reports whether step s returned its successes faster than its
// requests went out, by more than behindShare. No API serves a step
// faster than it is sent: such a step inherited a backlog from the step
// before it that drained while it ran (its first requests waited behind
// the backlog, its last did not), which shortens the span its throughput
// is measured over and puts the backlog into its concurrency. Neither
// figure is the API's at that concurrency (a run against a pool of
// 200/s measured 226/s at 186/s sent, with a backlog's p99 of 900 ms).
func (s StepResult) caughtUp() bool {
	return s.ThroughputRPS > s.AchievedRPS*(1+behindShare)
}

// behindShare is by how much of its send rate a step's throughput must
// fall short for the API to have fallen behind in it, or exceed it for
// the step to have caught up: 0.5 %. A step the
// API keeps up with returns its successes at its send rate, give or take
// its first and last requests' latencies over its length (0.0 to 0.3 % in
// the embedded pool's runs of 5 s steps). A step past the knee is short by
// its overload, and even 1 % over a pool of fixed service times puts a
// backlog into the step's concurrency that, held to X at it, had the
// model's peak 17 % over the pool's capacity in the tests. A step that
// kept up but is flagged by its edges costs nothing: it is held to X at
// its concurrency unless the model peaks below it.
const behindShare = 0.005

// FellBehind reports whether the API fell behind in step s: whether its
// throughput fell short of the rate its requests went out at by more than
// behindShare. Its queue then grew through the step, or it failed
// requests: a backlog, not a steady state.
func (s StepResult) FellBehind() bool {
	return s.ThroughputRPS < s.AchievedRPS*(1-behindShare)
}

// Contradiction returns the first step that failed at a rate at or below
// one a step passed, and that step: the search could not hold a rate it
// had passed, so the target's capacity (or the generating host's) changed
// during it. ok is false when no step contradicts another.
func (r Result) Contradiction() (failed, passed int, ok bool) {
	for i, f := range r.Steps {
		if f.Verdict != StepFail {
			continue
		}
		for j, p := range r.Steps {
			if p.Verdict == StepPass && f.OfferedRPS <= p.OfferedRPS {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

// ptr returns a pointer to a copy of v.
func ptr(v float64) *float64 { return &v }

// Outcome is what a search's result means to a release gate.
type Outcome int

// The outcomes of a search.
const (
	// Met: the knee was found, at or above the rate expected.
	Met Outcome = iota
	// Missed: the knee was found below the rate expected, or even the
	// start rate failed.
	Missed
	// Unreachable: every request of the first step failed: the target
	// was not serving, which is no knee.
	Unreachable
	// Undecided: the search could not decide (a 429, contradicting
	// steps, out of steps) or met the generator's limit.
	Undecided
)

// Outcome says what r means to a gate that expects a knee at or above
// expect requests per second (0: any knee), and why, in words to follow
// the knee's own line, where the verdict alone does not say it ("" where
// it does).
func (r Result) Outcome(expect float64) (Outcome, string) {
	switch r.Verdict {
	case VerdictFound:
		if expect > 0 && r.KneeRPS != nil && *r.KneeRPS < expect {
			return Missed, fmt.Sprintf("below the expected %g/s", expect)
		}
		return Met, ""
	case VerdictNotFound:
		if len(r.Steps) > 0 && r.Steps[0].ErrorRate == 1 {
			return Unreachable, "the target failed every request from the start"
		}
		return Missed, ""
	}
	return Undecided, ""
}
