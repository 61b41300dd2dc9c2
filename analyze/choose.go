package analyze

import (
	"math"
	"time"
)

// This file holds the fit's choice: which candidate it names, which rivals
// it cannot tell from it, and what the leaks the model proved rule out.

// ruledOut reports whether the leaks proved at window w rule c out: a
// sliding log of one limiter, at w or longer (what is surely in the
// window of w is in any longer one), that admitted with more than its
// limit surely in its window.
func (p leakProof) ruledOut(c Candidate, w time.Duration) bool {
	if c.Family != familySlidingLog || c.Replicas > 1 || c.Window < w {
		return false
	}
	if c.counts() {
		return p.All > c.Limit
	}
	return p.Admitted > c.Limit
}

// choose names the best candidate the leaks do not rule out (the fewest
// mismatches; on a tie the simplest family (rank), at any limit, then
// the documented limit, replayed first) and the alternatives the run's
// timing cannot tell from it. At a limit other than the documented one
// (the observed limit: the most admitted surely in one window) only a
// sliding log is named: it is the one limiter that admits at most its
// limit in every window, so the only one whose limit the observed limit
// is. A token bucket of C admits up to 2C in a window, a fixed window
// 2L across a boundary, a counter more than L where the previous
// window's requests came late: replayed at the observed limit they stand
// for no limiter the target could be, and with a limit fitted to the run
// (and dozens of phases besides) a counter could fit one flood of
// refusals better, by a request or two, than the token bucket that
// produced it.
func (fit *Fit) choose(leaks leakProof, documented int, w time.Duration) {
	var open []Candidate
	for i, c := range fit.Candidates {
		switch {
		case leaks.ruledOut(c, w):
			fit.Candidates[i].ruled = true
		case c.Limit == documented || c.Family == familySlidingLog && c.Replicas <= 1:
			open = append(open, c)
		}
	}
	fit.Best = open[0] // "none" is never ruled out
	for _, c := range open[1:] {
		if c.Mismatches < fit.Best.Mismatches || c.Mismatches == fit.Best.Mismatches && c.rank() < fit.Best.rank() {
			fit.Best = c
		}
	}
	// A sliding log at another window length (the scan, at the documented
	// limit) is the same family with a wrong window. Where it beats every
	// family at the documented window by more than the run's timing can
	// move (its worst against their best), the family is a sliding log,
	// not the fixed window or counter whose phases came nearest to it;
	// where it comes as close as Best (a fixed window's phase and a log's
	// length can mimic each other over one run), it is an alternative.
	for i, c := range fit.Scan {
		switch {
		case leaks.ruledOut(c, w):
			fit.Scan[i].ruled = true
		case c.Limit != documented || c.Mismatches == math.MaxInt:
		case c.worst()+oneMisplaced < fit.Best.Mismatches:
			open = append(open, c)
			fit.Best = c
		case c.fewest() <= fit.Best.worst()+oneMisplaced && !outdone(fit.Best, c):
			open = append(open, c)
		}
	}
	// A family is represented by its best-fitting open candidate: a log
	// of 7.5 s (3 mismatches) stands for the sliding log, not the log of
	// the documented 6 s (81) that came first; narrowing by a second
	// address then weighs the log that fits (see narrow), where the
	// documented one it ruled out had left a counter decided against a
	// log of 1.25 W.
	at := map[string]int{}
	for _, c := range open {
		if c.fewest() > fit.Best.worst()+oneMisplaced || outdone(fit.Best, c) || c.key() == fit.Best.key() || c.Family == familyNone {
			continue
		}
		if i, ok := at[c.key()]; !ok {
			at[c.key()] = len(fit.Alternatives)
			fit.Alternatives = append(fit.Alternatives, c)
		} else if c.Mismatches < fit.Alternatives[i].Mismatches {
			fit.Alternatives[i] = c
		}
	}
	fit.Decided = len(fit.Alternatives) == 0
}

// oneMisplaced is what one admission replayed in the bin next to the
// target's costs a candidate: 2 mismatches, one where it is missing and
// one where it is extra. A request sent at a bin's edge costs that with
// any jitter at all, and so does a server whose clock is coarser than a
// bin (nginx reads its clock once per event-loop turn), so no family is
// named by a margin of one misplaced admission: a rival within it is an
// alternative. (The causes' rivals need no such allowance: a rival
// decides the very request a cause rests on, whatever its score.)
const oneMisplaced = 2

// refitted says whether the candidate is its family's best in each order
// the fit replays (see outdone): a fixed window or counter at its best
// phase there, a token bucket at its best refill, a sliding log at its
// best window length (the scan's).
func (c Candidate) refitted() bool {
	switch c.Family {
	case familyFixedWindow, familySlidingWindow, familyTokenBucket:
		return true
	case familySlidingLog:
		return c.slot < 0
	}
	return false
}

// rank is how simple the candidate's family is, the tie order of the fit:
// none, sliding log, token bucket, fixed window, sliding-window counter,
// then replicas (several limiters are less simple than one), whatever the
// limit it was replayed at.
func (c Candidate) rank() int {
	if c.Replicas > 1 {
		return 5
	}
	switch c.Family {
	case familyNone:
		return 0
	case familySlidingLog:
		return 1
	case familyTokenBucket:
		return 2
	case familyFixedWindow:
		return 3
	}
	return 4
}

// rivals reports whether the run's timing could have made b fit as well
// as a or better: b's fewest mismatches, less what chance alone gives
// replicas, are at most a's worst.
func rivals(a, b Candidate) bool { return b.least() <= a.worst() }

// outdone reports whether a fit better than b in every order the fit
// replayed the run in (sends, responses, the mix), each by more than one
// misplaced admission: the order the target counted in lies between
// those, and what moves a score from one order to the next (a burst's
// admissions crossing into the next bin on their latencies) moves both
// alike. A candidate's timing spread, set against another's score, counts
// that common move as if it favoured one of them; order by order it
// cancels. Replicas, whose score is a probability, are never outdone
// so; nor is a limiter with nothing to choose (a sliding log of the
// documented window) by one chosen afresh in each order (a phase, a
// refill, a window length): on a starved host a fixed window, its phase
// fitted to each order, beat the log that made the run by a few
// mismatches in every one. A token bucket is held to it at one refill
// for every order (see heldTo).
func outdone(a, b Candidate) bool {
	as, ok := a.heldTo(b)
	if !ok || b.Replicas > 1 {
		return false
	}
	for k := range as {
		if b.orders[k] <= as[k]+oneMisplaced {
			return false
		}
	}
	return true
}

// heldTo is c's mismatches in each order the fit replayed, as set against
// b's (see outdone), and false when c cannot be set against b: c is
// replicas, whose score is a probability, or chose its phase or window
// length afresh in each order where b has nothing to choose. A token
// bucket is then held to its scores at the one refill it fits best with
// in every order (once): so chosen, it has no more to choose than b. The
// leaky bucket nginx's burst and delay make, holding admissions up to
// half the window, scored 0, 48 and 0 at its documented refill, and a
// sliding log forgetting refusals at the run's observed limit 68, 116
// and 68: outdone in every order, yet left a rival in 11 of 14 quiet runs
// that missed its family while the bucket was held to nothing.
func (c Candidate) heldTo(b Candidate) ([3]int, bool) {
	switch {
	case c.Replicas > 1:
		return c.orders, false
	case !c.refitted() || b.refitted():
		return c.orders, true
	case c.onced:
		return c.once, true
	}
	return c.orders, false
}

// outdoneBy reports whether, in every order the fit replayed the run in,
// some candidate that want takes fit better than b by more than one
// misplaced admission, under outdone's terms (no limiter chosen afresh in
// each order against one with nothing to choose; replicas, whose score
// is a probability, never beat b, and are beaten only where they fit
// worse less what chance alone gives them (see least)): whichever order
// the target counted in, a limiter of that kind beat b. It asks of a kind
// of limiter what outdone asks of one. Against nginx's delay (a bucket
// forgetting refusals that holds what it admits up to half a window)
// beside a busy process, the bucket scored 15 on sends, 98 on responses
// (where the refusals that came back at once overtook every admission it
// held) and 3 on the mix; a sliding log counting refusals at another
// window 78, 92 and 79: close enough to the bucket's worst to be its
// rival, and better than it on responses, so not outdone by it (two
// replicas of the documented log, 103, 107 and 104 with 7 of it chance,
// were a rival too, replicas never being outdone). On responses a
// counter forgetting refusals scored 63: the run favoured forgetting
// them in every order.
func (fit Fit) outdoneBy(b Candidate, want func(Candidate) bool) bool {
	may := func(c Candidate) bool {
		_, ok := c.heldTo(b)
		return want(c) && ok && c.Mismatches != math.MaxInt
	}
	for k := range b.orders {
		score := func(c Candidate) int { s, _ := c.heldTo(b); return s[k] }
		c, ok := fit.fewest(may, score)
		if !ok || b.orders[k]-b.chance <= score(c)+oneMisplaced {
			return false
		}
	}
	return true
}

// least is the fewest mismatches the candidate could have had: its
// score, less what chance alone gives replicas.
func (c Candidate) least() int { return c.Mismatches - c.chance }

// bestOf returns the candidate of fit (families and window scan, none
// and those ruled out aside) that want takes with the fewest mismatches,
// and false when want takes none.
func (fit Fit) bestOf(want func(Candidate) bool) (Candidate, bool) {
	return fit.fewest(want, func(c Candidate) int { return c.Mismatches })
}

// closestOf is bestOf ranked by least: the candidate want takes that
// comes closest to rivalling another.
func (fit Fit) closestOf(want func(Candidate) bool) (Candidate, bool) {
	return fit.fewest(want, Candidate.least)
}

// fewest returns the candidate of fit (none and those ruled out aside)
// that want takes with the lowest score.
func (fit Fit) fewest(want func(Candidate) bool, score func(Candidate) int) (Candidate, bool) {
	var best Candidate
	found := false
	for _, cs := range [][]Candidate{fit.Candidates, fit.Scan} {
		for _, c := range cs {
			if c.Family == familyNone || c.ruled || !want(c) {
				continue
			}
			if !found || score(c) < score(best) {
				best, found = c, true
			}
		}
	}
	return best, found
}

// explainsRun reports whether c explains a run of admitted admissions:
// it misplaces at most one admission in ten (mismatches count each
// admission misplaced once where it is missing and once where it is
// extra, so the bound is a fifth of them). A target that admitted
// nothing is explained by no limiter.
func explainsRun(c Candidate, admitted int) bool {
	return admitted > 0 && 5*c.Mismatches <= admitted
}

// explainsWithout returns a candidate of fit other than "none" that,
// replayed on send times, decided the watched request of index as the
// target did (admitted: ok), and false when none did. Every family's best
// is asked, whatever its score (a check names a cause only when no
// limiter the fit considers explains the evidence); a fixed window or
// counter the run's timing could have made fit as well as the best, in
// every phase it was replayed at (a boundary elsewhere explains as
// well), and such a token bucket at every refill (a slower one explains
// as well); replicas, whose decision is a probability (more likely admitted
// than not), only when the timing could have made them fit as well as
// the best. A check that asks of a refusal whether something other than
// its cause explains it, or the spoof check of a forged probe's
// admission, asks this.
func (f *familyFit) explainsWithout(fit Fit, index int32, ok bool) (Candidate, bool) {
	d := f.decided[index]
	decides := func(slot int) bool { return slot >= 0 && slot < len(d) && d[slot] == ok }
	for _, c := range fit.Candidates {
		if c.Family == familyNone || c.ruled || c.Replicas > 1 && !rivals(fit.Best, c) {
			continue
		}
		if decides(c.slot) {
			return c, true
		}
		if c.phases[1] > 0 && rivals(fit.Best, c) {
			for s := c.phases[0]; s < c.phases[1]; s++ {
				if decides(s) {
					c.slot = s
					return c, true
				}
			}
		}
	}
	return Candidate{}, false
}
