package analyze

import (
	"fmt"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/human"
	"github.com/connectbyjbrh/ratecheck/method"
)

func init() { register(method.CheckRolling, func() checkRun { return &rollingCheck{} }) }

// rollingCheck judges every limit probe of the primary against the
// documented rolling window: the leaks and false throttles (counted in the
// surface's detail) and the requests whose outcome the timing left open.
type rollingCheck struct {
	judgedN, indet int
	leaks, falses  []string // the first two of each
}

func (c *rollingCheck) judgedPrimary(s *surfaceRun, p sighting) {
	c.judgedN++
	if p.Required == indeterminate {
		c.indet++
	}
	if p.forged { // judged by the spoof check alone
		return
	}
	if p.Leak && len(c.leaks) < 2 {
		c.leaks = append(c.leaks, fmt.Sprintf("%s admitted with %d others surely in its window: %d admitted, %d refused", at(&p.Record, s.t0), p.Definite, p.DefiniteAdmitted, p.Definite-p.DefiniteAdmitted))
	}
	if p.FalseThrottle && len(c.falses) < 2 {
		c.falses = append(c.falses, fmt.Sprintf("%s refused with at most %d others in its window", at(&p.Record, s.t0), p.Definite+p.Ambiguous))
	}
}

func (c *rollingCheck) judge(e *evidence) (string, string) {
	ew := fmt.Sprintf("effective window %v (documented %v)", e.sd.Fit.EffectiveWindow.Round(time.Millisecond), e.W)
	switch b := e.sd.Fit.Best; {
	case b.Family == familyTokenBucket && b.Limit > 0:
		// a bucket has no window: what it has is a refill, the window's
		// or a slower one the fit scanned (nginx's rate=1r/m burst=239)
		refill := b.Window
		if b.Refill > 0 {
			refill = b.Refill
		}
		one := human.Duration(refill / time.Duration(b.Limit))
		ew = fmt.Sprintf("best fit a token bucket of %d refilling one token every %s (%d per %v): a burst of %d, then one every %s, whatever came in the window before",
			b.Limit, one, b.Limit, refill.Round(time.Millisecond), b.Limit, one)
	case b.Family == familyFixedWindow && b.Limit > 0:
		// a fixed window is no shorter rolling one: its count resets (the
		// rolling window that fits best says nothing of it)
		ew = fmt.Sprintf("best fit a fixed window of %d per %v: the count resets at fixed boundaries, so up to %d are admitted within one window's length across a boundary",
			b.Limit, b.Window.Round(time.Millisecond), 2*b.Limit)
	}
	switch {
	case e.family.documented() && c.judgedN >= e.L && c.judgedN > c.indet:
		return c.judgeFamily(e)
	case e.sd.Leaks+e.sd.FalseThrottles > 0:
		return Fail, fmt.Sprintf("%s, %s against %d per %v; %s",
			withExamples(human.Count(e.sd.Leaks, "leak", ""), c.leaks), withExamples(human.Count(e.sd.FalseThrottles, "false throttle", ""), c.falses), e.L, e.W, ew)
	case c.judgedN == 0:
		return Inconclusive, fmt.Sprintf("no request from %s was admitted (2xx) or refused (%s)", e.primary, e.refusalCode())
	case c.judgedN < e.L:
		were := "were"
		if c.judgedN == 1 {
			were = "was"
		}
		return Inconclusive, fmt.Sprintf("only %s from %s %s admitted or refused, fewer than the %d of one window: a rolling limit of %d per %v was not exercised",
			human.Count(c.judgedN, "request", ""), e.primary, were, e.L, e.L, human.Duration(e.W))
	case c.judgedN == c.indet:
		return Inconclusive, fmt.Sprintf("the outcome of every one of the %s from %s is indeterminate: latency too large against the window", human.Count(c.judgedN, "answered request", ""), e.primary)
	case c.indet > 0 && !rollingAtW(e.sd.Fit.Best, e.W):
		// No request proved a violation, but the timing hid some, and the
		// limiter that fits the run best is not a rolling window of the
		// documented length: a longer window's false throttles or a
		// counter's leaks may be among the hidden.
		return Inconclusive, fmt.Sprintf("%s from %s: 0 leaks, 0 false throttles, but the timing left %d outcomes open and the best fit is %v, not a rolling window of %v; %s",
			human.Count(c.judgedN, "request", ""), e.primary, c.indet, e.sd.Fit.Best, human.Duration(e.W), ew)
	}
	return Pass, fmt.Sprintf("%s from %s: 0 leaks, 0 false throttles (%d indeterminate); %s", human.Count(c.judgedN, "request", ""), e.primary, c.indet, ew)
}

// rollingAtW reports whether c is a rolling window of length w: one
// sliding log, at any limit (the limit is onset's to judge).
func rollingAtW(c Candidate, w time.Duration) bool {
	return c.Family == familySlidingLog && c.Replicas <= 1 && c.Window == w
}

// judgeSpent judges a run whose first burst says the budget was spent
// before it (see freshStart) on its leaks alone: requests sent before the
// run only make a limiter refuse more, so no spent budget explains an
// admission with more than L surely in its window.
//
// A documented family other than a sliding log admits past a rolling
// window: its leaks are no proof, and the check is left to the premise.
func (c *rollingCheck) judgeSpent(e *evidence) (string, string, bool) {
	if e.sd.Leaks == 0 || e.family.documented() {
		return "", "", false
	}
	return Fail, fmt.Sprintf("%s against %d per %v, which no budget spent before the run explains (it only makes a limiter refuse more)",
		withExamples(human.Count(e.sd.Leaks, "leak", ""), c.leaks), e.L, e.W), true
}

// withExamples is a count followed by its examples in parentheses, when
// there are any.
func withExamples(count string, examples []string) string {
	if len(examples) == 0 {
		return count
	}
	return count + " (" + strings.Join(examples, "; ") + ")"
}
