package analyze

import (
	"fmt"

	"github.com/connectbyjbrh/ratecheck/internal/human"
	"github.com/connectbyjbrh/ratecheck/method"
)

func init() {
	register(method.CheckRejectedCount, func() checkRun {
		return &rejectedCountCheck{leakCounts: map[[2]int32]int{}, refusalCounts: map[[2]int32]int{}}
	})
}

// rejectedCountCheck judges whether refused requests count toward the
// limit, against the limit the target showed (known only at the end).
type rejectedCountCheck struct {
	// Per distinct (Definite, DefiniteAdmitted) of an admission, and
	// (Possible, PossibleAdmitted) of a refusal, of the primary's limit
	// probes: how many.
	leakCounts, refusalCounts map[[2]int32]int
}

func (c *rejectedCountCheck) judgedPrimary(s *surfaceRun, p sighting) {
	if p.forged {
		return
	}
	// what each reading of refusals says of the request
	if admitted(&p.Record) {
		tally(c.leakCounts, [2]int32{p.Definite, p.DefiniteAdmitted})
	}
	if refused(&p.Record) {
		tally(c.refusalCounts, [2]int32{p.Definite + p.Ambiguous, p.PossibleAdmitted})
	}
}

// tally counts one more of k, while the map holds fewer than maxExplained
// keys (their number follows the requests in a window, not the run).
func tally(m map[[2]int32]int, k [2]int32) {
	if _, ok := m[k]; ok || len(m) < maxExplained {
		m[k]++
	}
}

// judge weighs the requests only one reading of refusals explains, against
// the limit the target showed: an admission while the window provably held
// more than that limit counting refusals but not counting only admissions
// proves refusals are forgotten; a refusal that a limiter forgetting
// refusals had to admit proves they count. Either proof holds only at the
// documented window and for one limiter: the verdict stands only when
// the fit agrees (see rival).
func (c *rejectedCountCheck) judge(e *evidence) (string, string) {
	L := e.Leff
	forgets, counts := 0, 0
	for k, n := range c.leakCounts {
		if 1+int(k[0]) >= L+1 && 1+int(k[1]) <= L {
			forgets += n
		}
	}
	for k, n := range c.refusalCounts {
		if 1+int(k[1]) <= L && 1+int(k[0]) > L {
			counts += n
		}
	}
	best := e.sd.Fit.Best
	switch {
	case forgets > 0:
		if why := rival(e, false); why != "" {
			return Inconclusive, fmt.Sprintf("%s admitted while refused requests filled the window past %d, which a limiter forgetting refusals would explain, but %s", were(forgets, "request"), L, why)
		}
		e.sv.RejectedCount = boolPtr(false)
		verdict := e.heldToCounts(false)
		said := map[string]string{Pass: ", as the contract says", Skip: " (the contract does not say whether they do)", Fail: " (the contract says they do)"}[verdict]
		return verdict, fmt.Sprintf("%s admitted while refused requests filled the window past %d: refusals do not count%s; best fit %s", were(forgets, "request"), L, said, best)
	case counts > 0:
		if why := rival(e, true); why != "" {
			return Inconclusive, fmt.Sprintf("%s explained by counting refused requests, but %s", are(counts, "refusal"), why)
		}
		e.sv.RejectedCount = boolPtr(true)
		verdict := e.heldToCounts(true)
		said := map[string]string{Pass: ", as documented", Skip: ": refusals count (the contract does not say whether they do)", Fail: ": refusals count (the contract says they do not)"}[verdict]
		return verdict, fmt.Sprintf("%s explained only by counting refused requests%s; best fit %s", are(counts, "refusal"), said, best)
	}
	return Inconclusive, fmt.Sprintf("no request proves either way whether refusals count (timing too uncertain, or the run did not send refused requests while under the limit); best fit %s", best)
}

// heldToCounts is the verdict on a run shown to count refusals (counts)
// or not, against what the limit says (surfaceRun.counts): a skip where it
// says nothing, a pass where it says what was shown, else a failure.
func (e *evidence) heldToCounts(counts bool) string {
	switch e.counts {
	case "":
		return Skip
	case fmt.Sprint(counts):
		return Pass
	}
	return Fail
}

// rival says why the fit does not bear out the reading of refusals the
// model's proof gave (counting them, or not), or "" when it does: the
// best candidate of that reading (any window of the scan, replicas, a
// fixed window or counter in any phase) must explain the run (see
// explainsRun), and no candidate of the other reading may come as close
// as the run's timing allows (see rivals) unless, in every order the fit
// replayed the run in, a candidate of the reading fits better than it
// (see outdoneBy): the question is the reading, not which limiter of it.
func rival(e *evidence, counting bool) string {
	fit := e.sd.Fit
	reading := map[bool]string{true: "counting refusals", false: "forgetting refusals"}
	claim, ok := fit.bestOf(func(c Candidate) bool { return c.counts() == counting })
	if !ok || !explainsRun(claim, e.primaryAdmitted()) {
		what := "none was replayed"
		if ok {
			what = "the best, " + claim.String() + ", does not"
		}
		return fmt.Sprintf("no limiter %s that the fit considers explains the run (%s; best fit %s)", reading[counting], what, fit.Best)
	}
	same := func(c Candidate) bool { return c.counts() == counting }
	if r, ok := fit.closestOf(func(c Candidate) bool { return !same(c) && rivals(claim, c) && !fit.outdoneBy(c, same) }); ok {
		return fmt.Sprintf("%s explains the run at least as well as %s, within what the run's timing can move: the run cannot tell which", r, claim)
	}
	return ""
}

// were is "n nouns were", or "1 noun was".
func were(n int, noun string) string {
	if n == 1 {
		return "1 " + noun + " was"
	}
	return human.Count(n, noun, "") + " were"
}

// are is "n nouns are", or "1 noun is".
func are(n int, noun string) string {
	if n == 1 {
		return "1 " + noun + " is"
	}
	return human.Count(n, noun, "") + " are"
}
