package analyze

import (
	"fmt"
	"strings"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

func init() { register(method.CheckIsolation, func() checkRun { return &isolationCheck{} }) }

// isolationCheck judges the requests of the surface's groups other than
// its primary: whether other addresses have budgets of their own.
type isolationCheck struct {
	badN, proven int
	// per group, its first two false throttles, in send order
	bad byGroup[[]string]
}

func (c *isolationCheck) judgedOther(s *surfaceRun, g *groupRun, j *judged) {
	r := &j.Record
	if j.FalseThrottle {
		c.badN++
		if bad := c.bad.at(g); len(*bad) < 2 {
			*bad = append(*bad, fmt.Sprintf("%s refused at %s with at most %d in its own window", g.source, at(r, s.t0), j.Definite+j.Ambiguous))
		}
	}
	if admitted(r) && s.locked(r) {
		c.proven++
	}
}

// locked reports whether the primary group's window surely held more than
// L requests when a request r was counted, from the server's own refusals:
// some refused request of the primary came back before r was sent (so at
// least L+1 requests were counted by then), and at most one of its
// requests was sent early enough to have aged out of r's window since.
func (s *surfaceRun) locked(r *decode.Record) bool {
	p := s.primary
	return p.firstRefusalEnd <= r.Start && r.End-int64(s.W) < p.second
}

// judge: another address refused though its own window provably allowed
// it fails; one admitted while the limit address was provably over its
// limit passes.
func (c *isolationCheck) judge(e *evidence) (string, string) {
	if len(e.sd.Sources) < 2 {
		return Skip, fmt.Sprintf("one source address only (%s): isolation needs a second (--sources)", e.primary)
	}
	var bad []string
	for _, src := range e.sd.Sources {
		for _, b := range c.bad.of(e.groups[src]) {
			if len(bad) < 2 {
				bad = append(bad, b)
			}
		}
	}
	switch {
	case c.badN > 0:
		return Fail, fmt.Sprintf("another address shares the budget of %s: %s", e.primary, strings.Join(bad, "; "))
	case c.proven == 0:
		return Inconclusive, fmt.Sprintf("no request from another address was admitted while %s was provably over its limit (timing too uncertain, or none sent then)", e.primary)
	}
	return Pass, fmt.Sprintf("%d requests from other addresses were admitted while %s was provably over its limit", c.proven, e.primary)
}
