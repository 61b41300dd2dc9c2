package analyze

import (
	"fmt"
	"strings"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/human"
	"github.com/connectbyjbrh/ratecheck/method"
)

func init() { register(method.CheckIsolation, func() checkRun { return &isolationCheck{} }) }

// isolationCheck judges the requests of the surface's groups other than
// its primary: whether other addresses have budgets of their own. On a
// surface counted by an API key (Config.Keys) the groups are keys, and it
// also judges the limit key's probes from a second address
// (method.StreamSpoofAddress) against the plain probes of the same span,
// by the spoof check's exact test: a limit counted by the key refuses them
// alike, one counted by the key and the address admits them.
type isolationCheck struct {
	proven int
	// address and plain count the limit key's probes from the second
	// address and the plain ones beside them, on a surface counted by key.
	address, plain probeCount
	// The refusals of other addresses by the most requests of their own
	// that any window, of any length, could have held when each was
	// counted, itself included: every request of the address sent before
	// it, and those in flight with it (its index in the group, plus 1,
	// plus its ambiguous ones). A window longer than the documented one
	// (the fit weighs up to twice as long) then explains no refusal
	// counted here. Per group, its first two refusals that no window of
	// its own explains at the documented limit.
	refusedWith map[int32]int
	bad         byGroup[[]isolationRefusal]
}

// isolationRefusal is a refusal of another address: how many its own
// window could have held, and where.
type isolationRefusal struct {
	held int32
	what string
}

func (c *isolationCheck) judgedOther(s *surfaceRun, g *groupRun, j *judged) {
	r := &j.Record
	if refused(r) {
		held := j.Index + 1 + j.Ambiguous
		if held > int32(s.L) || r.Start-int64(s.W) < s.sentBefore {
			// explained at the documented limit by its own requests, or
			// by what an earlier run sent from it within its window
			return
		}
		if c.refusedWith == nil {
			c.refusedWith = map[int32]int{}
		}
		c.refusedWith[held]++ // at most L distinct counts
		if bad := c.bad.at(g); len(*bad) < 2 {
			*bad = append(*bad, isolationRefusal{held, fmt.Sprintf("%s refused at %s having sent %d before it", g.source, at(r, s.t0), j.Index)})
		}
	}
	if admitted(r) && s.locked(r) {
		c.proven++
	}
}

func (c *isolationCheck) judgedPrimary(s *surfaceRun, p sighting) {
	r := &p.Record
	if s.key == "" || !admitted(r) && !refused(r) {
		return
	}
	t := &c.plain
	switch p.stream {
	case method.StreamSpoofAddress:
		t = &c.address
	case method.StreamSpoofControl:
	default:
		return
	}
	if admitted(r) {
		t.admitted++
	} else {
		t.refused++
	}
}

// shared counts the refusals of other addresses that their own windows
// cannot explain at the least limit the run showed (nor an earlier run's
// requests from the same address, when one is known: see sentBefore): the documented one,
// or the primary's observed limit when that is lower (of a documented
// token bucket, the burst its first episode showed) (a lower limit
// explains another address's refusal after that many of its own; only a
// budget shared with other addresses explains one before). It returns the
// count and up to two of them.
func (c *isolationCheck) shared(e *evidence) (int, []string) {
	lim := int32(e.L)
	if e.anyRefused && int32(e.obs) < lim {
		lim = int32(e.obs)
	}
	// A bucket's observed limit counts its refills over a window: what
	// it showed of its burst is the first episode's admissions less them.
	if b, ok := e.bucketShown(); ok && e.anyRefused && int32(b) < lim {
		lim = int32(b)
	}
	n := 0
	for held, k := range c.refusedWith {
		if held <= lim {
			n += k
		}
	}
	var bad []string
	for _, src := range e.sd.Sources {
		for _, b := range c.bad.of(e.groups[src]) {
			if b.held <= lim && len(bad) < 2 {
				bad = append(bad, b.what)
			}
		}
	}
	return n, bad
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

// judge: another address (key) refused though its own window provably
// allowed it fails; one admitted while the limit address (key) was
// provably over its limit passes. On a surface counted by key, the limit
// key from a second address must also be refused as the plain probes
// beside it were.
func (c *isolationCheck) judge(e *evidence) (string, string) {
	if e.key == keyGlobal {
		return c.judgeGlobal(e)
	}
	other, others := e.peer(), e.peers()
	if len(e.sd.Sources) < 2 {
		return Skip, fmt.Sprintf("one source %s only (%s): isolation needs a second (--sources)", other, e.primary)
	}
	n, bad := c.shared(e)
	if n > 0 {
		return Fail, fmt.Sprintf("another %s shares the budget of %s: %s refused with fewer in its own window than %s is shown to admit (%s)", other, e.primary, human.Count(n, "request", ""), e.primary, strings.Join(bad, "; "))
	}
	var byKey string
	if e.key != "" {
		t := c.keyTest()
		said := fmt.Sprintf("%d of %d admitted against %d of %d plain probes of %s in the same span; exact one-sided test, false-alarm rate %g", t.forged.admitted, t.forged.n(), c.plain.admitted, c.plain.n(), e.primary, spoofAlpha)
		switch {
		case t.failed:
			return Fail, fmt.Sprintf("%s sent from a second address was admitted more often than from the limit address (%s; p = %.2g): the target counts %s per address, not by %s alone", e.primary, said, t.p, e.primary, e.key)
		case c.proven == 0:
		case c.address.n() == 0 || c.plain.refused+c.address.refused == 0:
			return Inconclusive, fmt.Sprintf("none of %s's probes from a second address was answered while %s was refused: whether the key or the address is counted is not shown", e.primary, e.primary)
		case t.best > spoofAlpha:
			return Inconclusive, fmt.Sprintf("too few of %s's probes from a second address answered, or plain ones refused, to tell whether the key or the address is counted (%s; p ≥ %.2g even were every one admitted)", e.primary, said, t.best)
		}
		byKey = fmt.Sprintf(", and %s sent from a second address was refused as from the limit address (%s): the budget is the key's", e.primary, said)
	}
	if c.proven == 0 {
		return Inconclusive, fmt.Sprintf("no request from another %s was admitted while %s was provably over its limit (timing too uncertain, or none sent then)", other, e.primary)
	}
	return Pass, fmt.Sprintf("%d requests from other %s were admitted while %s was provably over its limit%s", c.proven, others, e.primary, byKey)
}

// peer is what the surface's other groups are: other addresses, or other
// keys where its limit is counted by an API key.
func (s *surfaceRun) peer() string {
	if s.key != "" && s.key != keyGlobal {
		return "key"
	}
	return "address"
}

// peers is peer's plural.
func (s *surfaceRun) peers() string {
	if s.key != "" && s.key != keyGlobal {
		return "keys"
	}
	return "addresses"
}

// keyGlobal is Config.Keys's word for a limit counted for everybody.
const keyGlobal = "global"

// judgeGlobal judges a limit counted for everybody: its probes from a
// second address must be refused as the plain probes from the limit
// address beside them were (see keyTest); admitted more often, the
// second address has a budget of its own.
func (c *isolationCheck) judgeGlobal(e *evidence) (string, string) {
	t := c.keyTest()
	said := fmt.Sprintf("%d of %d admitted against %d of %d plain probes from the limit address in the same span; exact one-sided test, false-alarm rate %g", t.forged.admitted, t.forged.n(), c.plain.admitted, c.plain.n(), spoofAlpha)
	switch {
	case t.failed:
		return Fail, fmt.Sprintf("requests from a second address were admitted more often than from the limit address (%s; p = %.2g): the target counts each address apart, not one budget for everybody", said, t.p)
	case c.address.n() == 0 || c.plain.refused+c.address.refused == 0:
		return Inconclusive, "no probe from a second address was answered while the limit address was refused (with one --sources address none is sent): whether the budget is everybody's is not shown"
	case t.best > spoofAlpha:
		return Inconclusive, fmt.Sprintf("too few probes from a second address answered, or plain ones refused, to tell whether the budget is everybody's (%s; p ≥ %.2g even were every one admitted)", said, t.best)
	}
	return Pass, fmt.Sprintf("requests from a second address were refused as from the limit address (%s): the budget is everybody's", said)
}

// keyTest is the exact one-sided test of the limit key's probes from a
// second address against the plain probes of the same span (see
// spoofCheck.tests), at spoofAlpha.
func (c *isolationCheck) keyTest() spoofTest {
	f := c.address
	N, K := f.n()+c.plain.n(), f.admitted+c.plain.admitted
	t := spoofTest{forged: f, p: hyperUpperTail(N, K, f.n(), f.admitted), best: hyperUpperTail(N, f.n()+c.plain.admitted, f.n(), f.n())}
	t.failed = f.n() > 0 && t.p <= spoofAlpha
	return t
}

// judgeSpent judges isolation in a run whose first burst says the limit
// address's budget was not whole at the start. A budget shared with other
// addresses is one explanation of that (the contract probes or another
// address's traffic spent it), and it is proved the same way as ever:
// another address refused with fewer in its own window than the limit
// address is shown to admit. Without that proof the check judges nothing
// here.
func (c *isolationCheck) judgeSpent(e *evidence) (string, string, bool) {
	if len(e.sd.Sources) < 2 {
		return "", "", false
	}
	n, bad := c.shared(e)
	if n == 0 {
		return "", "", false
	}
	return Fail, fmt.Sprintf("another %s shares the budget of %s: %s refused with fewer in its own window than %s is shown to admit (%s); this also explains the early refusals of its first burst",
		e.peer(), e.primary, human.Count(n, "request", ""), e.primary, strings.Join(bad, "; ")), true
}
