package capacity

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// peakBand is how far the USL's peak may lie from a worker pool's
// capacity c/S: ±10 %. The USL cannot bend as sharply as a pool of fixed
// service times (throughput exactly N/S up to c in flight, then flat), so
// its peak lies a few percent over c/S when the steps crowd the knee (up
// to +5 % against the pools below); with random service times a step's
// throughput is measured a little short of its rate when its last
// responses straggle, and the peak follows it down (−3 % at 5 s steps,
// down to −10 % at 1 s steps). Held to X at every step's concurrency,
// backlog and all, the same steps put the peaks 9 to 27 % over c/S; the
// passing steps alone bound no peak from a low start rate.
const peakBand = 0.10

// pool is a worker pool of c workers, first come first served, each
// request held for a service time from draw, with room for queue
// requests to wait (0: unbounded); a request that finds it full is
// answered at once as a failure (503 queue_full), as the reference
// target's pool answers. Arrivals are the search's schedule (D/G/c/K).
type pool struct {
	c, queue int
	draw     func() time.Duration
	free     []time.Time // when each worker is next free
	inSystem timeHeap    // when each request admitted and not yet answered is answered
}

func (p *pool) reset(float64) { p.free, p.inSystem = make([]time.Time, p.c), nil }

func (p *pool) serve(_ int, at time.Time) (time.Duration, time.Duration, bool, bool) {
	for len(p.inSystem) > 0 && !p.inSystem[0].After(at) {
		heap.Pop(&p.inSystem)
	}
	if p.queue > 0 && len(p.inSystem) >= p.c+p.queue {
		return 0, 0, true, false
	}
	w := 0
	for i := range p.free {
		if p.free[i].Before(p.free[w]) {
			w = i
		}
	}
	done := maxTime(at, p.free[w]).Add(p.draw())
	p.free[w] = done
	heap.Push(&p.inSystem, done)
	return 0, done.Sub(at), false, false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// timeHeap is a min-heap of instants.
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// constant draws service times that are always d.
func constant(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// exponential draws service times of mean mean, from seed.
func exponential(mean time.Duration, seed uint64) func() time.Duration {
	r := rand.New(rand.NewPCG(seed, 2))
	return func() time.Duration { return time.Duration(r.ExpFloat64() * float64(mean)) }
}

// uniform draws service times uniform in [lo, hi], from seed.
func uniform(lo, hi time.Duration, seed uint64) func() time.Duration {
	r := rand.New(rand.NewPCG(seed, 3))
	return func() time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
}

// TestUSLPeakHeldToPools: searches against worker pools of known capacity
// c/S, in compressed time, each from two start rates: the USL fitted over
// their steps, the ones past the knee included, puts the peak within
// peakBand of c/S, bounded by the steps.
func TestUSLPeakHeldToPools(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		c, queue int
		service  time.Duration // mean
		draw     func() time.Duration
		slo      string
	}{
		{"the embedded pool: 10 × 20 ms", 10, 0, 20 * ms, constant(20 * ms), "100ms"},
		{"10 × 20 ms, room for 50: refusals past the knee", 10, 50, 20 * ms, constant(20 * ms), "200ms"},
		{"50 × 20 ms", 50, 0, 20 * ms, constant(20 * ms), "100ms"},
		{"200 × 50 ms", 200, 0, 50 * ms, constant(50 * ms), "250ms"},
		{"10 × exponential 20 ms, room for 100", 10, 100, 20 * ms, exponential(20*ms, 1), "200ms"},
		{"10 × uniform 5-35 ms", 10, 0, 20 * ms, uniform(5*ms, 35*ms, 1), "100ms"},
	} {
		capacity := float64(tc.c) / tc.service.Seconds()
		for _, start := range []float64{0.2, 0.6} {
			t.Run(fmt.Sprintf("%s from %.0f/s", tc.name, start*capacity), func(t *testing.T) {
				t.Parallel()
				o := Options{Objective: p99(t, tc.slo), StartRate: start * capacity, MaxRate: 20 * capacity, Resamples: 300}
				res, _, _ := drive(t, o, &pool{c: tc.c, queue: tc.queue, draw: tc.draw})
				holdToCapacity(t, res, capacity)
			})
		}
	}
}

// holdToCapacity holds a search's model to a pool's capacity: fitted to
// the steps past the knee as well as the passing ones, with a peak the
// steps bound within peakBand of capacity.
func holdToCapacity(t *testing.T, res Result, capacity float64) {
	t.Helper()
	u := res.USL
	if u == nil {
		t.Fatalf("no model over %d steps\n%s", len(res.Steps), dump(res))
	}
	passed := 0
	for _, s := range res.Steps {
		if s.Verdict == StepPass {
			passed++
		}
	}
	t.Logf("peak %s [%s, %s]/s at %s (%s), capacity %.0f/s; %d steps fitted, %d passed, %d behind; measured at most %.1f/s",
		fig(u.PeakRPS), fig(u.PeakLowRPS), fig(u.PeakHighRPS), fig(u.PeakConcurrency), u.PeakStatus, capacity, u.Points, passed, u.BehindPoints, u.MaxThroughputRPS)
	if u.Points <= passed || u.BehindPoints == 0 {
		t.Errorf("%d steps fitted, %d of them behind, of %d passing: want the steps past the knee fitted too\n%s", u.Points, u.BehindPoints, passed, dump(res))
	}
	if u.PeakRPS == nil || u.PeakStatus == PeakUnbounded {
		t.Fatalf("peak unbounded (%s), want it within %.0f %% of %.0f/s", fmtReason(u.PeakReason), 100*peakBand, capacity)
	}
	if d := *u.PeakRPS/capacity - 1; math.Abs(d) > peakBand {
		t.Errorf("peak %.1f/s, %+.1f %% off the capacity %.0f/s: want within ±%.0f %%\n%s", *u.PeakRPS, 100*d, capacity, 100*peakBand, dump(res))
	}
}

// mmcK returns the steady state of the M/M/c/K queue (Poisson arrivals at
// lambda, c servers of rate mu each, room for k in the system, refused
// beyond) as the step a search would judge of it over dur: the
// throughput of the requests served, Little's concurrency L, and its
// refusals answered at once.
func mmcK(lambda, mu float64, c, k int, dur time.Duration) StepResult {
	a := lambda / mu
	p := make([]float64, k+1)
	p[0] = 1
	for n := 1; n <= k; n++ {
		p[n] = p[n-1] * a / float64(min(n, c))
	}
	var sum, l float64
	for n, v := range p {
		sum += v
		l += float64(n) * v
	}
	l /= sum
	block := p[k] / sum
	x := lambda * (1 - block)
	n := int(lambda * dur.Seconds())
	verdict := StepPass
	if block > defaultErrorBudget {
		verdict = StepFail
	}
	return StepResult{OfferedRPS: lambda, AchievedRPS: lambda, ThroughputRPS: x, Requests: n, Errors: int(block * float64(n)),
		ErrorRate: block, MeanLatencyMS: clock.Millis(1000 * l / lambda), Concurrency: l, Verdict: verdict}
}

// TestUSLPeakOfMMcK: the steps of a search against the M/M/c/K queue in
// its steady state, computed rather than simulated (the rates a search
// visits: a geometric ramp past the capacity, then bisection towards
// it): the peak of the USL fitted over them lies within peakBand of c·μ.
// Past the capacity the queue is full and refuses the excess, so the
// steps there are short of their rate by their refusals.
func TestUSLPeakOfMMcK(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c, room int
		mu      float64
	}{{10, 50, 50}, {10, 1000, 50}, {50, 200, 50}, {4, 20, 25}} {
		capacity := float64(tc.c) * tc.mu
		t.Run(fmt.Sprintf("c %d, room %d, capacity %.0f/s", tc.c, tc.room, capacity), func(t *testing.T) {
			t.Parallel()
			var steps []StepResult
			for _, share := range []float64{0.2, 0.4, 0.8, 1.6, 1.13, 0.95, 1.04, 0.99, 1.01, 0.99} {
				steps = append(steps, mmcK(share*capacity, tc.mu, tc.c, tc.c+tc.room, 5*time.Second))
			}
			res := Result{Steps: steps, USL: modelOf(steps, Options{Resamples: 300, Seed: 1, Confidence: 0.95})}
			holdToCapacity(t, res, capacity)
		})
	}
}

// TestModelLeavesOut: the model is fitted to every step that measured the
// API's throughput at its concurrency, and to no other: the generator's
// steps, steps a 429 answered, and a step that caught up on a backlog it
// inherited (its throughput above its send rate) are left out, and
// counted; a step short of its send rate is one the API fell behind in.
func TestModelLeavesOut(t *testing.T) {
	t.Parallel()
	var steps []StepResult
	for _, share := range []float64{0.2, 0.4, 0.8, 1.6, 1.13, 0.95, 1.04} {
		steps = append(steps, mmcK(share*500, 50, 10, 60, 5*time.Second))
	}
	base := modelOf(steps, Options{Resamples: 100, Seed: 1, Confidence: 0.95})
	client, limits, refused, caught := steps[2], steps[2], steps[2], steps[5]
	client.Verdict = StepClient
	limits.Verdict, limits.Refused = StepLimits, 3
	refused.Verdict, refused.Refused = StepFail, 1
	caught.ThroughputRPS, caught.Concurrency = 1.2*caught.AchievedRPS, 130 // 570/s from a 500/s pool
	u := modelOf(append(slices.Clone(steps), client, limits, refused, caught), Options{Resamples: 100, Seed: 1, Confidence: 0.95})
	if u.Points != base.Points || u.ExcludedSteps != 4 || u.PeakRPS == nil || *u.PeakRPS != *base.PeakRPS {
		t.Errorf("with 4 steps to leave out: %d fitted, %d left out, peak %s; want %d, 4, %s", u.Points, u.ExcludedSteps, fig(u.PeakRPS), base.Points, fig(base.PeakRPS))
	}
	behind := 0
	for _, s := range steps {
		if s.FellBehind() != (s.ThroughputRPS < 0.995*s.AchievedRPS) {
			t.Errorf("step at %.0f/s, throughput %.1f/s: fell behind %v", s.AchievedRPS, s.ThroughputRPS, s.FellBehind())
		}
		behind += map[bool]int{true: 1}[s.FellBehind()]
	}
	if behind == 0 || base.BehindPoints != behind {
		t.Errorf("%d steps fell behind, the model counts %d", behind, base.BehindPoints)
	}
}
