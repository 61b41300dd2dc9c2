package analyze

// This file holds how a second address's fit narrows the primary's: one
// limiter serves every address, so a family must explain them all.

// narrow drops from an undecided fit the alternatives whose family the
// second address's fit b rules out, b being of a group with admitted
// admissions: a family whose best candidate on b misplaces more than b's
// best could at the worse end of its requests' intervals, plus its own
// timing spread and three misplaced admissions, cannot be the limiter of
// both addresses. It never drops the primary's best: where b rules that
// out, the timing of one address is off (a loaded host counts some of a
// burst early and some late, which neither end of the intervals bounds),
// not the family, and the fit stays as it was (on the simulated loaded
// host, dropping it named a fixed window for a log forgetting refusals in
// 3 runs of 100, and allowing one misplaced admission instead of three in
// 1 of 200). Its own spread too: replayed at one end of the
// requests' intervals or the other bounds a run whose requests were all
// counted early or all late, and on a loaded host the isolation burst was
// counted late and the rebound early (a correct log misplaced 15 where a
// counter, free to place its phase, misplaced 1; its spread was 14). The
// best of the families left (by the primary's mismatches, then the
// simplest) becomes Best, and the fit is decided when it is the only one.
// b counts only when its own best explains its run (explainsRun): a second
// address no family explains says nothing of which one the primary's is.
// What it narrows, the fit keeps (own), and a follow-up still asks the
// limit address itself: on a loaded host the second address's requests
// are counted in an order neither their sends nor their answers bound,
// and narrowing alone decided a fixed window for a log forgetting
// refusals in 1 run of 200 (docs/method.md).
func (fit *Fit) narrow(b Fit, admitted int) {
	if fit.Decided || len(b.Candidates) == 0 {
		return
	}
	// The families as named, at the documented window: the window scan's
	// logs are rivals of causes, not families (a shorter window explains
	// the rebound as well as a fixed window does; the primary's recovery
	// tells the window).
	family := Fit{Candidates: b.Candidates}
	top, ok := family.bestOf(func(Candidate) bool { return true })
	if !ok || !explainsRun(top, admitted) {
		return
	}
	fits := func(c Candidate) bool {
		if c.Window != top.Window {
			return true // a log at another window length: the second address's families are at the documented one
		}
		best, ok := family.bestOf(func(x Candidate) bool { return x.key() == c.key() })
		return ok && best.Mismatches <= top.worst()+best.TimingSpread+3*oneMisplaced
	}
	var left []Candidate
	for _, c := range append([]Candidate{fit.Best}, fit.Alternatives...) {
		if fits(c) {
			left = append(left, c)
		}
	}
	if len(left) == 0 || !fits(fit.Best) {
		// no family explains both, or the second address rules out the
		// family that fits the primary best: a fit so much better on
		// one address than the other says the timing of one is off, not
		// which family it is; the primary's own verdict stands
		return
	}
	fit.own = append([]Candidate{fit.Best}, fit.Alternatives...)
	best := left[0]
	for _, c := range left[1:] {
		if c.Mismatches < best.Mismatches || c.Mismatches == best.Mismatches && c.rank() < best.rank() {
			best = c
		}
	}
	fit.Best, fit.Alternatives = best, nil
	for _, c := range left {
		if c.key() != best.key() {
			fit.Alternatives = append(fit.Alternatives, c)
		}
	}
	fit.Decided = len(fit.Alternatives) == 0
}
