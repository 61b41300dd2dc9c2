package capacity

import (
	"errors"
	"fmt"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"math"
	"time"
)

// The phases of a search.
const (
	// phaseRamp: rates stepped up geometrically from the start rate.
	phaseRamp = "ramp"
	// phaseBisect: between the last passing and the first failing rate.
	phaseBisect = "bisect"
	// phaseRemeasure: the knee measured once more before it is reported.
	phaseRemeasure = "remeasure"
)

// Verdict is what a search concluded (a string in the JSON).
type Verdict string

// The verdicts of a search.
const (
	// VerdictFound: the knee was found (bracketed within the precision, or
	// the highest allowed rate passed) and held when re-measured.
	VerdictFound Verdict = "found"
	// VerdictNotFound: even the start rate failed.
	VerdictNotFound Verdict = "not-found"
	// VerdictClient: the generator could not keep a step's schedule.
	VerdictClient Verdict = "client"
	// VerdictInconclusive: the search could not decide: a 429 (limits), a
	// start rate left undecided, contradicting steps, or out of steps.
	VerdictInconclusive Verdict = "inconclusive"
)

// Verdicts are the verdicts a search can reach.
var Verdicts = []Verdict{VerdictFound, VerdictNotFound, VerdictClient, VerdictInconclusive}

// Options configure a [Search]. The zero values of the optional fields
// take the defaults documented on each; StartRate, MaxRate and Objective
// are required.
type Options struct {
	// Objective is the latency objective and error budget of every step.
	Objective Objective
	// Confidence of every interval; 0 means defaultConfidence.
	Confidence float64
	// StartRate is the first rate, requests per second.
	StartRate float64
	// MaxRate is the highest rate the search may offer.
	MaxRate float64
	// Factor multiplies the rate from one ramp step to the next; 0 means 2.
	Factor float64
	// Precision is how close (relatively) the last passing and the first
	// failing rate must be: high ≤ low·(1+Precision); 0 means 0.05.
	Precision float64
	// Step is the judged length of a step; 0 means 5 s.
	Step time.Duration
	// Warmup is the unjudged start of every step; 0 means 1 s, negative
	// none.
	Warmup time.Duration
	// MaxStep is the longest a step's judged part may be lengthened to
	// when undecided; 0 means 3·Step.
	MaxStep time.Duration
	// MaxSteps bounds the steps of the search (lengthenings not
	// counted); 0 means 30.
	MaxSteps int
	// MinAchieved and MaxLateness say when a step went out on schedule:
	// see criteria.
	MinAchieved float64
	// MaxLateness: see criteria.
	MaxLateness time.Duration
	// Limit is the surface's documented limit per Window and source
	// address; 0 means none to plan around (one address).
	Limit int
	// Window is the limit's window.
	Window time.Duration
	// Share is the share of its limit one address may send at; 0 means
	// defaultShare.
	Share float64
	// ThroughLimit measures the limiter itself from one address a shard:
	// a 429 is an answer, not a failure, and no rate is spread over
	// addresses to stay below Limit (which, with Window, is still the
	// surface's).
	ThroughLimit bool
	// Sources is how many source addresses the caller has (over all its
	// shards); 0 means as many as needed. With fewer than MaxRate needs,
	// [NewSearch] refuses with a [*TooFewSourcesError].
	Sources int
	// Shards is how many processes send every step together, each an
	// equal share of its rate from addresses of its own; 0 means 1. A
	// step's Sources is then a multiple of Shards, so that every shard
	// sends from Sources/Shards addresses and none sends more than its
	// share of the limit.
	Shards int
	// Seed seeds the bootstrap of the USL model.
	Seed uint64
	// Resamples is the number of bootstrap resamples of the USL model; 0
	// means 1000.
	Resamples int
}

// withDefaults returns o with its zero optional fields set.
func (o Options) withDefaults() Options {
	if o.Confidence == 0 {
		o.Confidence = defaultConfidence
	}
	if o.Factor == 0 {
		o.Factor = 2
	}
	if o.Precision == 0 {
		o.Precision = 0.05
	}
	if o.Step == 0 {
		o.Step = 5 * time.Second
	}
	switch {
	case o.Warmup == 0:
		o.Warmup = time.Second
	case o.Warmup < 0:
		o.Warmup = 0
	}
	if o.MaxStep == 0 {
		o.MaxStep = 3 * o.Step
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = 30
	}
	if o.Share == 0 {
		o.Share = defaultShare
	}
	if o.Shards == 0 {
		o.Shards = 1
	}
	if o.Resamples == 0 {
		o.Resamples = 1000
	}
	return o
}

// validate reports what makes o (with its defaults) unusable.
func (o Options) validate() error {
	if err := o.Objective.Validate(); err != nil {
		return err
	}
	switch {
	case o.Confidence <= 0 || o.Confidence >= 1:
		return fmt.Errorf("confidence %v: want a share above 0 and below 1, such as 0.95", o.Confidence)
	case !(o.StartRate > 0) || math.IsInf(o.StartRate, 0):
		return fmt.Errorf("start rate %v: want a rate above 0 per second", o.StartRate)
	case !(o.MaxRate >= o.StartRate) || math.IsInf(o.MaxRate, 0):
		return fmt.Errorf("max rate %v: want a rate at or above the start rate %v", o.MaxRate, o.StartRate)
	case !(o.Factor > 1):
		return fmt.Errorf("factor %v: want a factor above 1, such as 2", o.Factor)
	case !(o.Precision > 0 && o.Precision < 1):
		return fmt.Errorf("precision %v: want a share above 0 and below 1, such as 0.05", o.Precision)
	case o.Step < 0 || o.MaxStep < o.Step:
		return fmt.Errorf("step %v, max step %v: want a step above zero and a max step at or above it", o.Step, o.MaxStep)
	case o.MaxSteps < 1:
		return fmt.Errorf("max steps %d: want at least 1", o.MaxSteps)
	case o.Share < 0 || o.Share > 1:
		return fmt.Errorf("share %v: want a share of the limit above 0 and at most 1", o.Share)
	case o.Shards < 1:
		return fmt.Errorf("shards %d: want at least 1", o.Shards)
	}
	if need := o.sourcesFor(o.MaxRate); o.Sources > 0 && need > o.Sources {
		return &TooFewSourcesError{Rate: o.MaxRate, Need: need / o.Shards, Have: o.Sources / o.Shards, Shards: o.Shards,
			Limit: o.Limit, Window: o.Window, Share: o.Share}
	}
	return nil
}

// sourcesFor is how many source addresses a step at rate is spread
// over: as many as it needs, rounded up to a multiple of the shards; one
// a shard through the limit.
func (o Options) sourcesFor(rate float64) int {
	if o.ThroughLimit {
		return o.Shards
	}
	n := SourcesNeeded(rate, o.Limit, o.Window, o.Share)
	return (n + o.Shards - 1) / o.Shards * o.Shards
}

// SourcesPerShard is how many source addresses each of the search's
// shards sends its highest rate from: none more than its share of the
// limit (one through the limit). A shard given fewer is refused
// ([NewSearch]: a [*TooFewSourcesError]).
func (o Options) SourcesPerShard() int {
	o = o.withDefaults()
	return o.sourcesFor(o.MaxRate) / o.Shards
}

// MostRate is the highest rate, per second, that perShard addresses a
// shard carry with none above its share of the limit (+Inf through the
// limit or without one).
func (o Options) MostRate(perShard int) float64 {
	o = o.withDefaults()
	if o.ThroughLimit || o.Limit <= 0 || o.Window <= 0 {
		return math.Inf(1)
	}
	return float64(perShard*o.Shards) * o.Share * float64(o.Limit) / o.Window.Seconds()
}

// criteria is what every step of the search is judged by.
func (o Options) criteria() criteria {
	return criteria{Objective: o.Objective, Confidence: o.Confidence, MinAchieved: o.MinAchieved, MaxLateness: o.MaxLateness}
}

// Step is what the caller is to run next: Warmup at Rate (its samples
// dropped), then Duration at Rate, every sample added to one [Stats],
// then [Search.Record].
type Step struct {
	// Index is the step's place in the search's steps, from 0; a
	// lengthening keeps its step's index.
	Index int
	// Phase is PhaseRamp, PhaseBisect or PhaseRemeasure.
	Phase string
	// Rate is the open-model rate to offer, requests per second.
	Rate float64
	// Warmup is how long to send at Rate first, unjudged (0 when Continue).
	Warmup time.Duration
	// Duration is how long to send at Rate, judged.
	Duration time.Duration
	// Continue reports whether this lengthens the step just recorded:
	// keep sending at its rate without a pause or a warm-up, and add the
	// samples to the same Stats, which is recorded again.
	Continue bool
	// Sources is how many source addresses to spread the step over, a
	// multiple of the search's shards: each sends from Sources/Shards.
	Sources int
}

// Search is the knee search, a state machine driven by its caller: Next
// says which step to run, Record judges it and picks the next. The
// search never sends, sleeps or reads a clock. The zero value is not
// usable: use [NewSearch]. A Search is not safe for concurrent use.
type Search struct {
	o      Options
	steps  []StepResult
	next   *Step // what Next returns; nil when done
	issued *Step // the step Next returned and Record has not judged
	// judged and lengthened are the judged time and lengthenings of the
	// step being lengthened.
	judged     time.Duration
	lengthened int
	low, high  float64 // the highest passing rate, the lowest failing (0: none)
	highCause  Cause
	passed     bool // whether any step passed
	done       bool
	verdict    Verdict
	cause      Cause
}

// NewSearch returns a search configured by o, or what makes o unusable.
func NewSearch(o Options) (*Search, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	s := &Search{o: o}
	s.plan(phaseRamp, o.StartRate)
	return s, nil
}

// plan makes a fresh step at rate the next.
func (s *Search) plan(phase string, rate float64) {
	s.next = &Step{Index: len(s.steps), Phase: phase, Rate: rate, Warmup: s.o.Warmup, Duration: s.o.Step,
		Sources: s.o.sourcesFor(rate)}
}

// Next returns the step to run, and false when the search is done.
func (s *Search) Next() (Step, bool) {
	if s.done || s.next == nil {
		return Step{}, false
	}
	s.issued = s.next
	return *s.next, true
}

// errNoStep is Record's error without a step to judge.
var errNoStep = errors.New("capacity: Record without a step from Next")

// Record judges st, the samples of the step Next returned last, and
// advances the search. It returns the step's judgement; an undecided one
// is lengthened (the next step Continues it) until its judged part
// reaches MaxStep. Only the judgement is kept: the caller may drop st
// unless the next step Continues it.
func (s *Search) Record(st *Stats) (StepResult, error) {
	step := s.issued
	if step == nil || st == nil {
		return StepResult{}, errNoStep
	}
	s.issued = nil
	s.judged += step.Duration
	r := judge(st, step.Rate, s.o.criteria())
	r.Phase, r.Sources, r.DurationMS, r.Lengthened = step.Phase, step.Sources, clock.Ms(s.judged), s.lengthened
	if r.Verdict == StepUndecided && s.judged < s.o.MaxStep {
		s.lengthened++
		s.next = &Step{Index: step.Index, Phase: step.Phase, Rate: step.Rate, Continue: true,
			Duration: min(s.o.Step, s.o.MaxStep-s.judged), Sources: step.Sources}
		return r, nil
	}
	if hostUndecided(r, s.o.Objective.SLO.Max) {
		r.Verdict, r.LimitedBy = StepClient, causeClient
	}
	s.judged, s.lengthened = 0, 0
	s.steps = append(s.steps, r)
	s.advance(r)
	return r, nil
}

// advance takes in the final judgement of a step and plans the next one,
// or ends the search.
func (s *Search) advance(r StepResult) {
	rate := r.OfferedRPS
	switch {
	case r.Verdict == StepClient && !s.passed:
		// Not even the first rate went out on schedule: nothing here
		// can be measured from this machine.
		s.finish(VerdictClient, causeClient)
		return
	case r.Verdict == StepLimits:
		s.finish(VerdictInconclusive, causeLimits)
		return
	case r.Verdict == StepPass:
		s.passed = true
		if r.Phase == phaseRemeasure {
			cause := s.highCause
			if s.high == 0 {
				cause = causeMaxRate
			}
			s.finish(VerdictFound, cause)
			return
		}
		s.low = max(s.low, rate)
	default: // fail, undecided at its longest, or a rate this machine
		// could not send on schedule: not sustained, or not measurable
		// here; the search goes on below it
		if r.Phase == phaseRemeasure {
			s.low = s.highestPassBelow(rate)
		}
		if s.high == 0 || rate < s.high {
			s.high, s.highCause = rate, r.LimitedBy
		}
	}
	s.choose(r)
}

// choose plans the next step from the bracket [low, high], or ends.
func (s *Search) choose(last StepResult) {
	switch {
	case len(s.steps) >= s.o.MaxSteps:
		s.finish(VerdictInconclusive, CauseNone)
	case s.high == 0 && s.low >= s.o.MaxRate:
		s.plan(phaseRemeasure, s.low)
	case s.high == 0:
		s.plan(phaseRamp, min(s.low*s.o.Factor, s.o.MaxRate))
	case s.low == 0 && !s.passed && last.Verdict == StepFail:
		s.finish(VerdictNotFound, s.highCause)
	case s.low == 0:
		s.finish(VerdictInconclusive, s.highCause)
	case s.high <= s.low*(1+s.o.Precision):
		s.plan(phaseRemeasure, s.low)
	default:
		s.plan(phaseBisect, math.Sqrt(s.low*s.high))
	}
}

// highestPassBelow is the highest rate below rate that passed (0: none).
func (s *Search) highestPassBelow(rate float64) float64 {
	best := 0.0
	for _, r := range s.steps {
		if r.Verdict == StepPass && r.OfferedRPS < rate {
			best = max(best, r.OfferedRPS)
		}
	}
	return best
}

// finish ends the search.
func (s *Search) finish(verdict Verdict, cause Cause) {
	s.done, s.next, s.verdict, s.cause = true, nil, verdict, cause
}

// Done reports whether the search has ended.
func (s *Search) Done() bool { return s.done }

// hostUndecided reports whether a step undecided at its longest on
// latency is so only by what the host could add: its quantile's upper
// bound above the objective by no more than twice the longest the host
// kept the generator from running. It is then the generator's (client):
// more samples on that host cannot settle it (a busy suite run's first
// step, 300/s against a pool of 500/s, had a p99 of 98.5 ms over 900
// answers with a 34 ms delay, and the search ended inconclusive).
func hostUndecided(r StepResult, slo time.Duration) bool {
	if r.Verdict != StepUndecided || r.LimitedBy != CauseLatency || r.QuantileHighMS == nil || r.HostDelayMS <= 0 {
		return false
	}
	return r.QuantileHighMS.Duration() <= slo+2*r.HostDelayMS.Duration()
}
