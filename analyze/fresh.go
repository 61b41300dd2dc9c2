package analyze

import (
	"fmt"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// freshStart checks the premise every verdict of a verify run rests on:
// that the limit address's budget was whole when the run began. Its first
// burst (the onset: L requests) is then admitted in full by a limiter of
// at least L. A refusal among them before L were admitted or left
// unanswered, which even the other surface's onset from the same address
// (a shared counter) does not explain, says the address had sent within
// the window before the run (an earlier run, another job): the run proves
// nothing of the limiter, on either surface.
//
// A limit below the documented one refuses the first burst early too. A
// burst of L sent once every request of the run has aged out of a window
// (the follow-up burst, sent when nothing later in the run told the two
// apart) weighs them: a spent budget has come back by then, and is whole;
// a lower limit refuses it early again, each refusal with fewer than L in
// its window (the onset check's late false throttles).
type freshStart struct {
	stream []int8 // by label index: 1 the onset's, 2 the follow-up burst's, -1 neither, 0 not looked up
	// the onset and follow-up burst requests of each group, by outcome
	byGroup, burst map[*groupRun]*onsetTally
}

// onsetTally counts a group's onset requests: sent, admitted, refused,
// and when the first of them was sent (Unix ns).
type onsetTally struct {
	sent, admitted, refused int
	first                   int64
}

// count takes every request in the first pass and tallies the onset's.
func (f *freshStart) count(s *surfaceRun, g *groupRun, r *decode.Record, kind uint8, _ int) {
	if kind&kindLimits == 0 {
		return
	}
	id := int(r.LabelID())
	for id >= len(f.stream) {
		f.stream = append(f.stream, 0)
	}
	if f.stream[id] == 0 {
		f.stream[id] = -1
		switch s.tab.Labels(r).Stream {
		case method.StreamOnset:
			f.stream[id] = 1
		case method.StreamFollowUpBurst:
			f.stream[id] = 2
		}
	}
	if f.stream[id] < 0 {
		return
	}
	m := &f.byGroup
	if f.stream[id] == 2 {
		m = &f.burst
	}
	if *m == nil {
		*m = map[*groupRun]*onsetTally{}
	}
	t := (*m)[g]
	if t == nil {
		t = &onsetTally{}
		(*m)[g] = t
	}
	if t.sent == 0 || r.Start < t.first {
		t.first = r.Start
	}
	t.sent++
	switch {
	case refused(r):
		t.refused++
	case admitted(r):
		t.admitted++
	}
}

// spent says why the budget of the surface's primary was not whole at the
// start, when the first burst of this surface or of another, from the same
// address, says so ("" when it was whole, or the run had no onset): one
// counter shared with any other surface that explains this burst's
// refusals clears it.
func (f *freshStart) spent(s *surfaceRun) string {
	if msg := f.shortOfAny(s); msg != "" {
		return msg
	}
	for _, o := range s.others {
		if o.surface.fresh != nil {
			if m := o.surface.fresh.short(o.surface, o, s.primary); m != "" {
				return m
			}
		}
	}
	return ""
}

// shortOfAny says how the first burst of s's primary was short (short),
// unless the admissions of another surface's first burst from the same
// address explain it as one counter shared with that surface would.
//
// A shared counter that explains the shortfall by count is no whole
// budget: it is a rival of the spent one (a budget spent before the run
// leaves the first bursts of both surfaces short alike), and a violation
// of its own that only later refusals prove (independence). The premise
// is then said with both, and nothing is failed on the first burst's
// evidence (a quiet suite run against HAProxy's counters, one per
// surface, after 150 REST and 75 MCP requests from the address: the
// first bursts admitted 195 and 45, which one counter of 240 fits).
func (f *freshStart) shortOfAny(s *surfaceRun) string {
	msg := f.short(s, s.primary, nil)
	if msg == "" {
		return ""
	}
	for _, o := range s.others {
		if f.short(s, s.primary, o) == "" {
			mine, theirs := f.byGroup[s.primary], o.surface.fresh.byGroup[o]
			return fmt.Sprintf("%s; or %s and %s share one counter, which their first bursts' admissions from %s (%d and %d) fit by count",
				msg, s.name, o.surface.name, s.primary.source, mine.admitted, theirs.admitted)
		}
	}
	return msg
}

// short says how g's first burst, on surface s, was refused before L of it
// were admitted or left unanswered, even counting the admissions of the
// other surface's first burst from the same address (og, nil: none). Those
// count only where one counter for both surfaces could have admitted them
// all beside this burst's: such a counter admits no more than the larger
// of the two limits in a window, so more admitted than that is no shared
// counter, and the budget was spent before the run; and only where no
// earlier run is known to have sent within the window before the burst.
func (f *freshStart) short(s *surfaceRun, g, og *groupRun) string {
	t := f.byGroup[g]
	if t == nil || t.refused == 0 {
		return ""
	}
	shared := 0
	if og != nil && og.surface.fresh != nil && og.surface.fresh.byGroup[og] != nil {
		shared = og.surface.fresh.byGroup[og].admitted
		if t.admitted+shared > max(s.L, og.surface.L) {
			shared = 0
		}
	}
	if s.sentBefore > t.first-int64(s.W) {
		// An earlier run known to have sent from these addresses within
		// the window before this burst (verify --no-wait) explains its
		// refusals as well as a shared counter does: neither can be
		// named, and the budget was not proved whole.
		shared = 0
	}
	if t.sent-t.refused+shared >= s.L {
		return ""
	}
	b := f.burst[g]
	weighed := b != nil && b.sent >= s.L
	if weighed && 0 < b.sent-b.refused && b.sent-b.refused < s.L && t.sent-t.refused+shared >= b.sent-b.refused {
		// The follow-up burst, once the run's requests had aged out, met a
		// limit below L, and the first burst had as much: it was whole.
		return ""
	}
	early := fmt.Sprintf("%d of the first burst's %d requests from %s on %s were refused before %d were admitted", t.refused, t.sent, g.source, s.name, s.L)
	switch {
	case f.whole(g, s.L):
		return fmt.Sprintf("the address's budget was already spent: %s, and a burst of %d once the run's own requests had aged out was admitted in full, so the limit is not lower: it had sent within the window before the run (an earlier run, another job); wait a window or use other --sources",
			early, s.L)
	case weighed && b.sent == b.refused:
		// Nothing admitted even then: onset's late refusals say so.
		return fmt.Sprintf("%s, and a burst of %d once the run's own requests had aged out was refused in full, which no budget spent before the run explains",
			early, s.L)
	case weighed:
		return fmt.Sprintf("the address's budget was already spent: %s, fewer than the %d a burst admitted once the run's own requests had aged out (a limit below %d, too): it had sent within the window before the run (an earlier run, another job); wait a window or use other --sources",
			early, b.sent-b.refused, s.L)
	}
	return fmt.Sprintf("either the address's budget was already spent (it had sent within the window before the run: an earlier run, another job) or its limit is below %d: %s, and no request of the run told the two apart; wait a window or use other --sources, or give --max-duration room for verify's follow-up burst, which weighs them",
		s.L, early)
}

// whole reports whether g's follow-up burst was admitted (or left
// unanswered) in full: the limiter gave a whole budget of L back.
func (f *freshStart) whole(g *groupRun, L int) bool {
	t := f.burst[g]
	return t != nil && t.sent >= L && t.sent-t.refused >= L
}

// weighed reports whether g's follow-up burst was sent: whether the run
// holds what tells a budget spent before it from a lower limit.
func (f *freshStart) weighed(g *groupRun) bool { return f.burst[g] != nil }
