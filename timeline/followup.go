package timeline

import (
	"time"

	"github.com/connectbyjbrh/ratecheck/method"
)

// Need is a surface whose verdict so far left a question open that
// verify's follow-up (method.FollowUpProbes) can settle: what the analysis
// of the plan's answers asks of the follow-up.
type Need struct {
	Surface string
	// Why says what is open, and between which rivals.
	Why string
	// Until is how long the probes must go on, in windows from the start
	// of the run: past the latest moment a rival left gives capacity back
	// after the second burst, at most the longest the run may take.
	Until float64
	// BurstAt is when the follow-up burst starts, in windows from the
	// start of the run: just after the first moment a rival left gives
	// capacity back at once, at most Until less the burst.
	BurstAt float64
	// AgedOut is set when the need is the follow-up burst alone, once
	// every request of the run so far has aged out of a window: it goes
	// out method.FollowUpAgedOut windows after the plan's last answer
	// (BurstAt and Until hold it for a run answered on time, ending at
	// method.FollowUpStart). It weighs a budget spent before the run
	// against a limit below the documented one.
	AgedOut bool
}

// A Decision is what the follow-up does about a Need.
type Decision struct {
	Need
	// Sent says whether anything goes out for it.
	Sent bool
	// Wait is, for a burst of AgedOut sent, how long after the decision
	// it begins; for probes sent, how long they go on after it; for probes
	// not sent, how long before the decision they were due to end.
	Wait time.Duration
	// MaxUntil is the longest the run may take, in windows: a burst of
	// AgedOut that would end past it is not sent.
	MaxUntil float64
}

// DefaultMaxDuration is the longest a run of verify may take, follow-ups
// included, in windows, when the caller does not say: the follow-up of a
// window twice the documented one (its second burst ages out at 3.17
// windows) fits in it.
const DefaultMaxDuration = 3.5

// MaxUntil is how long a run of verify may take, follow-ups included, in
// windows of w: maxDuration (0: DefaultMaxDuration windows); 0 when that
// leaves no room for a follow-up (method.FollowUpStart or less), or when
// the plan sends no limit probes (limits false).
func MaxUntil(maxDuration, w time.Duration, limits bool) float64 {
	until := DefaultMaxDuration
	if maxDuration > 0 {
		until = float64(maxDuration) / float64(w)
	}
	if !limits || until <= method.FollowUpStart {
		return 0
	}
	return until
}

// at is the moment windows windows after the run's start.
func (t *Timeline) at(windows float64) time.Duration { return time.Duration(windows * float64(t.w)) }

// Decide settles the follow-up at now, once the plan is answered (see
// [Timeline.Deciding]), for needs, the questions the analysis of the
// plan's answers left open, within maxUntil windows of the run's start:
//   - a need of AgedOut: its surface's follow-up burst alone,
//     method.FollowUpAgedOut windows after the plan's last answer, uncut
//     (the burst weighs only whole, and a busy host sends it late), unless
//     it would end past maxUntil;
//   - any other: its surface's follow-up probes from now until Until, and
//     its burst from BurstAt (or now, when that has passed) until then;
//     nothing when Until has passed already (the probes tell the rivals
//     apart at their planned times only: late, they would weigh nothing).
//
// Every held stream no decision chose sends nothing. It returns a
// decision per need, in order.
func (t *Timeline) Decide(needs []Need, maxUntil float64, now time.Duration) []Decision {
	t.decided = true
	send := func(key string, begin, stop time.Duration) {
		for i := range t.streams {
			s := &t.streams[i]
			if !s.Held || s.Key != key {
				continue
			}
			if stop > 0 && stop <= begin {
				continue
			}
			// A held stream keeps its own pacing from its start, moved to
			// begin when that is later.
			t.sentHeld[i], t.shift[i], t.cut[i], t.known[i] = true, max(0, begin-s.Start), stop, true
		}
	}
	out := make([]Decision, 0, len(needs))
	for _, n := range needs {
		d := Decision{Need: n, MaxUntil: maxUntil}
		probes, burst := n.Surface+"/"+method.StreamFollowUp, n.Surface+"/"+method.StreamFollowUpBurst
		if n.AgedOut {
			begin := t.last + t.at(method.FollowUpAgedOut)
			if begin+t.at(method.FollowUpBurstSpan+method.FollowUpBurstLead) <= t.at(maxUntil) {
				d.Sent, d.Wait = true, max(begin-now, 0)
				send(burst, max(begin, now), 0)
			}
			out = append(out, d)
			continue
		}
		stop := t.at(n.Until)
		if stop > now {
			d.Sent, d.Wait = true, stop-now
			send(probes, now, stop)
			send(burst, max(t.at(n.BurstAt), now), stop)
		} else {
			d.Wait = now - stop
		}
		out = append(out, d)
	}
	return out
}
