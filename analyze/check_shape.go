package analyze

import (
	"fmt"
	"slices"
	"strings"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

func init() {
	register(method.CheckShape, func() checkRun { return &shapeCheck{memo: map[string]bool{}} })
}

// shapeCheck judges the body of every refusal of the surface, and reports
// the rate-limit headers the refusals carried.
type shapeCheck struct {
	n, bad int
	memo   map[string]bool // of the first bodies of refusals made in memory
	// per group, the first distinct headers its refusals carried, in send
	// order
	extras byGroup[[]string]
}

// count judges the shape of each refusal (first pass).
func (c *shapeCheck) count(s *surfaceRun, _ *groupRun, r *decode.Record, _ uint8, _ int) {
	if !refused(r) {
		return
	}
	c.n++
	ok, known := r.Judged()
	if !known { // a record made in memory: judge its body
		body := s.tab.Body(r)
		var seen bool
		if ok, seen = c.memo[string(body)]; !seen {
			ok = shapes(s.refusals).judge(s.name, body)
			if len(c.memo) < 1024 {
				c.memo[string(body)] = ok
			}
		}
	}
	if !ok {
		c.bad++
	}
}

func (c *shapeCheck) judgedPrimary(s *surfaceRun, p sighting) { c.headers(s, p.g, &p.Record) }

func (c *shapeCheck) judgedOther(s *surfaceRun, g *groupRun, j *judged) { c.headers(s, g, &j.Record) }

// headers notes the Retry-After and RateLimit values a refusal of group g
// carried (second pass): the first six distinct of each group, enough to
// report the first three.
func (c *shapeCheck) headers(s *surfaceRun, g *groupRun, r *decode.Record) {
	if !refused(r) {
		return
	}
	_, retryAfter, rateLimit := s.tab.Header(r)
	if retryAfter == "" && rateLimit == "" {
		return
	}
	extras := c.extras.at(g)
	if retryAfter != "" && !slices.Contains(*extras, "Retry-After: "+retryAfter) && len(*extras) < 6 {
		*extras = append(*extras, "Retry-After: "+retryAfter)
	}
	if rateLimit != "" && !slices.Contains(*extras, "RateLimit: "+rateLimit) && len(*extras) < 6 {
		*extras = append(*extras, "RateLimit: "+rateLimit)
	}
}

func (c *shapeCheck) judge(e *evidence) (string, string) {
	hdrs := ""
	var extras []string
	for _, src := range e.sd.Sources {
		for _, x := range c.extras.of(e.groups[src]) {
			if !slices.Contains(extras, x) && len(extras) < 3 {
				extras = append(extras, x)
			}
		}
	}
	if len(extras) > 0 {
		hdrs = "; the target also sent " + strings.Join(extras, ", ")
	}
	want, said := shapes(e.refusals).want(e.name)
	switch {
	case !said:
		return Skip, fmt.Sprintf("the contract says nothing of how a refusal of %s looks (refused: body or jsonrpc_code)%s", e.name, hdrs)
	case c.n == 0:
		return Inconclusive, "no " + e.refusalCode() + " to inspect"
	case c.bad == 0:
		return Pass, fmt.Sprintf("all %d refusals carry %s%s", c.n, want, hdrs)
	}
	instead := ""
	if smp := e.sample(e.meta, func(s *decode.Sample) bool { return s.Refused }); smp != "" {
		instead = "; for example " + smp
	}
	return Fail, fmt.Sprintf("%d of %d refusals lack %s%s%s", c.bad, c.n, want, instead, hdrs)
}
