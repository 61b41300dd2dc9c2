package runner

import (
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/capacity"
)

// cutter ends the first segment of a step early once the step has
// provably failed its objective: more of its judged requests came back
// beyond the objective (from their intended time) than the quantile's
// lower confidence bound allows over every judged request the segment
// plans, so that nothing still to come, answers in flight or requests not
// yet sent, can save it (capacity.Fails). An overloaded step then lasts as
// long as its failure takes to prove, and its requests in flight, which
// the open model lets grow without bound while the API falls behind, stay
// that many.
// A nil cutter never cuts: a lengthening's verdict depends on the samples
// before it, and a shard's on the others'.
type cutter struct {
	slo     time.Duration
	q, conf float64
	planned int // the segment's judged requests
	over    int // of those come back, how many beyond slo
}

// newCutter returns the cutter of a segment: nil for a lengthening or in
// a sharded search.
func newCutter(seg *archive.CapacitySegment, o capacity.Options, sharded bool) *cutter {
	if seg.Continue || sharded {
		return nil
	}
	planned := 0
	for j := range seg.Sources {
		for h := range seg.Count(j) {
			if seg.Judged(j, h) {
				planned++
			}
		}
	}
	return &cutter{slo: o.Objective.SLO.Max, q: o.Objective.SLO.Quantile, conf: o.Confidence, planned: planned}
}

// came takes in a judged sample and reports whether the step has failed.
func (c *cutter) came(x capacity.Sample) bool {
	if c == nil {
		return false
	}
	if x.Done.Sub(x.Intended) <= c.slo {
		return false
	}
	c.over++
	return capacity.Fails(c.over, c.planned, c.q, c.conf)
}
