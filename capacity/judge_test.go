package capacity

import (
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"math/rand/v2"
	"testing"
	"time"
)

// epoch is the start of every synthetic step.
var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// request is what a synthetic API and generator make of request i due at
// intended: how late it goes out, how long the API takes, how it ends.
type request func(i int, intended time.Time) (late, latency time.Duration, failed, refused bool)

// synth fills a Stats with a step of d at rate requests per second from
// epoch, each request made by req.
func synth(rate float64, d time.Duration, req request) *Stats {
	st := NewStats()
	n := int(rate * d.Seconds())
	for i := range n {
		at := epoch.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		late, lat, failed, refused := req(i, at)
		st.Add(Sample{Intended: at, Sent: at.Add(late), Done: at.Add(late + lat), Failed: failed, Refused: refused})
	}
	return st
}

// fixed is an API answering every request in lat, on schedule.
func fixed(lat time.Duration) request {
	return func(int, time.Time) (time.Duration, time.Duration, bool, bool) { return 0, lat, false, false }
}

func TestJudge(t *testing.T) {
	t.Parallel()
	slo, err := ParseSLO("p99<=100ms")
	if err != nil {
		t.Fatal(err)
	}
	crit := criteria{Objective: Objective{SLO: slo, ErrorBudget: 0.01}}
	for _, tc := range []struct {
		name    string
		rate    float64
		d       time.Duration
		req     request
		crit    func(criteria) criteria
		waits   []HostWait   // how long the generator's goroutines waited to run
		hostMS  clock.Millis // the delay the host can have added to the answers that missed
		verdict StepVerdict
		cause   Cause
	}{
		{name: "fast API on schedule", rate: 200, d: 5 * time.Second, req: fixed(20 * time.Millisecond), verdict: StepPass},
		{name: "slow API", rate: 200, d: 5 * time.Second, req: fixed(150 * time.Millisecond), verdict: StepFail, cause: CauseLatency},
		{name: "5 % errors", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 0, 10 * time.Millisecond, i%20 == 0, false
		}, verdict: StepFail, cause: CauseErrors},
		{name: "every answer a 503, held up on a busy host: errors, not latency", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 0, 150 * time.Millisecond, true, false
		}, verdict: StepFail, cause: CauseErrors},
		{name: "429s and slow answers: latency, which no limiter explains", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 0, 150 * time.Millisecond, i%10 == 0, i%10 == 0
		}, verdict: StepFail, cause: CauseLatency},
		{name: "one 429", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 0, 10 * time.Millisecond, i == 7, i == 7
		}, verdict: StepLimits, cause: causeLimits},
		{name: "generator at half the rate", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return time.Duration(i) * 5 * time.Millisecond, 10 * time.Millisecond, false, false
		}, verdict: StepClient, cause: causeClient},
		{name: "generator late by 50ms", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 50 * time.Millisecond, 10 * time.Millisecond, false, false
		}, verdict: StepClient, cause: causeClient},
		{name: "late because the API is slow: the API's failure", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 50 * time.Millisecond, 300 * time.Millisecond, false, false
		}, verdict: StepFail, cause: CauseLatency},
		{name: "a starved host: 80 ms late and its answers read late, within the objective and twice the lateness: client", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 80 * time.Millisecond, 250 * time.Millisecond, false, false
		}, verdict: StepClient, cause: causeClient},
		{name: "80 ms late, answers beyond the objective and twice the lateness: the API's failure", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 80 * time.Millisecond, 300 * time.Millisecond, false, false
		}, verdict: StepFail, cause: CauseLatency},
		{name: "on schedule, answers 160 ms: the API's failure", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return time.Millisecond, 160 * time.Millisecond, false, false
		}, verdict: StepFail, cause: CauseLatency},
		{name: "coordinated omission, lateness charged to the API", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			if i%100 < 5 { // 5 % wait 500 ms for a worker the API holds
				return 500 * time.Millisecond, 10 * time.Millisecond, false, false
			}
			return 0, 10 * time.Millisecond, false, false
		}, crit: func(c criteria) criteria { c.MaxLateness = -1; return c }, verdict: StepFail, cause: CauseLatency},
		{name: "p99 at the objective: undecided", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			// Uniform over 1000 levels whose p99 is exactly the objective.
			return 0, time.Duration(i%1000+1) * 100 * time.Millisecond / 990, false, false
		}, verdict: StepUndecided, cause: CauseLatency},
		{name: "too few requests to prove 1 %", rate: 80, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 0, 10 * time.Millisecond, i == 3, false // 1 of 400: the upper bound is 1.4 %
		}, verdict: StepUndecided, cause: CauseErrors},
		{name: "too few requests for a p99 bound", rate: 10, d: 5 * time.Second, req: fixed(10 * time.Millisecond), verdict: StepUndecided, cause: CauseLatency},
		{name: "nothing sent", rate: 200, d: 0, req: fixed(0), verdict: StepClient, cause: causeClient},
		// 200/s for 5 s: 1000 answers; at 160 ms every one misses the
		// objective, so the host explains them only with 1000 waits (125
		// recorded, one in eight) of at least the delay it is charged.
		{name: "on schedule, answers 160 ms, goroutines waited 40 ms as often as answers missed: client", rate: 200, d: 5 * time.Second,
			req: fixed(160 * time.Millisecond), waits: []HostWait{{AtLeastMS: 40, Count: 125}}, hostMS: 40, verdict: StepClient, cause: causeClient},
		{name: "on schedule, answers 200 ms, goroutines waited 40 ms as often: the API's failure", rate: 200, d: 5 * time.Second,
			req: fixed(200 * time.Millisecond), waits: []HostWait{{AtLeastMS: 40, Count: 125}}, hostMS: 40, verdict: StepFail, cause: CauseLatency},
		{name: "answers 160 ms, one goroutine waited 300 ms and a hundred 5 ms: too few to explain 1000 answers, the API's failure", rate: 200, d: 5 * time.Second,
			req: fixed(160 * time.Millisecond), waits: []HostWait{{AtLeastMS: 300, Count: 1}, {AtLeastMS: 5, Count: 100}}, hostMS: 0, verdict: StepFail, cause: CauseLatency},
		{name: "answers 160 ms, waits of 300 ms and 40 ms that together explain 1000 answers: client at 40 ms", rate: 200, d: 5 * time.Second,
			req: fixed(160 * time.Millisecond), waits: []HostWait{{AtLeastMS: 300, Count: 1}, {AtLeastMS: 40, Count: 124}}, hostMS: 40, verdict: StepClient, cause: causeClient},
		{name: "fast API, one goroutine waited 40 ms: a pass, the delay reported", rate: 200, d: 5 * time.Second,
			req: fixed(20 * time.Millisecond), waits: []HostWait{{AtLeastMS: 40, Count: 1}}, hostMS: 40, verdict: StepPass},
		{name: "80 ms late, answers 300 ms, waits of 120 ms beyond twice the lateness: client", rate: 200, d: 5 * time.Second, req: func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
			return 80 * time.Millisecond, 300 * time.Millisecond, false, false
		}, waits: []HostWait{{AtLeastMS: 120, Count: 125}}, hostMS: 120, verdict: StepClient, cause: causeClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := crit
			if tc.crit != nil {
				c = tc.crit(c)
			}
			st := synth(tc.rate, tc.d, tc.req)
			st.HostWaits(tc.waits)
			r := judge(st, tc.rate, c)
			if r.Verdict != tc.verdict || r.LimitedBy != tc.cause || r.HostDelayMS != tc.hostMS {
				t.Errorf("verdict %s (%q), want %s (%q)\n%+v", r.Verdict, r.LimitedBy, tc.verdict, tc.cause, r)
			}
		})
	}
}

// TestJudgeFigures: the figures of a steady step follow from its
// construction: rates, quantiles, Little's law.
func TestJudgeFigures(t *testing.T) {
	t.Parallel()
	slo, _ := ParseSLO("p99<=100ms")
	st := synth(100, 10*time.Second, func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
		return time.Millisecond, 40 * time.Millisecond, i%200 == 0, false
	})
	r := judge(st, 100, criteria{Objective: Objective{SLO: slo, ErrorBudget: 0.05}})
	near := func(name string, got, want, tol float64) {
		if d := got - want; d > tol || d < -tol {
			t.Errorf("%s = %v, want %v ± %v", name, got, want, tol)
		}
	}
	near("achieved", r.AchievedRPS, 100, 1e-6)
	near("throughput", r.ThroughputRPS, 100*0.995, 1e-6)
	near("quantile", float64(r.QuantileMS), 41, 1e-9)
	near("uncorrected", float64(r.UncorrectedQuantileMS), 40, 1e-9)
	near("lateness", float64(r.LatenessP99MS), 1, 1e-9)
	near("error rate", r.ErrorRate, 0.005, 1e-12)
	near("concurrency", r.Concurrency, 100*0.040, 1e-6) // Little: λ·W
	if r.Requests != 1000 || r.Errors != 5 || r.Verdict != StepPass {
		t.Errorf("%+v", r)
	}
	if r.ErrorRateLow > r.ErrorRate || r.ErrorRateHigh < r.ErrorRate || *r.QuantileLowMS > r.QuantileMS || *r.QuantileHighMS < r.QuantileMS {
		t.Errorf("intervals do not hold their estimates: %+v", r)
	}
}

// TestStatsMerge: two shards merged judge as the step they make together.
func TestStatsMerge(t *testing.T) {
	t.Parallel()
	slo, _ := ParseSLO("p90<=100ms")
	c := criteria{Objective: Objective{SLO: slo, ErrorBudget: 0.1}}
	r := rand.New(rand.NewPCG(3, 4))
	lat := make([]time.Duration, 2000)
	for i := range lat {
		lat[i] = time.Duration(r.ExpFloat64() * 30 * float64(time.Millisecond))
	}
	req := func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
		return 0, lat[i], i%50 == 0, false
	}
	whole := synth(200, 10*time.Second, req)
	a, b := NewStats(), NewStats()
	for i := range 2000 {
		at := epoch.Add(time.Duration(i) * 5 * time.Millisecond)
		late, l, failed, _ := req(i, at)
		s := Sample{Intended: at, Sent: at.Add(late), Done: at.Add(late + l), Failed: failed}
		if i%2 == 0 {
			a.Add(s)
		} else {
			b.Add(s)
		}
	}
	a.Merge(b)
	a.Merge(nil)
	got, want := judge(a, 200, c), judge(whole, 200, c)
	if got.QuantileMS != want.QuantileMS || *got.QuantileLowMS != *want.QuantileLowMS || got.Errors != want.Errors ||
		got.AchievedRPS != want.AchievedRPS || got.Concurrency != want.Concurrency || got.Verdict != want.Verdict {
		t.Errorf("merged %+v\nwant %+v", got, want)
	}
}

// BenchmarkStep: judging one step of 100 000 requests (adding them and
// the judgement).
func BenchmarkStep(b *testing.B) {
	slo, _ := ParseSLO("p99<=100ms")
	c := criteria{Objective: Objective{SLO: slo, ErrorBudget: 0.01}}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 100000
	samples := make([]Sample, n)
	for i := range samples {
		at := epoch.Add(time.Duration(i) * 50 * time.Microsecond)
		lat := time.Duration(r.ExpFloat64() * 20 * float64(time.Millisecond))
		samples[i] = Sample{Intended: at, Sent: at.Add(time.Duration(r.IntN(100)) * time.Microsecond), Done: at.Add(lat), Failed: r.IntN(1000) == 0}
	}
	b.ReportAllocs()
	for b.Loop() {
		st := NewStats()
		for _, s := range samples {
			st.Add(s)
		}
		judge(st, 20000, c)
	}
}
