package refserver

import "time"

// StallMeter measures how late this process runs a 5 ms ticker: the
// longest a target served in-process (as the harness of client programs
// is, see Clients) could not have answered. Stalls are kept
// with the time they ended, so that only those that could move the
// clients' retries (after the barrier opened) are judged: one while the
// programs start up only delays arrivals the barrier holds anyway.
type StallMeter struct {
	done chan struct{}
	seen chan stalls
}

// stalls are the ticks that came late: the newest maxStalls of those over
// a millisecond with the time each came (a ring: a long start-up cannot
// crowd out the stalls after the barrier opened), and the latest of the
// others.
type stalls struct {
	at     []time.Time
	late   []time.Duration
	next   int // where the ring writes next, once full
	jitter time.Duration
}

// add records a tick late by late, at at.
func (s *stalls) add(at time.Time, late time.Duration) {
	const noise = time.Millisecond
	switch {
	case late <= noise:
		s.jitter = max(s.jitter, late)
	case len(s.at) < maxStalls:
		s.at, s.late = append(s.at, at), append(s.late, late)
	default:
		s.at[s.next], s.late[s.next] = at, late
		s.next = (s.next + 1) % maxStalls
	}
}

// maxStalls bounds what a stall meter keeps.
const maxStalls = 4096

// NewStallMeter starts measuring; Stop ends it.
func NewStallMeter() *StallMeter {
	m := &StallMeter{done: make(chan struct{}), seen: make(chan stalls, 1)}
	go func() {
		const tick = 5 * time.Millisecond
		t := time.NewTicker(tick)
		defer t.Stop()
		last := time.Now()
		var seen stalls
		for {
			select {
			case <-m.done:
				m.seen <- seen
				return
			case <-t.C:
				now := time.Now() // when this goroutine ran, not when the tick was due
				seen.add(now, now.Sub(last)-tick)
				last = now
			}
		}
	}()
	return m
}

// Stop ends the measurement and returns the longest stall that ended
// after from (zero: any).
func (m *StallMeter) Stop(from time.Time) time.Duration {
	if m == nil {
		return 0
	}
	close(m.done)
	seen := <-m.seen
	return seen.worst(from)
}

// worst returns the longest stall that ended after from (zero: any).
func (s *stalls) worst(from time.Time) time.Duration {
	worst := s.jitter
	for i, at := range s.at {
		if !at.Before(from) {
			worst = max(worst, s.late[i])
		}
	}
	return worst
}
