package runner

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/schedule"
)

// streamName names the segment of step i, lengthened k times before.
func streamName(step, k int) string {
	if k == 0 {
		return fmt.Sprintf("step-%02d", step)
	}
	return fmt.Sprintf("step-%02d.%d", step, k)
}

// pacer sends the hits of source j of a segment at their due times,
// measured from the segment's start (not from when Vegeta began), and
// stops at the segment's end or when stop closes. It waits inside Pace,
// with a [schedule.Waiter] (a timer, then the last of the wait in
// nanosleep), so that a stop wakes it and Vegeta sends each hit as soon as
// Pace returns. Once stop closes it sends nothing more, not even the hits
// a source behind its schedule still owes. Once its last hit is sent it
// takes one from unsent, the segment's count of sources still sending.
type pacer struct {
	seg    *archive.CapacitySegment
	j      int
	count  uint64
	stop   <-chan struct{}
	start  time.Time // Start with its monotonic reading: pacing never follows a wall-clock step
	wait   schedule.Waiter
	unsent *atomic.Int64
	// released is set, by the source that hands out the segment's last
	// hit, to when it did (after start).
	released *atomic.Int64
	ended    bool
}

// Pace implements vegeta.Pacer.
func (p *pacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= p.count {
		if !p.ended {
			p.ended = true
			if p.unsent.Add(-1) == 0 {
				p.released.Store(int64(time.Since(p.start)))
			}
		}
		return 0, true
	}
	select {
	case <-p.stop: // stopped: a hit already due (the source behind its schedule) is not sent either
		return 0, true
	default:
	}
	return 0, p.wait.Until(p.start.Add(p.seg.Due(p.j, hits)), p.stop)
}

// Rate implements vegeta.Pacer.
func (p *pacer) Rate(time.Duration) float64 { return p.seg.PerSourceRPS }
