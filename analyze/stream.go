package analyze

import (
	"time"

	"github.com/connectbyjbrh/ratecheck/decode"
)

// The windowed model, the observed limit and the limiter fit, computed as
// records stream past in send order, holding one window of them (plus the
// longest latency) rather than the whole input.

// sortedRun is a sorted run of times with the ones already dropped from
// its front counted in base: #{v ≤ x} = base + upTo(vals, x) for any x at
// least as late as every dropped value. Dropped values make room at the
// back of the same array, so a run that slides along a long input keeps
// reusing one array.
type sortedRun struct {
	buf  []int64 // vals is buf[off:]
	off  int
	vals []int64
	base int
	at   int // upTo's last answer
}

// push appends v, which is at least every value held (sends in order).
func (s *sortedRun) push(v int64) {
	s.room()
	s.buf = append(s.buf, v)
	s.vals = s.buf[s.off:]
}

// insert adds v in order (responses come nearly in order: the insertion
// walks back over the few later ones).
func (s *sortedRun) insert(v int64) {
	s.push(v)
	vals := s.vals
	i := len(vals) - 1
	for i > 0 && vals[i-1] > v {
		vals[i] = vals[i-1]
		i--
	}
	vals[i] = v
}

// room moves the values held to the front of buf when buf is full and
// most of it is dropped values.
func (s *sortedRun) room() {
	if len(s.buf) < cap(s.buf) || s.off < len(s.buf)/2 {
		return
	}
	n := copy(s.buf, s.buf[s.off:])
	s.buf, s.off = s.buf[:n], 0
	s.vals = s.buf
}

// count returns #{v ≤ x} over every value pushed.
func (s *sortedRun) count(x int64) int { return s.base + upTo(s.vals, x, &s.at) }

// countAt is count with the caller's own search position.
func (s *sortedRun) countAt(x int64, at *int) int { return s.base + upTo(s.vals, x, at) }

// drop forgets the values before x.
func (s *sortedRun) drop(x int64) {
	k := 0
	for k < len(s.vals) && s.vals[k] < x {
		k++
	}
	if k == 0 {
		return
	}
	s.base += k
	s.at = max(s.at-k, 0)
	s.off += k
	s.vals = s.buf[s.off:]
}

// longRecord is a surely counted request slower than half a window.
type longRecord struct {
	index      int32
	start, end int64
}

// streamWindow counts, for a request j, the requests of a set that were
// surely and possibly in the server's window when j was counted (see
// Model). Records are added in send order; j is judged once every request
// sent up to its response has been added.
type streamWindow struct {
	W                  int64
	sureS, sureR       sortedRun // sends and responses of surely counted requests
	allS, allR         sortedRun // the same over every request that may have been counted
	long               []longRecord
	open               []longRecord // surely counted requests possibly unanswered at the last forget
	openKept           int          // len(open) after the last sweep
	contains, sureOnly func(*decode.Record) bool
}

func newStreamWindow(w time.Duration, maybe, certain func(*decode.Record) bool) *streamWindow {
	return &streamWindow{W: int64(w), contains: maybe, sureOnly: certain}
}

func (x *streamWindow) add(r *decode.Record, index int32) {
	if !x.contains(r) {
		return
	}
	x.allS.push(r.Start)
	x.allR.insert(r.End)
	if x.sureOnly(r) {
		x.sureS.push(r.Start)
		x.sureR.insert(r.End)
		l := longRecord{index, r.Start, r.End}
		if r.End-r.Start > x.W/2 {
			x.long = append(x.long, l)
		}
		x.open = append(x.open, l)
	}
}

// forget drops what no request sent at or after s can need: values before
// s − W, and slow requests answered by s.
func (x *streamWindow) forget(s int64) {
	for _, run := range []*sortedRun{&x.sureS, &x.sureR, &x.allS, &x.allR} {
		run.drop(s - x.W)
	}
	kept := x.long[:0]
	for _, l := range x.long {
		if l.end > s {
			kept = append(kept, l)
		}
	}
	x.long = kept
	// Sweep the answered out of open once it has doubled since the last
	// sweep: what is left over answers no later count (see slowDefinite).
	if len(x.open) > 2*x.openKept+64 {
		kept := x.open[:0]
		for _, l := range x.open {
			if l.end > s {
				kept = append(kept, l)
			}
		}
		x.open, x.openKept = kept, len(kept)
	}
}

// definite counts the sure requests other than rj with r_i ≤ s_j and
// s_i > r_j − W: #{r_i ≤ s_j} − #{s_i ≤ r_j − W} + #{s_i ≤ r_j − W ∧ r_i > s_j},
// the last term only possible for requests slower than W − lat_j. member
// says whether rj itself is of the set (index is its place in it).
//
// A request i in the last term took longer than W − lat_j: for j answered
// within half a window, only the few slower than half a window qualify,
// kept in long; a slower j looks through every request still unanswered.
func (x *streamWindow) definite(rj *decode.Record, index int32, member bool) int {
	s, r := rj.Start, rj.End
	n := x.sureR.count(s) - x.sureS.count(r-x.W)
	others := x.long
	if r-s > x.W/2 {
		others = x.open
	}
	for _, li := range others {
		if !(member && li.index == index) && li.start <= r-x.W && li.end > s {
			n++
		}
	}
	if member && x.sureOnly(rj) && x.contains(rj) {
		// j is not one of the others: take out what it added to the
		// first two terms.
		lat := r - s
		if lat == 0 {
			n-- // r_j ≤ s_j
		}
		if lat >= x.W {
			n++ // s_j ≤ r_j − W
		}
	}
	return n
}

// possible counts the requests other than rj not definitely out of its
// window: #{i ≠ j : r_i > s_j − W ∧ s_i < r_j}.
func (x *streamWindow) possible(rj *decode.Record) int {
	n := x.allS.count(rj.End-1) - x.allR.count(rj.Start-x.W)
	if x.contains(rj) && rj.End > rj.Start {
		n--
	}
	return n
}

// countedBetween counts the requests that may have been counted after
// a moment in (after, …) and before one in (…, before): those answered
// after after and sent before before, #{i : r_i > after ∧ s_i < before}.
// It is exact only while nothing from after on was forgotten: after at or
// past the send of the request judged last, less a window.
func (x *streamWindow) countedBetween(after, before int64) int {
	var i, j int
	return x.allS.countAt(before-1, &i) - x.allR.countAt(after, &j)
}

// judged is a request of a group with the model's judgement of it (set
// when judged: an answer, admitted or refused) and, for a refusal, the
// admitted requests sent within one window before its response came back.
type judged struct {
	decode.Record
	Judgement
	judged   bool
	observed int
}

// groupModel judges the requests of one group as they stream past in send
// order: each once every request sent up to its response has been seen.
type groupModel struct {
	limit    int
	all, adm *streamWindow
	pending  []judged // in send order, not yet judged
	head     int
	n        int32
	obsAt    [2]int
	emit     func(*judged)
}

// newGroupModel judges a group's requests against limit per window w;
// uncertain (nil: none) names requests that may or may not have been
// counted even when answered (see Group.Uncertain).
func newGroupModel(limit int, w time.Duration, uncertain func(*decode.Record) bool, emit func(*judged)) *groupModel {
	if uncertain == nil {
		uncertain = func(*decode.Record) bool { return false }
	}
	return &groupModel{limit: limit, emit: emit,
		all: newStreamWindow(w, func(*decode.Record) bool { return true }, func(r *decode.Record) bool { return sure(r) && !uncertain(r) }),
		adm: newStreamWindow(w, func(r *decode.Record) bool { return !refused(r) }, func(r *decode.Record) bool { return admitted(r) && !uncertain(r) })}
}

// add takes the group's next request in send order.
func (m *groupModel) add(r *decode.Record) {
	m.ready(r.Start)
	m.all.add(r, m.n)
	m.adm.add(r, m.n)
	m.pending = append(m.pending, judged{Record: *r, Judgement: Judgement{Index: m.n}})
	m.n++
}

// ready judges the pending requests answered before now, the send time of
// a request not yet added: every request sent up to their responses has
// been added.
func (m *groupModel) ready(now int64) {
	for m.head < len(m.pending) && m.pending[m.head].End < now {
		m.judgeHead()
	}
}

// flush judges every pending request: the group's requests are all in.
func (m *groupModel) flush() {
	for m.head < len(m.pending) {
		m.judgeHead()
	}
}

func (m *groupModel) judgeHead() {
	j := &m.pending[m.head]
	rj := &j.Record
	if admitted(rj) || refused(rj) {
		definite, possible := m.all.definite(rj, j.Index, true), m.all.possible(rj)
		jd := &j.Judgement
		jd.Definite, jd.Ambiguous = int32(definite), int32(possible-definite)
		jd.DefiniteAdmitted, jd.PossibleAdmitted = int32(m.adm.definite(rj, j.Index, true)), int32(m.adm.possible(rj))
		switch {
		case 1+definite >= m.limit+1:
			jd.Required = require429
			jd.Leak = admitted(rj)
		case 1+possible <= m.limit:
			jd.Required = require200
			jd.FalseThrottle = refused(rj)
		}
		j.judged = true
		if refused(rj) {
			// admitted i with s_i in (r_j − W, r_j)
			j.observed = m.adm.sureS.countAt(rj.End-1, &m.obsAt[0]) - m.adm.sureS.countAt(rj.End-m.all.W, &m.obsAt[1])
		}
	}
	s := rj.Start
	m.emit(j)
	m.head++
	if m.head == len(m.pending) {
		m.pending, m.head = m.pending[:0], 0
	} else if len(m.pending) == cap(m.pending) && m.head >= len(m.pending)/2 {
		m.pending = append(m.pending[:0], m.pending[m.head:]...) // room at the back
		m.head = 0
	}
	// Requests judged from now on were sent at s or later.
	if m.head < len(m.pending) {
		s = m.pending[m.head].Start
	}
	m.all.forget(s)
	m.adm.forget(s)
}
