package analyze

import (
	"fmt"
	"strings"

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
	// routes are the probes of a budget's other routes and the plain
	// ones beside them, on a surface whose budget several routes share
	// (Config.Routes), held to each other as the spoof check holds its
	// probes.
	routes spoofCheck
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
	if len(s.routes) > 1 {
		c.route(s, p)
	}
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

// route counts a probe of the budget's other routes, or a plain one
// beside them, by the route it went to (by name).
func (c *independenceCheck) route(s *surfaceRun, p sighting) {
	r := &p.Record
	i, ok := method.SharedRoute(p.stream)
	if !ok && p.stream != method.StreamSpoofControl || !admitted(r) && !refused(r) || ok && i >= len(s.routes) {
		return
	}
	t := &c.routes.plain
	if ok {
		name := s.routes[i]
		if c.routes.forged == nil {
			c.routes.forged = map[string]*probeCount{}
		}
		if c.routes.forged[name] == nil {
			c.routes.forged[name] = &probeCount{}
			c.routes.order = append(c.routes.order, name)
		}
		t = c.routes.forged[name]
	}
	if admitted(r) {
		t.admitted++
	} else {
		t.refused++
	}
}

// judge fails on a route of the budget whose probes were admitted more
// often than the plain ones on the first (see judgeRoutes), and on a
// refusal that the other surface's traffic explains and no limiter of this
// surface alone does.
func (c *independenceCheck) judge(e *evidence) (string, string) {
	if len(e.routes) < 2 {
		return c.judgeOthers(e)
	}
	verdict, detail := c.judgeRoutes(e)
	if verdict == Fail {
		return verdict, detail
	}
	switch v, d := c.judgeOthers(e); v {
	case Skip:
	case Fail:
		return v, d
	case Inconclusive:
		return v, d + "; " + detail
	default:
		detail += "; " + d
	}
	return verdict, detail
}

// judgeRoutes asks of each route of the budget but the first whether its
// probes were admitted more often than the plain probes on the first sent
// in the same span from the same address (the spoof check's exact test,
// Holm over the routes): one budget the routes share refuses them alike.
func (c *independenceCheck) judgeRoutes(e *evidence) (string, string) {
	others := strings.Join(e.routes[1:], ", ")
	if len(c.routes.order) == 0 {
		return Inconclusive, fmt.Sprintf("no probe of route %s was answered while %s was refused on %s: whether they share its budget is not shown", others, e.primary, e.routes[0])
	}
	refusedN := c.routes.plain.refused
	for _, t := range c.routes.forged {
		refusedN += t.refused
	}
	if refusedN == 0 {
		return Inconclusive, fmt.Sprintf("none of the probes of routes %s from %s was refused: the budget was not spent while they went out, so sharing it is not shown", strings.Join(e.routes, ", "), e.primary)
	}
	tests := c.routes.tests()
	k := float64(len(tests))
	var own, weak, alike []string
	for _, t := range tests {
		switch {
		case t.failed:
			own = append(own, fmt.Sprintf("%s (%d of %d admitted against %d of %d on %s; p = %.2g)", t.header, t.forged.admitted, t.forged.n(), c.routes.plain.admitted, c.routes.plain.n(), e.routes[0], t.p))
		case t.best > spoofAlpha/k:
			weak = append(weak, fmt.Sprintf("%s (%d probes, %d plain of which %d refused: p ≥ %.2g even were every probe admitted)", t.header, t.forged.n(), c.routes.plain.n(), c.routes.plain.refused, t.best))
		default:
			alike = append(alike, fmt.Sprintf("%s (%d of %d)", t.header, t.forged.admitted, t.forged.n()))
		}
	}
	test := fmt.Sprintf("exact one-sided test, Holm over %s, false-alarm rate %g", human.Count(len(tests), "route", ""), spoofAlpha)
	switch {
	case len(own) > 0:
		return Fail, fmt.Sprintf("probes of route %s from %s were admitted more often than the plain ones on %s sent in the same span (%s): the routes do not share one budget", strings.Join(own, ", "), e.primary, e.routes[0], test)
	case len(weak) > 0:
		return Inconclusive, fmt.Sprintf("too few probes answered or plain ones refused to tell whether %s shares the budget of %s (%s)", strings.Join(weak, ", "), e.routes[0], test)
	}
	return Pass, fmt.Sprintf("probes of route %s from %s were refused as the %d plain ones on %s in the same span (%d admitted; %s): the routes share one budget", strings.Join(alike, ", "), e.primary, c.routes.plain.n(), e.routes[0], c.routes.plain.admitted, test)
}

// judgeOthers fails only on a refusal that the other surface's traffic
// explains and no limiter of this surface alone does.
func (c *independenceCheck) judgeOthers(e *evidence) (string, string) {
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
