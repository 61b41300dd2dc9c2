package analyze

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// This file holds what a run that left a question open needs next: which
// surfaces' rivals probes after the plan can still tell apart, and how
// long those probes must go on for every rival to show its difference.

// FollowUpNeeds judges the results of a run's plan, held back from the
// follow-up streams, with the labels the engine sent them with, as the
// run's folder will be judged (ConfigFor of the run.json it started with,
// info, and o), and returns what the follow-up can settle within maxUntil
// windows of the run's start (see FollowUps): nothing when the results
// cannot be judged.
func FollowUpNeeds(info archive.RunInfo, results []archive.Result, o Overrides, maxUntil float64) []timeline.Need {
	in := decode.FromResults(results, readOptionsFor(o.Refusals))
	in.Meta.Runs = []archive.RunInfo{info}
	cfg, _ := ConfigFor(&in.Meta, o)
	rep, err := Analyze(in, cfg)
	if err != nil || rep.Start.IsZero() {
		return nil
	}
	return rep.FollowUps(maxUntil)
}

// FollowUps returns the surfaces of a run of verify's plan that a follow-up
// can settle: a model not decided between families, or a check of the
// limit left inconclusive by the rivals' timing, when no premise of the
// run failed (a spent budget, an API not there: more probes do not help).
// maxUntil bounds Until, in windows.
func (r *Report) FollowUps(maxUntil float64) []timeline.Need {
	var out []timeline.Need
	for i, sv := range r.Verdict.Surfaces {
		if i < len(r.Surfaces) && r.Surfaces[i].SpentOrLower {
			// A spent budget has come back in full a window after the
			// last request; a lower limit refuses the burst early again.
			at := method.FollowUpStart + method.FollowUpAgedOut
			if until := at + method.FollowUpBurstSpan + method.FollowUpBurstLead; until <= maxUntil {
				out = append(out, timeline.Need{Surface: sv.Surface, AgedOut: true, BurstAt: at, Until: until,
					Why: fmt.Sprintf("the first burst was refused before %d were admitted: a budget spent before the run or a lower limit", sv.ExpectedLimit)})
			}
			continue
		}
		if i >= len(r.Surfaces) || r.Surfaces[i].Premise != "" || r.Surfaces[i].OnsetOnly != "" || sv.WindowMS != 0 || sv.Model == familyUnknown {
			// (a surface of its own window has no follow-up: see
			// scenario.NamedLimit.Scale)
			continue
		}
		fit := r.Surfaces[i].Fit
		w := r.Verdict.WindowMS.Duration()
		var open []string
		cands := fit.open()
		if len(cands) > 1 {
			var names []string
			for _, a := range cands {
				if n := familyOf(a, w); !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			why := "the family is not decided ("
			if sv.ModelDecided {
				why = "the family is decided only by the second address ("
			}
			open = append(open, why+strings.Join(names, " or ")+")")
		}
		for _, c := range sv.Checks {
			if c.Verdict == Inconclusive && slices.Contains([]string{method.CheckRolling, method.CheckRejectedCount}, c.Name) {
				open = append(open, c.Name+" is inconclusive")
			}
		}
		if len(open) == 0 || fit.Best.Window == 0 {
			continue
		}
		// The probes go on until the last rival has given capacity back;
		// the burst comes when the first has, at once: rivals that give
		// it back at the same moment still hold different counts then
		// (a log of one length, a counter of one phase), and rivals that
		// give it back at different moments differ most between them (a
		// fixed window whose boundary follows the documented window's end
		// admits a whole burst that a log still holding the second burst
		// refuses; a window later, both have given everything back). A
		// token bucket gives capacity back steadily, and a counter from
		// its boundary on as the previous window's weight fades: neither
		// has a moment of its own, and against a counter the burst waits
		// for the end.
		end := r.secondEnd(i, w)
		until, first, counter := 0.0, math.Inf(1), false
		for _, c := range cands {
			h := horizon(c, w, end)
			until = max(until, h)
			switch c.Family {
			case familySlidingWindow:
				counter = true
			case familyFixedWindow, familySlidingLog:
				first = min(first, h)
			}
		}
		until = min(until, maxUntil)
		if counter {
			// A counter holds back what its previous window admitted
			// until the next boundary has passed, and a burst right
			// after the first moment another rival gives capacity back
			// may meet it with as little as that rival; at the end it
			// has given most of it back, and a log or fixed window all.
			first = until
		}
		out = append(out, timeline.Need{Surface: sv.Surface, Why: strings.Join(open, "; "), Until: until,
			BurstAt: method.FollowUpBurstAt(min(first, until))})
	}
	return out
}

// plannedSecondEnd is when the plan's second burst ends, in windows, when
// it goes out on time.
const plannedSecondEnd = method.SecondStart + 0.03

// secondEnd is when surface i's second burst ended, in windows w from the
// run's start: when it went out last, or, for a run without it, when it
// was planned to. It waits for the flood's answers, so a busy host sends it
// late, and a log's or a bucket's recovery after it comes that much later
// (a window's boundary does not move: see horizon): probes timed from the
// plan would end before a late log's, and leave the family open.
func (r *Report) secondEnd(i int, w time.Duration) float64 {
	t := r.Surfaces[i].SecondEnd
	if t.IsZero() || r.Start.IsZero() || w <= 0 {
		return plannedSecondEnd
	}
	// The burst's last request goes out a gap before its planned end.
	return max(plannedSecondEnd, float64(t.Sub(r.Start))/float64(w))
}

// horizon is the moment, in windows w from the start, by which candidate c
// has shown how capacity comes back after the second burst, which ended at
// secondEnd, plus a margin of a few probes: a sliding log (of any window,
// or replicas) when the burst has aged out of its window; a token bucket
// at once; a fixed window or a sliding-window counter at its first
// boundary after the burst's planned end. A late burst that straddles that
// boundary was mostly counted before it, so the boundary is still the
// moment the rival gives capacity back; taken a window later, it put the
// follow-up burst past a fixed window's next boundary too, where a
// shorter log has recovered as well (14 of 40 simulated loaded runs of a
// 0.8 W log left log and fixed window open that way).
func horizon(c Candidate, w time.Duration, secondEnd float64) float64 {
	const margin = 0.05 + method.FollowUpBurstSpan + method.FollowUpBurstLead
	switch c.Family {
	case familyFixedWindow, familySlidingWindow:
		p := float64(c.Phase) / float64(w) // windows start at k − p
		return math.Ceil(plannedSecondEnd+p) - p + margin
	case familyTokenBucket:
		return secondEnd + 0.1 + margin
	case familySlidingLog:
		if c.Window > w {
			// A log longer than the documented window that fits a run
			// whose limit address never got capacity back fits it at
			// any longer length too (the scan reports the nearest): its
			// length is known only once capacity returns.
			return math.Inf(1)
		}
		return secondEnd + float64(c.Window)/float64(w) + margin
	}
	return secondEnd + margin
}

// familyOf names c's family, with its window when that is not w.
func familyOf(c Candidate, w time.Duration) string {
	if c.Window != w {
		return fmt.Sprintf("%s of %v", c.Family, c.Window.Round(time.Millisecond))
	}
	return c.Family
}
