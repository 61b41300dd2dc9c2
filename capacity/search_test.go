package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeAPI serves the requests of a step in compressed time: no clock, no
// sleep. reset starts a fresh step at a rate; serve makes request i due
// at intended.
type fakeAPI interface {
	reset(rate float64)
	serve(i int, intended time.Time) (late, latency time.Duration, failed, refused bool)
}

// drive runs a search against api as a caller would: warm-up dropped,
// lengthenings added to the same Stats. It returns the result, the load
// time (warm-ups included) and how many steps Next gave.
func drive(t *testing.T, o Options, api fakeAPI) (Result, time.Duration, int) {
	t.Helper()
	if o.Resamples == 0 {
		o.Resamples = 50 // the bootstrap is TestFitUSLRecovers' to test
	}
	s, err := NewSearch(o)
	if err != nil {
		t.Fatal(err)
	}
	var (
		st    *Stats
		load  time.Duration
		calls int
		i     int       // the next request of the step
		at    time.Time // its intended time
	)
	for step, ok := s.Next(); ok; step, ok = s.Next() {
		calls++
		if calls > 500 {
			t.Fatal("search does not end")
		}
		if step.Rate > o.MaxRate || step.Rate <= 0 {
			t.Fatalf("step at %v, outside (0, %v]", step.Rate, o.MaxRate)
		}
		gap := time.Duration(float64(time.Second) / step.Rate)
		if !step.Continue {
			st, i, at = NewStats(), 0, epoch
			api.reset(step.Rate)
			for end := at.Add(step.Warmup); at.Before(end); at, i = at.Add(gap), i+1 {
				api.serve(i, at) // warm-up: served, dropped
			}
		}
		for end := at.Add(step.Duration); at.Before(end); at, i = at.Add(gap), i+1 {
			late, lat, failed, refused := api.serve(i, at)
			st.Add(Sample{Intended: at, Sent: at.Add(late), Done: at.Add(late + lat), Failed: failed, Refused: refused})
		}
		load += step.Warmup + step.Duration
		if _, err := s.Record(st); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Done() {
		t.Fatal("Next gave no step but the search is not done")
	}
	return s.Result(), load, calls
}

// ddc is a D/D/c queue: c workers each serving a request in service,
// first come first served, deterministic arrivals. Its capacity is
// c/service; below it every request takes service, above it the queue
// grows without bound.
type ddc struct {
	c       int
	service time.Duration
	free    []time.Time // when the worker of request i−c is free, by i mod c
}

func (q *ddc) reset(float64) { q.free = make([]time.Time, q.c) }

func (q *ddc) serve(i int, at time.Time) (time.Duration, time.Duration, bool, bool) {
	start := at
	if f := q.free[i%q.c]; f.After(start) {
		start = f
	}
	q.free[i%q.c] = start.Add(q.service)
	return 0, start.Add(q.service).Sub(at), false, false
}

// byRate is an API whose every request depends on the step's rate only.
type byRate struct {
	rate float64
	f    func(rate float64, i int) (late, latency time.Duration, failed, refused bool)
}

func (b *byRate) reset(rate float64) { b.rate = rate }
func (b *byRate) serve(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
	return b.f(b.rate, i)
}

// p99 returns a p99<=d objective with a 1 % budget.
func p99(t *testing.T, d string) Objective {
	slo, err := ParseSLO("p99<=" + d)
	if err != nil {
		t.Fatal(err)
	}
	return Objective{SLO: slo, ErrorBudget: defaultErrorBudget}
}

// TestSearchFindsTheKneeOfAQueue: against D/D/c queues of known capacity
// c/S the knee is found within the precision, bracketed by a pass and a
// fail, in a bounded number of steps and of load time.
func TestSearchFindsTheKneeOfAQueue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		c        int
		service  time.Duration
		slo      string
		start    float64
		maxSteps int
		maxLoad  time.Duration
	}{
		// The figure: 50 workers × 20 ms, p99<=100ms, 5 s steps:
		// at most 12 steps and 90 s of load.
		{"50 workers, 20ms", 50, 20 * time.Millisecond, "100ms", 100, 12, 90 * time.Second},
		{"8 workers, 10ms", 8, 10 * time.Millisecond, "50ms", 50, 12, 90 * time.Second},
		{"200 workers, 50ms, start near", 200, 50 * time.Millisecond, "250ms", 3000, 12, 90 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			capacity := float64(tc.c) / tc.service.Seconds()
			o := Options{Objective: p99(t, tc.slo), StartRate: tc.start, MaxRate: 20 * capacity}
			res, load, calls := drive(t, o, &ddc{c: tc.c, service: tc.service})
			if res.Verdict != VerdictFound || res.LimitedBy != CauseLatency || res.KneeRPS == nil || res.KneeHighRPS == nil {
				t.Fatalf("verdict %s limited by %q, knee %v: want found, latency\n%s", res.Verdict, res.LimitedBy, res.KneeRPS, dump(res))
			}
			knee, high := *res.KneeRPS, *res.KneeHighRPS
			if math.Abs(knee-capacity)/capacity > 0.05 {
				t.Errorf("knee %.1f/s, want within 5 %% of %.0f/s\n%s", knee, capacity, dump(res))
			}
			if high > knee*1.05+1e-9 || high <= knee {
				t.Errorf("bracket [%v, %v] wider than the precision", knee, high)
			}
			if len(res.Steps) > tc.maxSteps || load > tc.maxLoad {
				t.Errorf("%d steps, %v of load; want at most %d and %v\n%s", len(res.Steps), load, tc.maxSteps, tc.maxLoad, dump(res))
			}
			t.Logf("knee %.1f/s in [%.1f, %.1f], %d steps, %v of load", knee, knee, high, len(res.Steps), load)
			if calls < len(res.Steps) {
				t.Errorf("%d calls for %d steps", calls, len(res.Steps))
			}
			last := res.Steps[len(res.Steps)-1]
			if last.Phase != phaseRemeasure || last.Verdict != StepPass || last.OfferedRPS != knee {
				t.Errorf("last step %+v, want the knee re-measured", last)
			}
		})
	}
}

// TestSearchFindsTheKneeOfAUniformPool holds the knee found against a
// pool of 10 workers with service times uniform in 5ms-35ms (500/s
// nominal), in the runner's compressed steps (1.5 s judged after 0.5 s of
// warm-up, lengthened up to 3 s), to the D/G/c queue's figure: the p99 of
// a part of a step, served by the same pool from an empty queue. A step's
// judged p99 lies between those of its parts, so every rate at which the
// figure keeps the longest judged part (warm-up, then MaxStep) within the
// objective passes, less the arrival jitter δ, and no rate passes at
// which even the most lenient part (a step's first: Step after the
// warm-up) is beyond it, for any of the figure's draws. The bracket
// closes to the precision p: low·(1−δ)/(1+p) ≤ knee < high.
func TestSearchFindsTheKneeOfAUniformPool(t *testing.T) {
	t.Parallel()
	const lo, hi, workers = 5 * time.Millisecond, 35 * time.Millisecond, 10
	o := Options{Objective: p99(t, "100ms"), StartRate: 300, MaxRate: 2000,
		Step: 1500 * time.Millisecond, Warmup: 500 * time.Millisecond, MaxStep: 3 * time.Second}
	slo := o.Objective.SLO.Max
	// figure is the p99 of the judged part of a part at rate: warm then
	// judged, from an empty queue, service times drawn from seed.
	figure := func(rate float64, warm, judged time.Duration, seed uint64) time.Duration {
		q := &pool{c: workers, draw: uniform(lo, hi, seed)}
		q.reset(rate)
		gap := time.Duration(float64(time.Second) / rate)
		var lat []time.Duration
		for i, at := 0, epoch; at.Before(epoch.Add(warm + judged)); i, at = i+1, at.Add(gap) {
			_, d, _, _ := q.serve(i, at)
			if !at.Before(epoch.Add(warm)) {
				lat = append(lat, d)
			}
		}
		slices.Sort(lat)
		return lat[max(0, int(math.Ceil(0.99*float64(len(lat))))-1)]
	}
	const seeds, p, delta = 8, 0.05, 0.05
	low, high := 0.0, 0.0
	for rate := 250.0; rate <= 2000 && high == 0; rate += 2.5 {
		worst, best := time.Duration(0), time.Duration(1<<62)
		for seed := range uint64(seeds) {
			worst = max(worst, figure(rate, o.Warmup, o.MaxStep, seed))
			best = min(best, figure(rate, o.Warmup, o.Step, seed))
		}
		if worst <= slo {
			low = rate
		}
		if best > slo {
			high = rate
		}
	}
	if low == 0 || high == 0 {
		t.Fatalf("the figure brackets nothing: low %v, high %v", low, high)
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("draws %d", seeds+seed), func(t *testing.T) {
			t.Parallel()
			res, _, _ := drive(t, o, &pool{c: workers, draw: uniform(lo, hi, seeds+seed)})
			if res.Verdict != VerdictFound || res.LimitedBy != CauseLatency || res.KneeRPS == nil {
				t.Fatalf("verdict %s limited by %q, want found, latency\n%s", res.Verdict, res.LimitedBy, dump(res))
			}
			t.Logf("knee %.1f/s; the figure: within %v up to %.1f/s over a whole step, beyond it from %.1f/s in any part", *res.KneeRPS, slo, low, high)
			if k := *res.KneeRPS; k < low*(1-delta)/(1+p) || k >= high {
				t.Errorf("knee %.1f/s outside [%.1f, %.1f)\n%s", k, low*(1-delta)/(1+p), high, dump(res))
			}
		})
	}
}

// TestSearchBracketPrecision: the reported bracket closes within the
// precision asked, for several precisions and factors.
func TestSearchBracketPrecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		precision, factor float64
	}{{0.05, 2}, {0.02, 2}, {0.1, 3}, {0.01, 1.5}} {
		t.Run(fmt.Sprintf("precision %v factor %v", tc.precision, tc.factor), func(t *testing.T) {
			t.Parallel()
			o := Options{Objective: p99(t, "100ms"), StartRate: 100, MaxRate: 100000, Precision: tc.precision, Factor: tc.factor}
			res, _, _ := drive(t, o, &ddc{c: 50, service: 20 * time.Millisecond})
			if res.Verdict != VerdictFound || *res.KneeHighRPS > *res.KneeRPS*(1+tc.precision)+1e-9 || *res.KneeHighRPS <= *res.KneeRPS {
				t.Errorf("precision %v factor %v: %s [%v, %v]", tc.precision, tc.factor, res.Verdict, *res.KneeRPS, *res.KneeHighRPS)
			}
			if k := *res.KneeRPS; math.Abs(k-2500)/2500 > tc.precision+0.02 {
				t.Errorf("precision %v: knee %v, want near 2500", tc.precision, k)
			}
		})
	}
}

// TestSearchOutcomes: every way a search ends.
func TestSearchOutcomes(t *testing.T) {
	t.Parallel()
	fast := 10 * time.Millisecond
	for _, tc := range []struct {
		name     string
		o        func(Options) Options
		api      func(rate float64, i int) (time.Duration, time.Duration, bool, bool)
		verdict  Verdict
		cause    Cause
		knee     func(float64) bool // nil: no knee
		lastStep StepVerdict
	}{
		{name: "errors above 800/s", api: func(rate float64, i int) (time.Duration, time.Duration, bool, bool) {
			return 0, fast, rate > 800 && i%20 == 0, false
		}, verdict: VerdictFound, cause: CauseErrors, knee: func(k float64) bool { return k <= 800 && k >= 800/1.05 }, lastStep: StepPass},
		{name: "never fails: max rate", o: func(o Options) Options { o.MaxRate = 3000; return o }, api: func(float64, int) (time.Duration, time.Duration, bool, bool) {
			return 0, fast, false, false
		}, verdict: VerdictFound, cause: causeMaxRate, knee: func(k float64) bool { return k == 3000 }, lastStep: StepPass},
		{name: "start rate fails", api: func(float64, int) (time.Duration, time.Duration, bool, bool) {
			return 0, time.Second, false, false
		}, verdict: VerdictNotFound, cause: CauseLatency, lastStep: StepFail},
		{name: "generator tops out at 1000/s", api: func(rate float64, i int) (time.Duration, time.Duration, bool, bool) {
			if rate <= 1000 {
				return 0, fast, false, false
			}
			// It sends at 1000/s: request i goes out at i/1000 s.
			late := time.Duration(float64(i)*(1/1000.0-1/rate)*1e9) * time.Nanosecond
			return late, fast, false, false
		}, verdict: VerdictFound, cause: causeClient, knee: func(k float64) bool { return k <= 1000 && k >= 1000/1.05 }, lastStep: StepPass},
		{name: "generator tops out below the start rate", o: func(o Options) Options { o.StartRate = 2000; return o }, api: func(rate float64, i int) (time.Duration, time.Duration, bool, bool) {
			late := time.Duration(float64(i)*(1/1000.0-1/rate)*1e9) * time.Nanosecond
			return late, fast, false, false
		}, verdict: VerdictClient, cause: causeClient, lastStep: StepClient},
		{name: "429 above 600/s: limits, never capacity", api: func(rate float64, i int) (time.Duration, time.Duration, bool, bool) {
			refused := rate > 600 && i%100 == 0
			return 0, fast, refused, refused
		}, verdict: VerdictInconclusive, cause: causeLimits, knee: func(k float64) bool { return k <= 600 }, lastStep: StepLimits},
		{name: "start rate undecided at its longest", o: func(o Options) Options { o.StartRate = 20; return o }, api: func(float64, int) (time.Duration, time.Duration, bool, bool) {
			return 0, fast, false, false // 20/s for 15 s: too few requests to bound a p99
		}, verdict: VerdictInconclusive, cause: CauseLatency, lastStep: StepUndecided},
		{name: "out of steps", o: func(o Options) Options { o.MaxSteps = 3; return o }, api: func(float64, int) (time.Duration, time.Duration, bool, bool) {
			return 0, fast, false, false
		}, verdict: VerdictInconclusive, cause: CauseNone, knee: func(k float64) bool { return k == 400 }, lastStep: StepPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Options{Objective: p99(t, "100ms"), StartRate: 100, MaxRate: 100000}
			if tc.o != nil {
				o = tc.o(o)
			}
			res, _, _ := drive(t, o, &byRate{f: tc.api})
			if res.Verdict != tc.verdict || res.LimitedBy != tc.cause {
				t.Errorf("verdict %s limited by %q, want %s, %q\n%s", res.Verdict, res.LimitedBy, tc.verdict, tc.cause, dump(res))
			}
			switch {
			case tc.knee == nil && res.KneeRPS != nil:
				t.Errorf("knee %v, want none", *res.KneeRPS)
			case tc.knee != nil && (res.KneeRPS == nil || !tc.knee(*res.KneeRPS)):
				t.Errorf("knee %v not as wanted\n%s", res.KneeRPS, dump(res))
			}
			if last := res.Steps[len(res.Steps)-1]; last.Verdict != tc.lastStep {
				t.Errorf("last step %s, want %s", last.Verdict, tc.lastStep)
			}
		})
	}
}

// TestSearchLengthensUndecidedSteps: an undecided step is continued
// without a warm-up until decided or MaxStep, and recorded once.
func TestSearchLengthensUndecidedSteps(t *testing.T) {
	t.Parallel()
	// At 60/s, 5 s hold 300 requests: too few to bound a p99 from above
	// (367 are needed); 10 s decide it.
	o := Options{Objective: p99(t, "100ms"), StartRate: 60, MaxRate: 60}
	s, err := NewSearch(o)
	if err != nil {
		t.Fatal(err)
	}
	step, _ := s.Next()
	st := synth(60, step.Duration, fixed(time.Millisecond))
	r, _ := s.Record(st)
	if r.Verdict != StepUndecided {
		t.Fatalf("first part: %s, want undecided", r.Verdict)
	}
	next, ok := s.Next()
	if !ok || !next.Continue || next.Warmup != 0 || next.Rate != 60 || next.Index != 0 {
		t.Fatalf("next %+v, want step 0 continued", next)
	}
	res, _, _ := drive(t, o, &byRate{f: func(float64, int) (time.Duration, time.Duration, bool, bool) {
		return 0, time.Millisecond, false, false
	}})
	if len(res.Steps) != 2 || res.Steps[0].Lengthened != 1 || res.Steps[0].DurationMS != 10000 || res.Steps[0].Verdict != StepPass {
		t.Errorf("steps %s, want the first lengthened once to 10 s and passed, then re-measured", dump(res))
	}
}

// TestSearchHostUndecided: a step undecided on latency is lengthened
// first, host delay or not (more samples may settle it); undecided at its
// longest only by what the host's delay could add, it is the generator's
// (client), and undecided by more it stays undecided.
func TestSearchHostUndecided(t *testing.T) {
	t.Parallel()
	// 1 % at 95 ms and 1 % at 150 ms: the p99 lies between them however
	// many samples, its bounds 95 ms and 150 ms.
	atObjective := func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
		switch i % 100 {
		case 0:
			return 0, 150 * time.Millisecond, false, false
		case 1:
			return 0, 95 * time.Millisecond, false, false
		}
		return 0, 10 * time.Millisecond, false, false
	}
	for _, tc := range []struct {
		name  string
		waits []HostWait // per part; the two parts' 2000 answers have 20 that miss the objective
		want  StepVerdict
	}{
		{"no host delay", nil, StepUndecided},
		{"20 ms waits as often as answers missed: the upper bound 150 ms is beyond twice it", []HostWait{{AtLeastMS: 20, Count: 2}}, StepUndecided},
		{"30 ms waits as often as answers missed: the upper bound is within twice it", []HostWait{{AtLeastMS: 30, Count: 2}}, StepClient},
		{"one 30 ms wait a part: too few to have delayed the 20 answers that missed", []HostWait{{AtLeastMS: 30, Count: 1}}, StepUndecided},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Options{Objective: p99(t, "100ms"), StartRate: 200, MaxRate: 200, Step: 5 * time.Second, MaxStep: 10 * time.Second}
			s, err := NewSearch(o)
			if err != nil {
				t.Fatal(err)
			}
			st := NewStats()
			var r StepResult
			for parts := 1; ; parts++ {
				step, ok := s.Next()
				if !ok {
					t.Fatal("the search ended before the step was judged")
				}
				part := synth(200, step.Duration, atObjective)
				part.HostWaits(tc.waits)
				st.Merge(part)
				if r, err = s.Record(st); err != nil {
					t.Fatal(err)
				}
				if next, ok := s.Next(); !ok || !next.Continue {
					if parts != 2 {
						t.Errorf("judged after %d parts, want 2 (lengthened once to MaxStep)", parts)
					}
					break
				}
			}
			if r.Verdict != tc.want {
				t.Errorf("verdict %s (%s), want %s: %+v", r.Verdict, r.LimitedBy, tc.want, r)
			}
		})
	}
}

func TestSearchRecordWithoutStep(t *testing.T) {
	t.Parallel()
	s, err := NewSearch(Options{Objective: p99(t, "100ms"), StartRate: 10, MaxRate: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(NewStats()); err == nil {
		t.Error("Record before Next: no error")
	}
	if res := s.Result(); res.Verdict != VerdictInconclusive {
		t.Errorf("before the end: %s", res.Verdict)
	}
}

func TestNewSearchRefuses(t *testing.T) {
	t.Parallel()
	obj := p99(t, "100ms")
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no objective", Options{StartRate: 1, MaxRate: 2}, "latency objective"},
		{"no start", Options{Objective: obj, MaxRate: 2}, "start rate 0"},
		{"max below start", Options{Objective: obj, StartRate: 10, MaxRate: 2}, "max rate 2: want a rate at or above the start rate 10"},
		{"factor 1", Options{Objective: obj, StartRate: 1, MaxRate: 2, Factor: 1}, "factor 1"},
		{"precision 1", Options{Objective: obj, StartRate: 1, MaxRate: 2, Precision: 1}, "precision 1"},
		{"max step below step", Options{Objective: obj, StartRate: 1, MaxRate: 2, Step: time.Second, MaxStep: time.Millisecond}, "max step"},
		{"too few sources", Options{Objective: obj, StartRate: 100, MaxRate: 2500, Limit: 240, Window: time.Minute, Sources: 3},
			"2500 requests per second need 1250 source addresses (each at most half its limit of 240 per 1m0s), but 3 are given"},
		// 1250 addresses over 3 shards: 417 each, and a shard has 3.
		{"too few sources a shard", Options{Objective: obj, StartRate: 100, MaxRate: 2500, Limit: 240, Window: time.Minute, Sources: 9, Shards: 3},
			"2500 requests per second over 3 shards need 417 source addresses a shard (each at most half its limit of 240 per 1m0s), but this shard is given 3"},
		{"negative shards", Options{Objective: obj, StartRate: 1, MaxRate: 2, Shards: -1}, "shards -1: want at least 1"},
		// A share other than half is said as one.
		{"too few sources at a share", Options{Objective: obj, StartRate: 100, MaxRate: 2500, Limit: 240, Window: time.Minute, Share: 0.25, Sources: 1},
			"2500 requests per second need 2500 source addresses (each at most 25% of its limit of 240 per 1m0s), but 1 is given"},
	} {
		_, err := NewSearch(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	_, err := NewSearch(Options{Objective: obj, StartRate: 100, MaxRate: 2500, Limit: 240, Window: time.Minute, Sources: 3})
	var few *TooFewSourcesError
	if !errors.As(err, &few) || few.Need != 1250 || few.Have != 3 {
		t.Errorf("%#v, want a *TooFewSourcesError", err)
	}
}

// TestSearchPlansSources: every step is spread so that no address sends
// above its share of the limit.
func TestSearchPlansSources(t *testing.T) {
	t.Parallel()
	o := Options{Objective: p99(t, "100ms"), StartRate: 100, MaxRate: 10000, Limit: 240, Window: time.Minute}
	res, _, _ := drive(t, o, &ddc{c: 50, service: 20 * time.Millisecond})
	for _, st := range res.Steps {
		if st.Sources != SourcesNeeded(st.OfferedRPS, 240, time.Minute, defaultShare) || st.OfferedRPS/float64(st.Sources) > 2+1e-9 {
			t.Errorf("step at %v/s over %d sources", st.OfferedRPS, st.Sources)
		}
	}
}

// TestSearchPlansShardedSources: a sharded step is spread over a multiple
// of the shards, the fewest that leave no address above its share.
func TestSearchPlansShardedSources(t *testing.T) {
	t.Parallel()
	o := Options{Objective: p99(t, "100ms"), StartRate: 100, MaxRate: 10000, Limit: 240, Window: time.Minute, Shards: 3}
	res, _, _ := drive(t, o, &ddc{c: 50, service: 20 * time.Millisecond})
	for _, st := range res.Steps {
		need := SourcesNeeded(st.OfferedRPS, 240, time.Minute, defaultShare)
		if st.Sources%3 != 0 || st.Sources < need || st.Sources >= need+3 {
			t.Errorf("step at %v/s over %d sources: want the multiple of 3 at or above %d", st.OfferedRPS, st.Sources, need)
		}
	}
}

// dump is res as JSON, for failure messages.
func dump(res Result) string {
	b, _ := json.MarshalIndent(res.Steps, "", " ")
	return string(b)
}
