package analyze

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/human"
	"github.com/connectbyjbrh/ratecheck/method"
)

func init() { register(method.CheckOnset, func() checkRun { return &onsetCheck{} }) }

// onsetCheck judges the first episode of the primary: its limit probes up
// to the first refusal's response.
type onsetCheck struct {
	// The greatest number of requests surely counted in one window of a
	// primary request: what the run proved the target held.
	mostSure                           int
	onsetLeaks, onsetFalse, onsetIndet int
	onsetAdmitted                      int // admitted up to the first refusal's response
	// False throttles of requests sent a window or more after the
	// surface's first request (no request sent before the run can be in
	// their window), and the first of them.
	lateFalse int
	late      string
	// The fewest of its own that any late false throttle had possibly in
	// its window, itself included (0: none).
	lateOwn int
	// bucket is the first episode, for a documented token bucket.
	bucket bucketOnset
}

func (c *onsetCheck) judgedPrimary(s *surfaceRun, p sighting) {
	c.mostSure = max(c.mostSure, 1+int(p.Definite))
	if p.FalseThrottle && !p.forged && p.Start >= s.t0+int64(s.W) {
		if c.lateFalse++; c.late == "" {
			c.late = fmt.Sprintf("%s refused with at most %d others in its window", at(&p.Record, s.t0), p.Definite+p.Ambiguous)
		}
		if own := 1 + int(p.Definite+p.Ambiguous); c.lateOwn == 0 || own < c.lateOwn {
			c.lateOwn = own
		}
	}
	// A forged-header probe is judged by the spoof check alone.
	if p.Start <= p.g.firstRefusalEnd && !p.forged && s.family.Name == familyTokenBucket {
		c.bucket.spans = append(c.bucket.spans, onsetSpan{start: p.Start, end: p.End, ok: p.Admitted()})
		// A bucket refuses only with its burst admitted in the span it
		// refills in, so within a window of less than L it refuses
		// nothing a rolling window would not; in a longer span its
		// refusals may be of requests admitted before the window.
		if p.FalseThrottle && (s.family.Refill <= s.W || p.Start < s.t0+int64(s.W)) {
			c.onsetFalse++
		}
		if p.Admitted() {
			c.onsetAdmitted++
		}
		return
	}
	if p.Start <= p.g.firstRefusalEnd && !p.forged {
		if p.Admitted() {
			c.onsetAdmitted++
		}
		switch {
		case p.Leak:
			c.onsetLeaks++
		case p.FalseThrottle:
			c.onsetFalse++
		case p.Required == indeterminate:
			c.onsetIndet++
		}
	}
}

func (c *onsetCheck) judge(e *evidence) (string, string) {
	L, obs, p, code := e.L, e.obs, e.primary, e.refusalCode()
	switch {
	case e.family.Name == familyTokenBucket:
		// a bucket admits past L in a window by its refills: its own
		// bound says whether a refusal was due
		return c.judgeBucket(e)
	case !e.anyRefused && e.required429 == 0:
		// The model counts admissions and refusals: a limit that
		// refuses with another status than the contract's leaves the
		// window at L admitted, and what it refused out of the count.
		if other := e.refusedOtherwise(e.meta, p); other != "" && c.mostSure >= L {
			return Fail, fmt.Sprintf("no %s at all from %s, though %d were admitted in one window, its limit, and the requests past them were answered otherwise: the limit refuses, but %s", code, p, c.mostSure, other)
		}
		return Inconclusive, fmt.Sprintf("no window from %s provably held more than %d requests (at most %d surely in one), so no %s was due", p, L, c.mostSure, code)
	case !e.anyRefused:
		msg := fmt.Sprintf("no %s at all from %s although %d requests provably exceeded %d in one window: no limit enforced", code, p, e.required429, L)
		if other := e.refusedOtherwise(e.meta, p); other != "" {
			msg += ", or " + other
		}
		return Fail, msg
	case c.onsetLeaks > 0 && e.family.documented() && !e.sv.ModelDecided && (e.sv.Model == e.family.Name || slices.Contains(e.sv.ModelAlternatives, e.family.Name)):
		// the documented fixed window or counter explains them where a
		// boundary fell within the burst, and the run's timing leaves the
		// family open
		return Inconclusive, fmt.Sprintf("from %s %s admitted past %d in one rolling window before the first %s, which the documented %s explains if a boundary fell within the first burst; the run's timing leaves the family open (best fit %s, or %s)",
			p, human.Count(c.onsetLeaks, "request was", "requests were"), L, code, e.family.describe(L, e.W), e.sv.Model, strings.Join(e.sv.ModelAlternatives, ", "))
	case c.onsetLeaks > 0 && e.fitsDocumented():
		// a fixed window's boundary within the first burst (or a
		// counter's, its previous window weighing less than a request)
		return Pass, fmt.Sprintf("from %s the first %s came after %d admitted, %s past %d in one rolling window, which the documented %s explains: the fit names it, decided, with a boundary within the first burst (observed_limit %d)",
			p, code, c.onsetAdmitted, human.Count(c.onsetLeaks, "request", ""), L, e.family.describe(L, e.W), obs)
	case c.onsetLeaks > 0:
		// observed_limit counts every admission surely in the fullest
		// window ending at a refusal, the refills after the first 429
		// too; the leaks only those before it that the timing proves
		// past the limit: the two need not add up, and the detail says
		// why.
		return Fail, fmt.Sprintf("from %s %s admitted past the limit of %d before the first %s, each with %d or more others surely in its window; the fullest window ending at a %[4]s admitted %[6]d (observed_limit), %[7]d past the limit, counting admissions after the first %[4]s too",
			p, human.Count(c.onsetLeaks, "request was", "requests were"), L, code, L, obs, obs-L)
	case c.onsetFalse > 0:
		return Fail, fmt.Sprintf("from %s %ss began before %d requests could have been in one window (observed_limit %d; if this address sent requests in the window before the run, wait a window and run again)", p, code, L, obs)
	case obs == L:
		return Pass, fmt.Sprintf("from %s the first %s came after exactly %d admitted in one window (observed_limit %d)", p, code, L, obs)
	case obs > L+c.onsetIndet:
		// the onset held; the fullest window came later (the rolling
		// check judges it)
		return Pass, fmt.Sprintf("from %s the first %s came after %d admitted, none provably past %d (%s of the onset could be counted in either window); a later window admitted %d (observed_limit: see rolling)",
			p, code, c.onsetAdmitted, L, human.Count(c.onsetIndet, "request", ""), obs)
	}
	return Pass, fmt.Sprintf("from %s observed_limit %d, within the timing uncertainty: %s of the onset could be counted in either window; none provably broke %d", p, obs, human.Count(c.onsetIndet, "request", ""), L)
}

// judgeSpent judges the onset of a run whose first burst says the budget
// was spent before it (see freshStart). A spent budget explains refusals
// only while requests sent before the run can be in the window: where
// requests sent a window or more after it began were refused though their
// window provably held fewer than L, the limit is not honoured, whatever
// came before (a lower limit than documented, or none admitted at all).
//
// Other addresses' requests explain them as well where the limiter keeps
// one budget for every address (other addresses' requests in the run
// could fill what the address's own left of the window) and the run did
// not prove budgets per address (isolation: another address admitted
// while this one was provably over its limit). Both are failures of the
// contract, but only one is named where the run proved it: where it
// proved neither, the detail names both.
//
// A documented token bucket refilling more slowly than the window refuses
// late requests with fewer than L in their window: no proof there.
func (c *onsetCheck) judgeSpent(e *evidence) (string, string, bool) {
	if c.lateFalse == 0 || e.family.Name == familyTokenBucket && e.family.Refill > e.W {
		return "", "", false
	}
	nothing := ""
	if e.primaryAdmitted() == 0 {
		nothing = "nothing was admitted in the whole run: "
	}
	cause := "the limit is not honoured"
	if others := e.othersSent(); c.lateOwn+others >= e.L && !e.budgetsApart() {
		cause = fmt.Sprintf("the limit is not honoured, by a limit below %d or by one budget shared with other addresses (their %s on %s could fill the rest of the window; none was admitted while %s was provably over its limit, which would rule that out)",
			e.L, human.Count(others, "request", ""), e.name, e.primary)
	}
	return Fail, fmt.Sprintf("from %s %s%s sent a window or more after it began were refused with fewer than %d in their window (%s), where no request sent before the run can be, so no budget spent before it explains them: %s",
		e.primary, nothing, human.Count(c.lateFalse, "request", ""), e.L, c.late, cause), true
}

// othersSent counts the surface's requests from addresses other than the
// primary's, in the whole run.
func (s *surfaceRun) othersSent() int {
	n := 0
	for _, g := range s.groups {
		if g != s.primary {
			n += g.n
		}
	}
	return n
}

// budgetsApart reports whether the run proved that other addresses have
// budgets of their own: one was admitted while the primary was provably
// over its limit (see isolationCheck).
func (s *surfaceRun) budgetsApart() bool {
	for _, c := range s.checks {
		if i, ok := c.run.(*isolationCheck); ok {
			return i.proven > 0
		}
	}
	return false
}

// judgeBucket judges the first episode of a documented token bucket (the
// whole run where nothing was refused): its admissions held to the
// bucket's bound (see bucketOnset), its refusals to its burst.
func (c *onsetCheck) judgeBucket(e *evidence) (string, string) {
	p, code, want := e.primary, e.refusalCode(), e.family.describe(e.L, e.W)
	leaks, admitted, bound, span := c.bucket.leaks(e.L, e.family.Refill)
	switch {
	case !e.anyRefused && leaks > 0:
		msg := fmt.Sprintf("no %s at all from %s although %d were admitted in %v, more than the documented %s admits in that span (%d at most: %d and %.1f refilled): no limit enforced",
			code, p, admitted, span.Round(time.Millisecond), want, int(bound), e.L, bound-float64(e.L))
		if other := e.refusedOtherwise(e.meta, p); other != "" {
			msg += ", or " + other
		}
		return Fail, msg
	case !e.anyRefused:
		return Inconclusive, fmt.Sprintf("no %s from %s, and %d admitted in %v, which the documented %s admits (%d at most), so no %s was due", code, p, admitted, span.Round(time.Millisecond), want, int(bound), code)
	case leaks > 0:
		return Fail, fmt.Sprintf("from %s %s admitted before the first %s in %v, more than the documented %s admits in that span: %d at most (%d and %.1f refilled)",
			p, human.Count(admitted, "request was", "requests were"), code, span.Round(time.Millisecond), want, int(bound), e.L, bound-float64(e.L))
	case c.onsetFalse > 0:
		return Fail, fmt.Sprintf("from %s %ss began before %d requests were admitted, the documented burst (if this address sent requests before the run, wait for the bucket to refill and run again)", p, code, e.L)
	}
	return Pass, fmt.Sprintf("from %s the first %s came after %d admitted in %v, within the documented %s: at most %d there (%d and %.1f refilled); observed_limit %d counts the most admitted in one window ending at a %[2]s, the refills after the first %[2]s too",
		p, code, admitted, span.Round(time.Millisecond), want, int(bound), e.L, bound-float64(e.L), e.obs)
}
