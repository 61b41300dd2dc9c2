package runner

import (
	"fmt"
	"math"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/schedule"
)

// Segment is one stretch of steady load: a step of the search, or one
// lengthening of it. Run.json lists them (see [Info]); with each result's
// sequence number they give every request's intended send time.
type Segment struct {
	// Step is the index of the search step; a lengthening repeats it.
	Step int `json:"step"`
	// Phase is the search phase ("ramp", "bisect", "remeasure").
	Phase string `json:"phase"`
	// Continue reports whether the segment lengthens the step before it.
	Continue bool `json:"continue,omitempty"`
	// Stream names the segment's results in their labels: step-07, and
	// step-07.1 for the first lengthening of step 7.
	Stream string `json:"stream"`
	// RateRPS is the step's rate over all its sources (of every shard),
	// per second.
	RateRPS float64 `json:"rate_rps"`
	// Start is when the schedule begins: source j's hit h is due at
	// Start + (j + h·n)/RateRPS seconds, n the number of sources. Of a
	// sharded search, every shard's segment has the same Start, and
	// source j of shard i of N is source i + N·j of the step's N·n.
	Start time.Time `json:"start"`
	// WarmupMS is the unjudged start of the schedule; DurationMS the
	// judged rest, both in milliseconds.
	WarmupMS   float64 `json:"warmup_ms"`
	DurationMS float64 `json:"duration_ms"`
	// Sources are the step's source addresses, in the order of their
	// offsets ("" is the system's choice).
	Sources []string `json:"sources"`
	// PerSourceRPS is the rate of each source: RateRPS / len(Sources)
	// (over every shard's sources when sharded).
	PerSourceRPS float64 `json:"per_source_rps"`
	// ShardIndex and Shards place a sharded search's segment: this is
	// shard ShardIndex of Shards, sending its share, len(Sources) of the
	// step's sources (Shards 0: not sharded).
	ShardIndex int `json:"shard_index,omitempty"`
	Shards     int `json:"shards,omitempty"`
	// Unjudged reports whether the segment was cut short (the run was
	// interrupted) and so never judged.
	Unjudged bool `json:"unjudged,omitempty"`
	// CutMS, when set, is when sending stopped, in milliseconds after
	// Start: the step had already failed its objective whatever the rest
	// of its answers would be (see cutter); what was sent is judged.
	CutMS float64 `json:"cut_ms,omitempty"`
}

// streamName names the segment of step i, lengthened k times before.
func streamName(step, k int) string {
	if k == 0 {
		return fmt.Sprintf("step-%02d", step)
	}
	return fmt.Sprintf("step-%02d.%d", step, k)
}

func (g *Segment) warmup() time.Duration {
	return time.Duration(math.Round(g.WarmupMS * float64(time.Millisecond)))
}

func (g *Segment) length() time.Duration {
	return g.warmup() + time.Duration(math.Round(g.DurationMS*float64(time.Millisecond)))
}

// place is where source j of the segment stands among the step's sources
// (of every shard), and how many those are.
func (g *Segment) place(j int) (at, of float64) {
	shards := max(g.Shards, 1)
	return float64(g.ShardIndex + shards*j), float64(shards * len(g.Sources))
}

// Due returns when hit h of source j is due, after Start. Replay and the
// live run compute it alike, to the nanosecond.
func (g *Segment) Due(j int, h uint64) time.Duration {
	at, n := g.place(j)
	return time.Duration(math.Round((at + float64(h)*n) / g.RateRPS * 1e9))
}

// Count returns how many hits source j sends: those due before the end
// of the segment.
func (g *Segment) Count(j int) uint64 {
	end := g.length()
	at, n := g.place(j)
	// first guess from the rate, then exact by Due
	c := uint64(max(0, math.Ceil((end.Seconds()*g.RateRPS-at)/n)))
	for c > 0 && g.Due(j, c-1) >= end {
		c--
	}
	for g.Due(j, c) < end {
		c++
	}
	return c
}

// Judged reports whether hit h of source j falls after the warm-up.
func (g *Segment) Judged(j int, h uint64) bool { return g.Due(j, h) >= g.warmup() }

// Intended returns the intended send time of hit h of source j.
func (g *Segment) Intended(j int, h uint64) time.Time { return g.Start.Add(g.Due(j, h)) }

// pacer sends the hits of source j of a segment at their due times,
// measured from the segment's start (not from when Vegeta began), and
// stops at the segment's end or when stop closes. It waits inside Pace,
// with a [schedule.Waiter] (a timer, then the last of the wait in
// nanosleep), so that a stop wakes it and Vegeta sends each hit as soon as
// Pace returns.
type pacer struct {
	seg   *Segment
	j     int
	count uint64
	stop  <-chan struct{}
	start time.Time // Start with its monotonic reading: pacing never follows a wall-clock step
	wait  schedule.Waiter
}

// Pace implements vegeta.Pacer.
func (p *pacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= p.count {
		return 0, true
	}
	return 0, p.wait.Until(p.start.Add(p.seg.Due(p.j, hits)), p.stop)
}

// Rate implements vegeta.Pacer.
func (p *pacer) Rate(time.Duration) float64 { return p.seg.PerSourceRPS }
