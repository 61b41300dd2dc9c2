package archive

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// CapacityInfo is run.json's capacity section (RunInfo.Capacity): what
// the search was held to, the schedule of every segment, and the result.
// Durations are in milliseconds, rates per second. Of one shard of a
// sharded search, Shard says which ("i/N"), Sources counts the addresses
// of all shards as if each had this one's, the segments are this shard's
// share and the result is the shards' merged one. Package capacity/runner
// writes it; whoever reads a run folder reads it with ReadCapacity.
type CapacityInfo struct {
	Shard         string            `json:"shard,omitempty"`
	Rendezvous    string            `json:"rendezvous,omitempty"`
	Surface       string            `json:"surface"`
	ThroughLimit  bool              `json:"through_limit,omitempty"`
	SLO           string            `json:"slo"`
	ErrorBudget   float64           `json:"error_budget"`
	Confidence    float64           `json:"confidence"`
	StartRPS      float64           `json:"start_rps"`
	MaxRPS        float64           `json:"max_rps"`
	Factor        float64           `json:"factor"`
	Precision     float64           `json:"precision"`
	StepMS        clock.Millis      `json:"step_ms"`
	WarmupMS      clock.Millis      `json:"warmup_ms"`
	MaxStepMS     clock.Millis      `json:"max_step_ms"`
	MaxSteps      int               `json:"max_steps"`
	MinAchieved   float64           `json:"min_achieved"`
	MaxLatenessMS clock.Millis      `json:"max_lateness_ms"`
	Limit         int               `json:"limit"`
	WindowMS      clock.Millis      `json:"window_ms"`
	Share         float64           `json:"share"`
	Sources       int               `json:"sources"`
	Seed          uint64            `json:"seed"`
	Resamples     int               `json:"resamples"`
	Segments      []CapacitySegment `json:"segments"`
	Result        *capacity.Result  `json:"result"`
}

// ShardOf is the shard the section records: the whole search (1/1) when
// none.
func (ci *CapacityInfo) ShardOf() (Shard, error) {
	if ci.Shard == "" {
		return Shard{N: 1}, nil
	}
	return ParseShard(ci.Shard)
}

// ErrNotCapacity says a run folder holds no capacity search.
var ErrNotCapacity = errors.New("not a capacity run: run.json has no capacity section")

// ReadCapacity reads a run folder's run.json and its capacity section:
// ErrNotCapacity when it has none (or there is no run.json).
func ReadCapacity(dir string) (*RunInfo, *CapacityInfo, error) {
	run, err := ReadRunInfo(dir)
	if err != nil {
		return nil, nil, err
	}
	if run == nil || len(run.Capacity) == 0 { // nil: no run.json at all
		return run, nil, ErrNotCapacity
	}
	var ci CapacityInfo
	if err := json.Unmarshal(run.Capacity, &ci); err != nil {
		return run, nil, fmt.Errorf("%s: capacity section: %w", filepath.Join(dir, RunFile), err)
	}
	return run, &ci, nil
}

// CapacitySegment is one stretch of steady load of a capacity search: a
// step of the search, or one lengthening of it. The capacity section lists
// them (CapacityInfo.Segments); with each result's sequence number they
// give every request's intended send time (Intended).
type CapacitySegment struct {
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
	WarmupMS   clock.Millis `json:"warmup_ms"`
	DurationMS clock.Millis `json:"duration_ms"`
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
	// Start, with hits of the schedule still unsent: the step had already
	// failed its objective whatever the rest of its answers would be
	// (capacity/runner's cutter); what was sent is judged. A failure
	// proved only after the last hit went out cuts nothing and sets none.
	CutMS clock.Millis `json:"cut_ms,omitempty"`
	// HostWaits counts how long goroutines of the generator waited to run
	// while the segment was sent and answered (a host short of CPU), the
	// waits of 1 ms or more, longest first: the judge charges a latency
	// failure the host's waits can account for to the host.
	HostWaits []capacity.HostWait `json:"host_waits,omitempty"`
}

// warmup is the unjudged start of the schedule, to the nearest nanosecond.
func (g *CapacitySegment) warmup() time.Duration {
	return time.Duration(math.Round(float64(g.WarmupMS) * float64(time.Millisecond)))
}

// Length is how long the schedule runs: its warm-up and the judged rest,
// each to the nearest nanosecond.
func (g *CapacitySegment) Length() time.Duration {
	return g.warmup() + time.Duration(math.Round(float64(g.DurationMS)*float64(time.Millisecond)))
}

// place is where source j of the segment stands among the step's sources
// (of every shard), and how many those are.
func (g *CapacitySegment) place(j int) (at, of float64) {
	shards := max(g.Shards, 1)
	return float64(g.ShardIndex + shards*j), float64(shards * len(g.Sources))
}

// Due returns when hit h of source j is due, after Start. Replay and the
// live run compute it alike, to the nanosecond.
func (g *CapacitySegment) Due(j int, h uint64) time.Duration {
	at, n := g.place(j)
	return time.Duration(math.Round((at + float64(h)*n) / g.RateRPS * 1e9))
}

// Count returns how many hits source j sends: those due before the end
// of the segment.
func (g *CapacitySegment) Count(j int) uint64 {
	end := g.Length()
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
func (g *CapacitySegment) Judged(j int, h uint64) bool { return g.Due(j, h) >= g.warmup() }

// Intended returns the intended send time of hit h of source j.
func (g *CapacitySegment) Intended(j int, h uint64) time.Time { return g.Start.Add(g.Due(j, h)) }
