// Package capacity is the knee search of ratecheck capacity: the highest
// open-model rate an API sustains within a latency objective and an error
// budget, judged step by step from exact confidence intervals.
//
// The package is pure: it plans steps, judges the samples of each step
// and picks the next rate, and never sends a request, sleeps, reads a
// clock or prints. A caller drives a [Search]:
//
//	s, err := capacity.NewSearch(opts)
//	var st *capacity.Stats
//	for step, ok := s.Next(); ok; step, ok = s.Next() {
//		if !step.Continue {
//			st = capacity.NewStats()
//		}
//		run(step, st) // send at step.Rate from step.Sources addresses: drop
//		              // the step.Warmup, then st.Add each result of step.Duration
//		s.Record(st)
//	}
//	res := s.Result()
//
// Memory is bounded by steps, not by requests: a [Stats] holds the
// samples of one step (three durations a request) until it is judged;
// the search keeps only each step's [StepResult].
//
// Latency is measured from each request's intended send time (the
// correction of coordinated omission wrk2 makes); the figure measured from
// the actual send is kept beside it. A step whose requests did not go out
// on schedule is the generator's limit (verdict client), never the API's.
// A 429 during the search is the limiter engaging below its documented
// rate (verdict limits): a finding of its own, never capacity.
//
// Besides the measured knee, [FitUSL] fits Gunther's Universal Scalability
// Law to throughput against concurrency (Little's law) over every step
// that measured the API's throughput, the failed ones past the knee
// included (they place the peak): a model of the curve, reported apart
// from the knee, whose peak is given only where the steps bound it and
// flagged where it lies above every throughput measured.
package capacity
