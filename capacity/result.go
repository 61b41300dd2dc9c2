package capacity

// Result is the outcome of a search, in the form of capacity --json
// (docs/schema/capacity.json). Rates are per second, durations in
// milliseconds; an absent figure is nil (JSON null).
type Result struct {
	// Verdict is VerdictFound, VerdictNotFound, VerdictClient or
	// verdictInconclusive.
	Verdict string `json:"verdict"`
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
	// SLOMs is the objective's bound in milliseconds.
	SLOMs float64 `json:"slo_ms"`
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
	// USL is the model fitted over the passing steps; nil with fewer
	// than 4 of them.
	USL *USL `json:"usl"`
}

// Result returns the search's outcome; before the search is done its
// verdict is VerdictInconclusive and its figures those so far. The USL
// model is fitted on every call.
func (s *Search) Result() Result {
	o := s.o
	r := Result{Verdict: verdictInconclusive, LimitedBy: s.cause,
		SLO: o.Objective.SLO.String(), Quantile: o.Objective.SLO.Quantile, SLOMs: ms(o.Objective.SLO.Max),
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
	var pts []point
	for _, st := range s.steps {
		if st.Verdict == stepPass {
			pts = append(pts, point{Concurrency: st.Concurrency, Throughput: st.ThroughputRPS})
		}
	}
	if u, err := FitUSL(pts, o.Resamples, o.Seed, o.Confidence); err == nil {
		r.USL = u
	}
	return r
}

// ptr returns a pointer to a copy of v.
func ptr(v float64) *float64 { return &v }
