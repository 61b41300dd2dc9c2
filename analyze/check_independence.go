package analyze

import (
	"fmt"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/human"
	"github.com/connectbyjbrh/ratecheck/method"
)

func init() { register(method.CheckIndependence, func() checkRun { return &independenceCheck{} }) }

// independenceCheck judges whether the other surface's traffic from the
// primary's source counts toward this surface's limit.
type independenceCheck struct {
	// the other surface's surely counted requests sent within a window of
	// the primary's, and the array they lie in, from its start
	otherSure, otherBuf []span
	// refusals the other surface's traffic explains, by index in the
	// primary group (up to maxExplained; the rest counted in moreOwn)
	explained []int32
	// own holds, beside each refusal kept, how many of the address's own
	// requests on this surface could be in its window, itself included;
	// moreOwn counts the refusals past maxExplained by that number (at
	// most L distinct).
	own     []int32
	moreOwn map[int32]int
}

// span is a request's send and response.
type span struct{ start, end int64 }

// other takes a request of the other surface from the primary's source.
func (c *independenceCheck) other(s *surfaceRun, r *decode.Record) {
	if m := s.primary.model; m.head == len(m.pending) {
		// The primary's next request is sent at r.Start or later.
		c.trimOther(r.Start, int64(s.W))
	}
	if sure(r) {
		if n := len(c.otherSure); n == cap(c.otherSure) {
			// Full: move what is held to the front of its array when the
			// trimmed take most of it, else to one twice as long, rather
			// than let append make a new array every window.
			if 2*n > cap(c.otherBuf) {
				c.otherBuf = make([]span, 0, 2*n+64)
			}
			c.otherSure = c.otherBuf[:copy(c.otherBuf[:n], c.otherSure)]
		}
		c.otherSure = append(c.otherSure, span{r.Start, r.End})
	}
}

// trimOther forgets the other surface's requests no primary request sent
// at t or later can count: those sent a window w or more before.
func (c *independenceCheck) trimOther(t, w int64) {
	k := 0
	for k < len(c.otherSure) && c.otherSure[k].start <= t-w {
		k++
	}
	c.otherSure = c.otherSure[k:]
}

// definiteOther counts the other surface's sure requests from the
// primary's source definitely in r's window w.
func (c *independenceCheck) definiteOther(r *decode.Record, w int64) int {
	n := 0
	for _, o := range c.otherSure {
		if o.end <= r.Start && o.start > r.End-w {
			n++
		}
	}
	return n
}

// judged keeps the refusals of the primary the other surface's traffic
// explains; the third pass asks whether a limiter of this surface alone
// explains them too. Within a window of the address's first request, what
// the target counted before the run is unknown and could explain a
// refusal as well: those prove nothing.
func (c *independenceCheck) judgedPrimary(s *surfaceRun, p sighting) {
	// The other surface's requests before this one's window are of no
	// more use.
	r, w := &p.Record, int64(s.W)
	c.trimOther(r.Start, w)
	if len(s.others) > 0 && p.FalseThrottle && r.Start >= p.g.first+w && 1+int(p.Definite)+c.definiteOther(r, w) >= s.L+1 {
		own := 1 + p.Definite + p.Ambiguous
		if len(c.explained) < maxExplained {
			c.explained = append(c.explained, p.Index)
			c.own = append(c.own, own)
		} else {
			if c.moreOwn == nil {
				c.moreOwn = map[int32]int{}
			}
			c.moreOwn[own]++
		}
	}
}

// watchFit asks the fit for its candidates' decisions on the refusals kept.
func (c *independenceCheck) watchFit(f *familyFit) { f.watchFor(c.explained) }

// judge fails only on a refusal that the other surface's traffic explains
// and no limiter of this surface alone does.
func (c *independenceCheck) judge(e *evidence) (string, string) {
	if len(e.others) == 0 {
		return Skip, fmt.Sprintf("the other surface was not exercised from %s", e.primary)
	}
	if !e.anyRefused {
		return Inconclusive, fmt.Sprintf("nothing from %s was refused on %s: with no refusal, the other surface's traffic had nothing to explain", e.primary, e.name)
	}
	// A limit below the documented one, the most the address was surely
	// admitted in one window (observed_limit), explains a refusal with
	// that many of its own possibly in its window, whatever the order the
	// target counted them in: the fit's log of that limit, replayed on
	// send times alone, can admit a request sent as its window's oldest
	// aged out.
	var lower *Candidate
	if e.obs > 0 && e.obs < e.L {
		lower = &Candidate{Family: familySlidingLog, Limit: e.obs, Window: e.W}
		if b, ok := e.sd.Fit.bestOf(func(c Candidate) bool { return c.Family == familySlidingLog && c.Replicas <= 1 && c.Limit == e.obs }); ok {
			lower = &b
		}
	}
	n, all := 0, len(c.explained)
	var rival *Candidate
	for own, k := range c.moreOwn {
		all += k
		if lower == nil || int(own) < lower.Limit {
			n += k
		} else {
			rival = lower
		}
	}
	for k, i := range c.explained {
		if r, ok := e.fit.explainsWithout(e.sd.Fit, i, false); ok {
			if rival == nil {
				rival = &r
			}
		} else if lower != nil && int(c.own[k]) >= lower.Limit {
			if rival == nil {
				rival = lower
			}
		} else {
			n++
		}
	}
	switch {
	case n > 0 && e.sd.Leaks > 0:
		// A limiter that admits past L where every candidate of the fit
		// refuses is not one the fit describes: that no candidate
		// refuses these requests does not prove the other surface did.
		return Inconclusive, fmt.Sprintf("%s on %s from %s would be explained by counting the other surface's requests, but this surface's own limiter is none the fit describes exactly (%s past %d, best fit %s): a shared counter is not proved",
			human.Count(n, "refusal", ""), e.name, e.primary, human.Count(e.sd.Leaks, "leak", ""), e.L, e.sd.Fit.Best)
	case n > 0:
		return Fail, fmt.Sprintf("%d refusals on %s from %s are explained only by counting the other surface's requests, and by no limiter of this surface alone: the surfaces share a counter", n, e.name, e.primary)
	case all > 0:
		return Inconclusive, fmt.Sprintf("%d refusals the other surface's traffic could explain are explained as well by a limiter of %s alone (%s; best fit %s): the run cannot tell a shared counter from a limit of its own", all, e.name, rival, e.sd.Fit.Best)
	}
	return Pass, fmt.Sprintf("traffic on the other surface from %s did not count toward this one", e.primary)
}
