package timeline

import (
	"time"
)

// A Stream is one paced stream of a run from one source (one attacker of
// the engine), as the timeline sees it.
type Stream struct {
	// Key names the stream for the gates and the follow-up:
	// "surface/name". Several streams (one per source) may share a key.
	Key string
	// Due returns when hit n is planned, from the run's start, before any
	// gate or follow-up moves it, and false when the stream has no hit n.
	// Planned times never decrease with n.
	Due func(n uint64) (time.Duration, bool)
	// Start is when the stream is planned to start, and Count how many
	// hits it plans.
	Start time.Duration
	Count uint64
	// After are the keys of the streams it waits for: its first hit goes
	// out once every planned hit of each has been answered, Lag after the
	// last answer (when that is later than planned), the rest keeping
	// their pacing from it.
	After []string
	Lag   time.Duration
	// Held is set on a follow-up stream: it sends nothing until the
	// follow-up is decided (see [Timeline.Decide]), and then only if the
	// decision chose it.
	Held bool
	// Group, when set, names streams whose hits go out in due order across
	// them (ties in the order New was given the streams): a hit is held
	// until every hit of the group due before it went out (see
	// [Timeline.Sent]), so that a host that stalled past several sends
	// them in their order, not each stream's at once, one stream after
	// another. Streams whose interleaving is what a check compares them
	// by (verify's spoof probes) are one group.
	Group string
}

// Status says what a stream does with a hit: send it when due, wait for
// something the timeline does not know yet, or nothing more.
type Status int

// The statuses of a hit.
const (
	// Ready: the hit is due at the time returned.
	Ready Status = iota
	// Blocked: a gate is closed or the follow-up is not decided; ask again
	// once something was answered (see [Timeline.Answered]) or decided.
	Blocked
	// Ended: the stream sends no more hits.
	Ended
)

// A Timeline is when a run sends what: the due time of every hit of every
// stream, the gates that hold a stream until the streams it waits for are
// answered, and, for a plan with held streams, the follow-up decided once
// every other stream is answered. Its times are durations since the run's
// start; it reads no clock. The zero value is not usable: make one with
// [New]. It is not safe for concurrent use.
type Timeline struct {
	w       time.Duration
	streams []Stream
	// due counts the planned hits of each key a stream waits for that
	// have no answer yet, and opened says when the last came.
	due    map[string]uint64
	opened map[string]time.Duration
	// per stream: how far its hits move (a gate that opened late, a
	// follow-up that begins late), whether that is known yet, and the
	// moment from which it sends nothing (0: none).
	shift []time.Duration
	known []bool
	cut   []time.Duration
	// plan counts the hits of the streams not held that have no answer
	// yet, and last is when the latest of their answers came.
	plan     uint64
	last     time.Duration
	holds    bool
	decided  bool
	sentHeld []bool // a held stream the follow-up chose
	// sent counts the hits of each stream of a group that went out.
	sent []uint64
}

// New returns the timeline of streams in a run of window w.
func New(w time.Duration, streams []Stream) *Timeline {
	n := len(streams)
	t := &Timeline{w: w, streams: streams, due: map[string]uint64{}, opened: map[string]time.Duration{},
		shift: make([]time.Duration, n), known: make([]bool, n), cut: make([]time.Duration, n), sentHeld: make([]bool, n), sent: make([]uint64, n)}
	for _, s := range streams {
		for _, k := range s.After {
			t.due[k] = 0
		}
	}
	for _, s := range streams {
		if _, ok := t.due[s.Key]; ok {
			t.due[s.Key] += s.Count
		}
		if s.Held {
			t.holds = true
		} else {
			t.plan += s.Count
		}
	}
	for k, c := range t.due {
		if c == 0 {
			t.opened[k] = 0 // nothing to wait for
		}
	}
	return t
}

// Streams returns the timeline's streams, in the order New was given them.
func (t *Timeline) Streams() []Stream { return t.streams }

// Due returns when hit n of stream i is due, from the run's start: Ready
// and the time (which may have passed: send it at once), Blocked while a
// gate of the stream is closed, its follow-up undecided or, in a group,
// a hit of the group due before it has not gone out, or Ended.
func (t *Timeline) Due(i int, n uint64) (time.Duration, Status) {
	d, st := t.planned(i, n)
	if st != Ready || t.streams[i].Group == "" {
		return d, st
	}
	for j := range t.streams {
		if j == i || t.streams[j].Group != t.streams[i].Group {
			continue
		}
		switch dj, sj := t.planned(j, t.sent[j]); {
		case sj == Blocked:
			return 0, Blocked // its place in the order is not known yet
		case sj == Ready && (dj < d || dj == d && j < i):
			return 0, Blocked
		}
	}
	return d, Ready
}

// Sent records that hit n of stream i went out, and reports whether that
// may let another hit go (a stream of a group: ask Due again).
func (t *Timeline) Sent(i int, n uint64) bool {
	if t.streams[i].Group == "" {
		return false
	}
	t.sent[i] = max(t.sent[i], n+1)
	return true
}

// planned is Due without the group's order.
func (t *Timeline) planned(i int, n uint64) (time.Duration, Status) {
	s := &t.streams[i]
	d, ok := s.Due(n)
	if !ok {
		return 0, Ended
	}
	if !t.known[i] {
		switch {
		case s.Held && !t.decided:
			return 0, Blocked
		case s.Held && !t.sentHeld[i]:
			return 0, Ended
		case !s.Held:
			open, at := t.gate(s)
			if !open {
				return 0, Blocked
			}
			t.shift[i] = gateShift(s.Start, s.Lag, at)
		}
		t.known[i] = true
	}
	d += t.shift[i]
	if t.cut[i] > 0 && d >= t.cut[i] {
		return 0, Ended
	}
	return d, Ready
}

// gate reports whether every stream s waits for has been answered, and
// when the last answer came (0 for a stream that waits for none).
func (t *Timeline) gate(s *Stream) (bool, time.Duration) {
	var at time.Duration
	for _, k := range s.After {
		o, ok := t.opened[k]
		if !ok {
			return false, 0
		}
		at = max(at, o)
	}
	return true, at
}

// gateShift is how far a stream planned to start at start moves when the
// gate it waits for opens at opened: its first hit goes out lag after the
// gate, unless that is still before its planned start, and the rest keep
// their pacing from it.
func gateShift(start, lag, opened time.Duration) time.Duration {
	return max(0, opened-start+lag)
}

// Answered records that a hit of stream i was answered at at, and reports
// whether that changed what the timeline says: a gate opened, or every
// stream not held is answered, so that the follow-up is to be decided
// (see [Timeline.Deciding]).
func (t *Timeline) Answered(i int, at time.Duration) bool {
	s := &t.streams[i]
	changed := false
	if n, ok := t.due[s.Key]; ok && n > 0 {
		t.due[s.Key] = n - 1
		if n == 1 {
			t.opened[s.Key], changed = at, true
		}
	}
	if !s.Held && t.plan > 0 {
		t.plan--
		t.last = max(t.last, at)
		changed = changed || t.plan == 0 && t.holds
	}
	return changed
}

// Holds reports whether the timeline holds streams back for a follow-up.
func (t *Timeline) Holds() bool { return t.holds }

// Deciding reports whether the follow-up is to be decided now: the plan
// holds streams back, every other stream is answered, and nothing was
// decided yet.
func (t *Timeline) Deciding() bool { return t.holds && !t.decided && t.plan == 0 }
