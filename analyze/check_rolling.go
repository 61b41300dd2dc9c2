package analyze

import (
	"fmt"
	"strings"
	"time"

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
	if p.Required == Indeterminate {
		c.indet++
	}
	if p.forged { // judged by the spoof check alone
		return
	}
	if p.Leak && len(c.leaks) < 2 {
		c.leaks = append(c.leaks, fmt.Sprintf("%s admitted with %d others surely in its window", at(&p.Record, s.t0), p.Definite))
	}
	if p.FalseThrottle && len(c.falses) < 2 {
		c.falses = append(c.falses, fmt.Sprintf("%s refused with at most %d others in its window", at(&p.Record, s.t0), p.Definite+p.Ambiguous))
	}
}

func (c *rollingCheck) judge(e *evidence) (string, string) {
	ew := fmt.Sprintf("effective window %v (documented %v)", e.sd.Fit.EffectiveWindow.Round(time.Millisecond), e.W)
	switch {
	case e.sd.Leaks+e.sd.FalseThrottles > 0:
		return Fail, fmt.Sprintf("%d leaks (%s), %d false throttles (%s) against %d per %v; %s",
			e.sd.Leaks, strings.Join(c.leaks, "; "), e.sd.FalseThrottles, strings.Join(c.falses, "; "), e.L, e.W, ew)
	case c.judgedN == 0:
		return Inconclusive, fmt.Sprintf("no request from %s was admitted (2xx) or refused (429)", e.primary)
	case c.judgedN < e.L:
		return Inconclusive, fmt.Sprintf("only %d requests from %s were admitted or refused, fewer than the %d of one window: a rolling limit of %d per %v was not exercised", c.judgedN, e.primary, e.L, e.L, e.W)
	case c.judgedN == c.indet:
		return Inconclusive, fmt.Sprintf("the outcome of every one of the %d answered requests from %s is indeterminate: latency too large against the window", c.judgedN, e.primary)
	}
	return Pass, fmt.Sprintf("%d requests from %s: 0 leaks, 0 false throttles (%d indeterminate); %s", c.judgedN, e.primary, c.indet, ew)
}
