package runner

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/internal/keep"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// serviceMeter is a pool's Sleep that measures the service times the
// pool really gave (a timer on a loaded host overshoots): the truth the
// knee is held to is the pool's real capacity, N over their mean.
type serviceMeter struct {
	mu  sync.Mutex
	log []service
}

// service is one service time a worker gave, and when it began.
type service struct {
	at time.Time
	d  time.Duration
}

func (m *serviceMeter) sleep(ctx context.Context, d time.Duration) error {
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	m.mu.Lock()
	m.log = append(m.log, service{start, time.Since(start)})
	m.mu.Unlock()
	return nil
}

// mean is the mean service time of the whole run (0 before any).
func (m *serviceMeter) mean() time.Duration { return m.meanBetween(time.Time{}, time.Now()) }

// meanBetween is the mean service time of the services that began from
// from until to (0 when none did).
func (m *serviceMeter) meanBetween(from, to time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int
	var busy time.Duration
	for _, s := range m.log {
		if !s.at.Before(from) && s.at.Before(to) {
			n, busy = n+1, busy+s.d
		}
	}
	if n == 0 {
		return 0
	}
	return busy / time.Duration(n)
}

// slowedPool says why the search's failed steps that needs picks failed
// (a rate another step passed, or one below the pool's capacity over the
// run), when the meter proves it for each: during every such step's
// segments the pool's workers, slowed by the host, served so slowly
// (their mean service then) that explains says the step's rate fails on
// queueing truth. It is "" when a failure is not so explained, or none
// was picked.
func slowedPool(job *Job, meter *serviceMeter, needs func(capacity.StepResult) bool, explains func(rate float64, mean time.Duration) bool) string {
	res := job.Result()
	var said []string
	for k, f := range res.Steps {
		if f.Verdict != capacity.StepFail || !needs(f) {
			continue
		}
		var from, to time.Time
		for _, g := range job.segments {
			if g.Step == k {
				if from.IsZero() || g.Start.Before(from) {
					from = g.Start
				}
				if end := g.Start.Add((g.WarmupMS + g.DurationMS).Duration()); end.After(to) {
					to = end
				}
			}
		}
		mean := meter.meanBetween(from, to)
		if mean == 0 || !explains(f.OfferedRPS, mean) {
			return ""
		}
		said = append(said, fmt.Sprintf("step %d failed %.1f/s while the pool's workers gave a mean service of %v (%.1f/s from 10)", k, f.OfferedRPS, mean.Round(10*time.Microsecond), 10/mean.Seconds()))
	}
	return strings.Join(said, "; ")
}

// target starts the reference target with cfg on loopback.
func target(t *testing.T, cfg refserver.Config) string {
	t.Helper()
	srv, err := refserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := refserver.Listen(srv, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.URL
}

// search runs a job against url into a temporary folder.
func search(t *testing.T, url string, cfg Config) (*Job, *attack.Run) {
	t.Helper()
	job, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	run, err := attack.Execute(context.Background(), job, attack.Options{Command: "capacity", Target: url, Out: keep.Dir(t), Folder: "capacity"})
	if err != nil {
		t.Fatal(err)
	}
	return job, run
}

// poolSearch is the search of the tests against a pool of 10 workers ×
// 20 ms (500/s) with p99<=100ms in compressed time (1 s window).
func poolSearch(t *testing.T) Config {
	const maxRate = 2000
	n := capacity.SourcesNeeded(maxRate, method.RESTLimit, time.Second, 0)
	srcs, err := capacity.LoopbackSources(n)
	if err != nil {
		t.Fatal(err)
	}
	slo, _ := capacity.ParseSLO("p99<=100ms")
	return Config{Surface: method.REST, Sources: srcs, Timeout: 5 * time.Second,
		Search: capacity.Options{Objective: capacity.Objective{SLO: slo, ErrorBudget: 0.01}, StartRate: 300, MaxRate: maxRate,
			Step: 1500 * time.Millisecond, Warmup: 500 * time.Millisecond, MaxStep: 3 * time.Second,
			Limit: method.RESTLimit, Window: time.Second, Seed: 1}}
}

// pool500 is the tests' pool of known capacity: 10 workers of 20 ms, 500/s.
var pool500 = refserver.Pool{Workers: 10, ServiceMin: 20 * time.Millisecond, ServiceMax: 20 * time.Millisecond, Queue: 5000}

// poolConfig is the reference target of the tests' searches: a window of
// 1 s in front of pool.
func poolConfig(pool refserver.Pool) refserver.Config {
	cfg := refserver.DefaultConfig()
	cfg.Window = time.Second
	cfg.Pool = pool
	return cfg
}

// searchPool runs the tests' search (poolSearch) against the reference
// target's pool, logs its steps and returns what the pool really gave
// (meter), the search, its run and the longest stall of this process
// meanwhile.
func searchPool(t *testing.T, pool refserver.Pool) (*serviceMeter, Config, *Job, *attack.Run, time.Duration) {
	t.Helper()
	meter := &serviceMeter{}
	cfg := poolConfig(pool)
	cfg.Sleep = meter.sleep
	url := target(t, cfg)
	c := poolSearch(t)
	stall := refserver.NewStallMeter()
	began := time.Now()
	job, run := search(t, url, c)
	worst := stall.Stop(began)
	for _, s := range job.Result().Steps {
		t.Logf("%-9s %7.1f/s  achieved %7.1f  p99 %6.1fms (uncorrected %6.1fms)  late p99 %5.1fms  host delay %5.1fms  n=%d  %s %s",
			s.Phase, s.OfferedRPS, s.AchievedRPS, s.QuantileMS, s.UncorrectedQuantileMS, s.LatenessP99MS, s.HostDelayMS, s.Requests, s.Verdict, s.LimitedBy)
	}
	return meter, c, job, run, worst
}

// TestKneeOfPool holds the found knee to queueing truth. With evenly
// spaced arrivals (D/D/c) a rate λ below the pool's real capacity μ keeps
// latency at the service time S, so every rate below μ·(1−δ) passes
// (δ = 5 %: the arrival jitter near saturation); above μ the queue grows
// as (λ−μ)·t from the segment's start, so a step passes only while fewer
// than 1 % of its judged requests (the last 1 % of its length L) see
// more than the objective: λ ≤ μ·(1 + (SLO−S)/(L − T/100)), largest for
// the shortest segment (a lengthening, L = T, no warm-up). The bracket
// closes to the precision p, so low ≥ μ_real·(1−δ)/(1+p), and low ≤
// μ_nominal·(1 + (SLO−S)/(0.99·T)).
func TestKneeOfPool(t *testing.T) {
	t.Parallel()
	meter, c, job, run, worst := searchPool(t, pool500)
	res := job.Result()
	const S, SLO, p, delta = 0.020, 0.100, 0.05, 0.05
	muReal := 10 / meter.mean().Seconds()
	T := c.Search.Step.Seconds()
	low, high := muReal*(1-delta)/(1+p), 500*(1+(SLO-S)/(0.99*T))
	// A host that stalled this process, or starved its generator, only
	// adds latency: no rate above high passes on any host, and a client
	// verdict must show the schedule missed. The lower bound holds only
	// where the host kept out of the latencies.
	if res.KneeRPS != nil && *res.KneeRPS > high {
		t.Errorf("knee %.1f/s above %.1f/s, which no host can reach (nominal capacity 500/s)", *res.KneeRPS, high)
	}
	if res.Verdict == capacity.VerdictClient {
		if last := res.Steps[len(res.Steps)-1]; last.AchievedRPS >= 0.95*last.OfferedRPS && last.LatenessP99MS <= 10 && last.HostDelayMS == 0 {
			t.Errorf("verdict client but the last step went out on schedule and no host delay was measured: %+v", last)
		}
	}
	hostBound := worst > time.Duration((SLO-S)/2*float64(time.Second)) || res.LimitedBy == "client"
	switch {
	case hostBound:
		t.Logf("this process stalled for %v, limited by %q: the host bounds the search, the lower bound %.1f/s is not held", worst, res.LimitedBy, low)
	case res.Verdict == capacity.VerdictInconclusive && contradicted(res) || res.Verdict == capacity.VerdictNotFound:
		// A rate another step passed, or one below the pool's capacity
		// over the run, failed: D/D/10 fails a rate only at or past the
		// capacity the pool had then, less δ.
		needs := func(f capacity.StepResult) bool {
			return f.OfferedRPS < muReal*(1-delta) || passedAtOrAbove(res, f.OfferedRPS)
		}
		if why := slowedPool(job, meter, needs, func(rate float64, mean time.Duration) bool { return rate >= 10/mean.Seconds()*(1-delta) }); why != "" {
			t.Logf("verdict %s: %s", res.Verdict, why)
		} else {
			t.Errorf("verdict %s (limited by %s): a step failed at a rate the pool sustains, and its workers kept up during it", res.Verdict, res.LimitedBy)
		}
	case res.Verdict != capacity.VerdictFound || res.KneeRPS == nil:
		t.Errorf("verdict %s (limited by %s), want found", res.Verdict, res.LimitedBy)
	case *res.KneeRPS < low:
		// The bound is the pool's capacity over the whole run; a step
		// below it failed where the pool was slower during that step.
		needs := func(f capacity.StepResult) bool { return f.OfferedRPS < muReal*(1-delta) }
		if why := slowedPool(job, meter, needs, func(rate float64, mean time.Duration) bool { return rate >= 10/mean.Seconds()*(1-delta) }); why != "" {
			t.Logf("knee %.1f/s below %.1f/s (real capacity over the run %.1f/s): %s", *res.KneeRPS, low, muReal, why)
		} else {
			t.Errorf("knee %.1f/s below %.1f/s (real capacity %.1f/s, mean service %v)", *res.KneeRPS, low, muReal, meter.mean())
		}
	case res.LimitedBy != capacity.CauseLatency && res.LimitedBy != capacity.CauseErrors:
		t.Errorf("limited by %s, want latency or errors", res.LimitedBy)
	}
	_, again, err := Replay(run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, res) {
		t.Errorf("Replay differs from the live search:\nlive   %+v\nreplay %+v", res, again)
	}
}

// TestFreezeShowsInIntendedTime runs one step against a target that
// freezes for 1 s at the end of every 7 s, from one source with one
// worker (a generator that waits for each answer, as closed-loop tools
// do), at 150/s, 6.7 ms a request, which a busy host's worker keeps up
// with (at 250/s, 4 ms a request, a worker beside the suite and two CPU
// hogs fell 270 ms behind and the step failed before the freeze came):
// during the freeze nothing goes out, so the latency from the actual
// send sees the freeze in one request, and hides it, while the latency
// from the intended send time charges it to every request due in it.
func TestFreezeShowsInIntendedTime(t *testing.T) {
	t.Parallel()
	cfg := refserver.DefaultConfig()
	cfg.Window = time.Second
	cfg.Faults = refserver.Faults{FreezeFor: time.Second, FreezeEvery: 7 * time.Second}
	// The target's clock starts at its first request, the step's first,
	// so the first freeze is 6 s to 7 s into the step however long the
	// setup took on a busy host: 5.5 s of judged answers before it (825),
	// enough for both bounds of the p99 (its upper bound needs about 600,
	// or it is the one answer that waited out the freeze).
	var (
		once  sync.Once
		start time.Time
	)
	cfg.Clock = func() time.Duration {
		once.Do(func() { start = time.Now() })
		return time.Since(start)
	}
	url := target(t, cfg)
	slo, _ := capacity.ParseSLO("p99<=100ms")
	c := Config{Surface: method.REST, Sources: []string{"127.0.0.1"}, MaxWorkers: 1,
		Search: capacity.Options{Window: time.Second, ThroughLimit: true, Objective: capacity.Objective{SLO: slo, ErrorBudget: 0.01}, StartRate: 150, MaxRate: 150,
			Step: 7 * time.Second, Warmup: 500 * time.Millisecond, MaxStep: 7 * time.Second, MaxSteps: 1, MaxLateness: -1}}
	job, _ := search(t, url, c)
	res := job.Result()
	if len(res.Steps) != 1 {
		t.Fatalf("%d steps, want 1", len(res.Steps))
	}
	s := res.Steps[0]
	// A bound the step's interval does not have (a step cut after few
	// answers) is nil.
	bound := func(v *clock.Millis) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", float64(*v))
	}
	t.Logf("p99 %.1fms [%s, %s]  uncorrected %.1fms [%s, %s]  n=%d late p99 %.1fms  %s",
		s.QuantileMS, bound(s.QuantileLowMS), bound(s.QuantileHighMS), s.UncorrectedQuantileMS, bound(s.UncorrectedLowMS), bound(s.UncorrectedHighMS), s.Requests, s.LatenessP99MS, s.Verdict)
	// The answers after the freeze, each due in it, prove the step failed
	// and cut it: the hits the one worker still owed from the freeze are
	// never sent. The p99 from the intended time is most of the freeze's
	// second. The verdict is a fail, or, the worker having missed its
	// schedule for the whole freeze, client, with the freeze in the
	// lateness it names.
	if s.QuantileLowMS == nil || *s.QuantileLowMS < 500 ||
		s.Verdict != capacity.StepFail && (s.Verdict != capacity.StepClient || s.LatenessP99MS < 500) {
		t.Errorf("intended-time step: verdict %s, p99 low bound %v ms, lateness p99 %v ms; want the freeze (≥ 500 ms) in the p99, and a fail, or client late by the freeze", s.Verdict, s.QuantileLowMS, s.LatenessP99MS)
	}
	if s.UncorrectedHighMS == nil || float64(*s.UncorrectedHighMS) > slo.Max.Seconds()*1000 {
		t.Errorf("uncorrected p99 high bound %v ms: want within the objective, the freeze hidden", s.UncorrectedHighMS)
	}
}

// TestShardsJudgeAsOne runs a short search as two shard jobs in this
// process, each from addresses of its own, meeting in one rendezvous: both
// come to the same result, each sent half of every step, and the two run
// folders together replay to that result (one alone is refused).
func TestShardsJudgeAsOne(t *testing.T) {
	t.Parallel()
	url := target(t, poolConfig(pool500))
	c := poolSearch(t)
	c.Search.StartRate, c.Search.MaxRate, c.Search.Step, c.Search.Warmup = 400, 400, time.Second, 200*time.Millisecond
	c.Search.MaxLateness = -1 // the judgement of the host is not under test
	rv, at := t.TempDir(), time.Now().Add(300*time.Millisecond)
	jobs, runs := make([]*Job, 2), make([]*attack.Run, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		ci := c
		ci.Sources = []string{[]string{"127.0.1.1", "127.0.2.1"}[i], []string{"127.0.1.2", "127.0.2.2"}[i]}
		ci.Shard, ci.Rendezvous, ci.StartAt = attack.Shard{I: i, N: 2}, rv, at
		job, err := New(ci)
		if err != nil {
			t.Fatal(err)
		}
		jobs[i] = job
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i], errs[i] = attack.Execute(context.Background(), job, attack.Options{Command: "capacity", Target: url, Out: t.TempDir(), Folder: "capacity", StartAt: at})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	res := jobs[0].Result()
	if !reflect.DeepEqual(res, jobs[1].Result()) || len(res.Steps) == 0 {
		t.Fatalf("the shards disagree or judged nothing:\n0: %+v\n1: %+v", res, jobs[1].Result())
	}
	// 400 a second of the judged part: on a busy host the p99 of a pool of
	// 500/s at 400/s can near the objective, and the search lengthens the
	// step (to 2 s, 800 requests, in a whole-suite run).
	for k, st := range res.Steps {
		want := 400 * float64(st.DurationMS) / 1000
		if st.Sources != 4 || float64(st.Requests) < want*0.975 || float64(st.Requests) > want*1.025 {
			t.Errorf("step %d: %d requests from %d sources in %v ms (lengthened %d times), want %.0f from 4", k, st.Requests, st.Sources, st.DurationMS, st.Lengthened, want)
		}
	}
	for i, job := range jobs {
		for k, g := range job.segments {
			if g.Shards != 2 || g.ShardIndex != i || g.PerSourceRPS != 100 || !g.Start.Equal(jobs[0].segments[k].Start) {
				t.Errorf("shard %d segment %+v: want shard %d of 2 at 100/s a source, started with the others", i, g, i)
			}
		}
	}
	_, again, err := Replay(runs[1].Dir, runs[0].Dir)
	if err != nil || !reflect.DeepEqual(again, res) {
		t.Errorf("Replay of both shards: %v\nlive   %+v\nreplay %+v", err, res, again)
	}
	if _, _, err := Replay(runs[0].Dir); err == nil || !strings.Contains(err.Error(), "judge the run folders of all 2 shards together") {
		t.Errorf("Replay of one shard alone: %v", err)
	}
}

// TestOverloadedStepIsCut: a step three times the pool's capacity fails
// its objective within a fraction of its length (the queue grows by 1 000
// requests a second, so the p99 passes 100 ms in well under a second of
// judged load); the runner stops sending once no answer still to come can
// save the step, judges what was sent as the failure it is, and the
// archive replays to the same result. When the proof came, and so
// whether it could cut, is read from the run's own answers: replayed in
// the order they came back, the answer that proved the failure is the
// moment the runner could stop. Proved more than a second before the
// last hit went out, the step must have been cut there: hits of its
// schedule left unsent, and none due after the cut sent (a source behind
// its schedule does not send what it owes once stopped; what it had
// handed to Vegeta's workers still goes, and a hit it was sleeping the
// last 2 ms to). Proved only after, on a host that answered late,
// nothing was cut, every hit went out, and run.json says no cut.
func TestOverloadedStepIsCut(t *testing.T) {
	t.Parallel()
	pool := pool500
	pool.Queue = 100000
	url := target(t, poolConfig(pool))
	c := poolSearch(t)
	c.Search.StartRate, c.Search.MaxRate, c.Search.MaxSteps = 1500, 1500, 1
	c.Search.Step, c.Search.MaxStep = 4*time.Second, 4*time.Second
	job, run := search(t, url, c)
	res := job.Result()
	if len(res.Steps) != 1 || len(job.segments) != 1 {
		t.Fatalf("%d steps, %d segments, want 1 of each", len(res.Steps), len(job.segments))
	}
	seg, s := job.segments[0], res.Steps[0]
	planned := int(math.Round(float64(seg.DurationMS) / 1000 * seg.RateRPS))
	proof, lastSent, dueAfterCut := cutEvidence(t, run.Dir, &seg, c.Search)
	released := float64(clock.Ms(job.released[0]))
	t.Logf("cut at %v ms of %.0f; failure proved by an answer at %.0f ms, last hit handed out at %.0f ms (0: cut) and sent at %.0f ms; %d requests judged of %d planned; p99 %.1f ms; %s %s",
		seg.CutMS, seg.WarmupMS+seg.DurationMS, proof, released, lastSent, s.Requests, planned, s.QuantileMS, s.Verdict, s.LimitedBy)
	switch {
	case seg.CutMS > 0:
		if seg.CutMS <= seg.WarmupMS || float64(seg.CutMS) < proof-1 || s.Requests >= planned || dueAfterCut > 0 {
			t.Errorf("cut at %v ms: want after the warm-up (%v ms) and the proving answer (%.0f ms), with hits left unsent (%d judged of %d) and none due after the cut sent (%d)",
				seg.CutMS, seg.WarmupMS, proof, s.Requests, planned, dueAfterCut)
		}
	case released == 0 || proof < released-1000:
		// Only hits not yet handed to an attacker can be cut: a starved
		// host may send the ones it was handed seconds later.
		t.Errorf("no cut, though the failure was proved by an answer at %.0f ms and hits were handed out until %.0f ms", proof, released)
	case s.Requests != planned:
		t.Errorf("no cut, and %d requests judged of %d planned", s.Requests, planned)
	}
	if s.Verdict != capacity.StepFail && s.Verdict != capacity.StepClient {
		t.Errorf("verdict %s (%s), want fail, or client on a starved host", s.Verdict, s.LimitedBy)
	}
	if s.Verdict == capacity.StepFail && (s.QuantileLowMS == nil || *s.QuantileLowMS <= 100) {
		t.Errorf("failed with a p99 lower bound of %v ms, want beyond 100", s.QuantileLowMS)
	}
	if _, again, err := Replay(run.Dir); err != nil || !reflect.DeepEqual(again, res) {
		t.Errorf("Replay: %v\nlive   %+v\nreplay %+v", err, res, again)
	}
}

// cutEvidence reads segment seg's results in dir: the moment (ms after
// its start) of the answer that proved its failure, replayed through a
// cutter in the order the answers came back (+Inf if none did), the
// moment its last hit went out, and how many hits went out after its cut
// that were due more than the pacer's last sleep (2 ms, and 1 ms for the
// cut's own reading) after it.
func cutEvidence(t *testing.T, dir string, seg *archive.CapacitySegment, o capacity.Options) (proof, lastSent float64, dueAfterCut int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, archive.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src := sourceIndex(seg)
	var done []capacity.Sample
	dec := vegeta.NewDecoder(f)
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		l := archive.ParseLabel(r.Attack, r.URL)
		j, ok := src[l.Source]
		if l.Stream != seg.Stream || !ok {
			continue
		}
		ms := float64(clock.Ms(r.Timestamp.Sub(seg.Start)))
		lastSent = max(lastSent, ms)
		if seg.CutMS > 0 && ms > float64(seg.CutMS) && clock.Ms(seg.Due(j, r.Seq)) > seg.CutMS+3 {
			dueAfterCut++
		}
		if smp, judged := sampleOf(seg, j, &r, o.ThroughLimit); judged {
			done = append(done, smp)
		}
	}
	slices.SortFunc(done, func(a, b capacity.Sample) int { return a.Done.Compare(b.Done) })
	cut := newCutter(seg, o, false)
	for _, smp := range done {
		if cut.came(smp) {
			return float64(clock.Ms(smp.Done.Sub(seg.Start))), lastSent, dueAfterCut
		}
	}
	return math.Inf(1), lastSent, dueAfterCut
}

// contradicted reports whether a step of r failed at a rate another
// passed.
func contradicted(r capacity.Result) bool {
	_, _, ok := r.Contradiction()
	return ok
}

// passedAtOrAbove reports whether a step of r passed at rate or above.
func passedAtOrAbove(r capacity.Result, rate float64) bool {
	return slices.ContainsFunc(r.Steps, func(p capacity.StepResult) bool {
		return p.Verdict == capacity.StepPass && rate <= p.OfferedRPS
	})
}
