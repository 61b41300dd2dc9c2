package attack

import (
	"sync"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/schedule"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// clocked is a plan's Timeline run on the real clock: the pacers ask it
// when their hits are due, the result loop tells it when answers came and
// decides the follow-up. Its methods are safe for concurrent use.
type clocked struct {
	mu sync.Mutex
	tl *timeline.Timeline
	// origin is the run's start: the timeline's times are durations since.
	origin time.Time
	// changed is closed, and replaced, whenever a gate opens or the
	// follow-up is decided: a blocked pacer asks again then.
	changed chan struct{}
	// stop is closed when the run stops: every pacer stops without sending.
	stop    chan struct{}
	stopped sync.Once
	fu      *FollowUp
	kept    []archive.Result // the results the follow-up is decided on
}

// due returns when hit n of stream i is due, its status, and the channel
// that is closed when the answer may change.
func (c *clocked) due(i int, n uint64) (time.Duration, timeline.Status, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, st := c.tl.Due(i, n)
	return at, st, c.changed
}

// answered tells the timeline that r, of stream i, was answered; when that
// answers the plan it decides the follow-up. It is called from the run's
// result loop only.
func (c *clocked) answered(i int, r archive.Result) {
	held := c.tl.Streams()[i].Held
	if c.tl.Holds() && !held {
		c.kept = append(c.kept, r)
	}
	c.mu.Lock()
	changed := c.tl.Answered(i, r.Timestamp.Add(r.Latency).Sub(c.origin))
	deciding := c.tl.Deciding()
	c.mu.Unlock()
	if deciding {
		c.decide()
	} else if changed {
		c.broadcast()
	}
}

// decide settles the follow-up (FollowUp.Decide) at the moment the
// analysis ends. Pacers wait meanwhile: every stream but the held ones
// has ended, and those are blocked until the broadcast.
func (c *clocked) decide() {
	c.mu.Lock()
	c.fu.Decide(c.tl, time.Since(c.origin), c.kept)
	c.kept = nil
	c.mu.Unlock()
	c.broadcast()
}

// broadcast wakes every blocked pacer.
func (c *clocked) broadcast() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// sent tells the timeline that hit n of stream i goes out now, and wakes
// the pacers a group holds behind it.
func (c *clocked) sent(i int, n uint64) {
	c.mu.Lock()
	moved := c.tl.Sent(i, n)
	c.mu.Unlock()
	if moved {
		c.broadcast()
	}
}

// abort stops every pacer: the run is stopping.
func (c *clocked) abort() { c.stopped.Do(func() { close(c.stop) }) }

// pacer is the [vegeta.Pacer] of stream i of the timeline: it waits for
// each hit itself until it is due (see schedule.Waiter), with Vegeta's
// elapsed time set aside for the run's own, and records how late it went
// out in behind (nil: not recorded). It is not safe for concurrent use:
// Vegeta calls Pace from one goroutine per attack.
type pacer struct {
	c      *clocked
	i      int
	rate   schedule.Pacer
	behind func(lag time.Duration)
	wait   schedule.Waiter
}

// Pace implements vegeta.Pacer: Vegeta sends hit hits at once when it
// returns 0 and not stop.
func (p *pacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	for {
		at, st, changed := p.c.due(p.i, hits)
		switch st {
		case timeline.Ended:
			return 0, true
		case timeline.Blocked:
			select {
			case <-changed:
				continue
			case <-p.c.stop:
				return 0, true
			}
		}
		due := p.c.origin.Add(at)
		lag := time.Since(due)
		if lag < 0 && p.wait.Until(due, p.c.stop) {
			return 0, true
		}
		if closed(p.c.stop) {
			return 0, true
		}
		if p.behind != nil {
			p.behind(max(lag, 0))
		}
		p.c.sent(p.i, hits)
		return 0, false
	}
}

// Rate implements vegeta.Pacer: the stream's planned rate, ungated.
func (p *pacer) Rate(elapsed time.Duration) float64 { return p.rate.Rate(elapsed) }

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
