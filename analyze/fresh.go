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
type freshStart struct {
	onset []int8 // by label index: 1 an onset stream's label, -1 not, 0 not looked up
	// the onset requests of each group, by outcome
	byGroup map[*groupRun]*onsetTally
}

// onsetTally counts a group's onset requests: sent, admitted, refused.
type onsetTally struct{ sent, admitted, refused int }

// count takes every request in the first pass and tallies the onset's.
func (f *freshStart) count(s *surfaceRun, g *groupRun, r *decode.Record, kind uint8, _ int) {
	if kind&kindLimits == 0 {
		return
	}
	id := int(r.LabelID())
	for id >= len(f.onset) {
		f.onset = append(f.onset, 0)
	}
	if f.onset[id] == 0 {
		f.onset[id] = -1
		if s.tab.Labels(r).Stream == method.StreamOnset {
			f.onset[id] = 1
		}
	}
	if f.onset[id] < 0 {
		return
	}
	if f.byGroup == nil {
		f.byGroup = map[*groupRun]*onsetTally{}
	}
	t := f.byGroup[g]
	if t == nil {
		t = &onsetTally{}
		f.byGroup[g] = t
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
// start, when the first burst of this surface or the other, from the same
// address, says so ("" when it was whole, or the run had no onset).
func (f *freshStart) spent(s *surfaceRun) string {
	if msg := f.short(s, s.primary, s.other); msg != "" {
		return msg
	}
	if o := s.other; o != nil && o.surface.fresh != nil {
		return o.surface.fresh.short(o.surface, o, s.primary)
	}
	return ""
}

// short says how g's first burst, on surface s, was refused before L of it
// were admitted or left unanswered, even counting the admissions of the
// other surface's first burst from the same address (og, nil: none). Those
// count only where one counter for both surfaces could have admitted them
// all beside this burst's: such a counter admits no more than the larger
// of the two limits in a window, so more admitted than that is no shared
// counter, and the budget was spent before the run.
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
	if t.sent-t.refused+shared >= s.L {
		return ""
	}
	return fmt.Sprintf("the address's budget was already spent: %d of the first burst's %d requests from %s on %s were refused before %d were admitted, so it had sent within the window before the run (an earlier run, another job); wait a window or use other --sources",
		t.refused, t.sent, g.source, s.name, s.L)
}
