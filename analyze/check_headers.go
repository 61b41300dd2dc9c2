package analyze

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/decode"

	"github.com/connectbyjbrh/ratecheck/method"
)

func init() {
	register(method.CheckHeaders, func() checkRun { return &headersCheck{memo: map[string]*advertised{}} })
}

// headersCheck holds what the primary's answers advertised of the limit
// (see advertised) to what the target did: the quota against the
// requests in the window of each admission and refusal, the window
// against the effective one, the remaining quota against the admissions
// it should fall by, and each moment (reset, Retry-After) against the
// next request, sent with nothing between.
type headersCheck struct {
	memo      map[string]*advertised // parsed, by the answer's lines
	answers   int                    // the primary's answers
	with      int                    // of them, those that advertised
	fields    []string               // the fields seen, in order of first sight
	malformed []string               // the first few malformed fields
	nBad      int
	first     advertised // the first well-formed quota and window seen
	// fresh: an admission of the onset advertised the quota less one
	// remaining (the target counted nothing earlier in its window)
	fresh bool
	// what was held to the evidence, and the contradictions found
	quotaHeld, remainingHeld, momentsHeld int
	found                                 []headerFinding
	// the primary's requests answered at or after the latest one's send
	// start, in send order, and the latest answered before that
	recent   []answered
	lastDone answered
}

// An answered request of the primary, with what it advertised (nil:
// nothing, or a forged-header probe, whose key is not known).
type answered struct {
	decode.Record
	ad *advertised
}

// maxRecent bounds the requests in flight the check follows; past it,
// moments are not held until the flight drains.
const maxRecent = 1024

// A headerFinding is one kind of contradiction: the first example, and
// how many. sureOnly findings hold only where the fit names a limiter
// whose remaining quota only falls within a window (sliding-log).
type headerFinding struct {
	key, first string
	n          int
	sureOnly   bool
	needFresh  bool // held only where the target showed an empty window at the start
}

// note counts a contradiction of kind key.
func (c *headersCheck) note(key string, sureOnly bool, example func() string) {
	c.noteFresh(key, sureOnly, false, example)
}

// noteFresh counts a contradiction that needFresh, if set.
func (c *headersCheck) noteFresh(key string, sureOnly, needFresh bool, example func() string) {
	for i := range c.found {
		if c.found[i].key == key {
			c.found[i].n++
			return
		}
	}
	if len(c.found) < 16 {
		c.found = append(c.found, headerFinding{key: key, first: example(), n: 1, sureOnly: sureOnly, needFresh: needFresh})
	}
}

// parsed returns the fields r's answer advertised (nil: none).
func (c *headersCheck) parsed(s *surfaceRun, p *sighting) *advertised {
	lines := s.tab.Advertised(&p.Record)
	if lines == "" {
		return nil
	}
	if a, ok := c.memo[lines]; ok {
		return a
	}
	a := parseAdvert(lines)
	if len(c.memo) < 4096 {
		c.memo[lines] = &a
	}
	return &a
}

func (c *headersCheck) judgedPrimary(s *surfaceRun, p sighting) {
	c.answers++
	a := c.parsed(s, &p)
	if !p.forged && a != nil {
		c.take(a)
		c.holdQuota(s, &p, a)
		c.holdRemaining(s, &p, a)
	}
	if !p.forged {
		c.holdMoments(s, &p)
	}
	if p.forged { // another key's answer, maybe: nothing is held to it
		a = nil
	}
	c.follow(answered{p.Record, a})
}

// follow adds x (sent after every request before it) to the requests
// followed: those answered before x was sent are done.
func (c *headersCheck) follow(x answered) {
	kept := c.recent[:0]
	for _, r := range c.recent {
		if r.End < x.Start {
			if r.End > c.lastDone.End || c.lastDone.Start == 0 {
				c.lastDone = r
			}
			continue
		}
		kept = append(kept, r)
	}
	c.recent = kept
	if len(c.recent) >= maxRecent {
		c.recent = c.recent[:0]
		c.lastDone = answered{}
		return
	}
	c.recent = append(c.recent, x)
}

// take counts what a advertised.
func (c *headersCheck) take(a *advertised) {
	if !a.any() {
		return
	}
	c.with++
	for _, f := range a.fields {
		if !slices.Contains(c.fields, f) {
			c.fields = append(c.fields, f)
		}
	}
	for _, m := range a.malformed {
		c.nBad++
		if len(c.malformed) < 3 && !slices.Contains(c.malformed, m) {
			c.malformed = append(c.malformed, m)
		}
	}
	if c.first.quota.field == "" {
		c.first.quota = a.quota
	}
	if c.first.window.field == "" {
		c.first.window = a.window
	}
}

// holdQuota holds an advertised quota q to the observed limit: in the
// first episode (up to the first refusal's answer, where every limiter
// family admits its quota from a fresh window), a refusal with at most q
// requests in its window, itself included, came before the quota was
// spent (held only where an answer showed the window empty at the start:
// requests sent before the run may be in it), and an admission with q
// others surely admitted in its window went past it. Judged at the
// documented window, or where the advertised one is within a second of
// it.
func (c *headersCheck) holdQuota(s *surfaceRun, p *sighting, a *advertised) {
	q := a.quota
	if q.field == "" || p.Start > p.g.firstRefusalEnd || (a.window.field != "" && absDur(time.Duration(a.window.n)*time.Second-s.W) > time.Second) {
		return
	}
	c.quotaHeld++
	switch {
	case refused(&p.Record) && 1+int64(p.Definite)+int64(p.Ambiguous) <= q.n:
		c.noteFresh("quota-early", false, true, func() string {
			return fmt.Sprintf("%s=%d, but the request at %s was refused with at most %d requests in its window of %v",
				q.field, q.n, at(&p.Record, s.t0), 1+p.Definite+p.Ambiguous, s.W)
		})
	case p.Admitted() && 1+int64(p.DefiniteAdmitted) > q.n:
		c.note("quota-past", false, func() string {
			return fmt.Sprintf("%s=%d, but the request at %s was admitted with %d others surely admitted in its window of %v",
				q.field, q.n, at(&p.Record, s.t0), p.DefiniteAdmitted, s.W)
		})
	}
}

// holdRemaining holds an absolute reset to naming no moment already past,
// and the remaining quota: not positive on a 429 (of the least of the
// policies advertised), and, on an admission of the onset,
// no more than the quota less the admissions surely counted before it
// (it falls by one per admission).
func (c *headersCheck) holdRemaining(s *surfaceRun, p *sighting, a *advertised) {
	if rs := a.reset; rs.absolute {
		c.momentsHeld++
		if int64(time.Second)*(rs.secs+1) < p.Start {
			c.note("reset-past", false, func() string {
				return fmt.Sprintf("%s on the answer at %s names a moment already past", rs, at(&p.Record, s.t0))
			})
		}
	}
	r := a.remaining
	if r.field == "" {
		return
	}
	c.remainingHeld++
	if refused(&p.Record) && r.n > 0 {
		c.note("remaining-429", false, func() string {
			return fmt.Sprintf("%s=%d on the 429 at %s: a refusal leaves no quota", r.field, r.n, at(&p.Record, s.t0))
		})
	}
	q := a.quota
	if q.field == "" {
		q = c.first.quota
	}
	onset := p.Admitted() && p.Start <= p.g.firstRefusalEnd
	if q.field != "" && onset && r.n == q.n-1 {
		c.fresh = true
	}
	if q.field != "" && onset && r.n > q.n-1-int64(p.DefiniteAdmitted) {
		c.note("remaining-falls", true, func() string {
			return fmt.Sprintf("%s=%d on the admission at %s, with %d admissions surely counted before it in its window against %s=%d: it did not fall by one per admission",
				r.field, r.n, at(&p.Record, s.t0), p.DefiniteAdmitted, q.field, q.n)
		})
	}
}

// holdMoments holds the moments earlier answers advertised to p.
//
// Retry-After: when nothing was in flight as p was sent, the request the
// target counted last before p is one answered at or after the send of
// the request before p (it was counted after that send); when each of
// them was a 429 whose Retry-After had passed by p's send, whichever
// came last told p's client it could retry: p must not be refused,
// unless another request may have been counted between that 429 and p
// and taken the place promised: one sent while p was in flight (it may
// overtake p on the way), or one unanswered. p is held only where the
// address sent nothing else from the first of those 429s' sends to p's
// answer.
//
// The current draft's t (§4.1.2: the time until more quota is made
// available): when the latest answer before p's send left no quota, a
// request admitted before its moment contradicts it (requests counted
// meanwhile can only spend quota). One refused after the moment does
// not: quota might not be made available then (§7.4). The older resets
// (RateLimit-Reset, draft 7's reset, X-RateLimit-Reset) name when the
// current window resets, which a sliding-window counter passes with its
// quota coming back before it: they are held only to not naming a
// moment already past (see holdRemaining).
func (c *headersCheck) holdMoments(s *surfaceRun, p *sighting) {
	if ok, last := c.lastAnswered(p.Start); ok && last.ad != nil {
		exhausted := refused(&last.Record) || (last.ad.remaining.field != "" && last.ad.remaining.n <= 0)
		if rs := last.ad.reset; rs.field == "RateLimit t" && exhausted && p.End <= rs.before(last.Start) {
			c.momentsHeld++
			if p.Admitted() {
				c.note("reset", false, func() string {
					return fmt.Sprintf("%s with no quota left at %s, but the request at %s, answered before that moment, was admitted",
						rs, at(&last.Record, s.t0), at(&p.Record, s.t0))
				})
			}
		}
	}
	if len(c.recent) == 0 {
		return
	}
	first, members := c.recent[0].Start, 0
	for _, r := range c.recent {
		if r.End > p.Start || r.ad == nil || r.ad.retryAfter.field == "" || !refused(&r.Record) || p.Start < r.ad.retryAfter.after(r.End) {
			return
		}
		if r.End > first {
			members++
		}
	}
	if p.End > p.Start {
		members++ // p itself
	}
	if all := p.g.model.all; first < p.Start-all.W || all.countedBetween(first, p.End) > members {
		return // another request may have taken what was promised
	}
	c.momentsHeld++
	if refused(&p.Record) {
		r := c.recent[len(c.recent)-1]
		c.note("retry-after", false, func() string {
			return fmt.Sprintf("%s on the 429 at %s, but the request at %s, sent after it and alone in flight from the address until its answer, was refused",
				r.ad.retryAfter, at(&r.Record, s.t0), at(&p.Record, s.t0))
		})
	}
}

// lastAnswered returns the request answered last before start.
func (c *headersCheck) lastAnswered(start int64) (bool, answered) {
	last, ok := c.lastDone, c.lastDone.Start != 0
	for _, r := range c.recent {
		if r.End <= start && (!ok || r.End > last.End) {
			last, ok = r, true
		}
	}
	return ok, last
}

// judgeSpent judges the advertisement of a run whose first burst says the
// budget was spent before it (see freshStart) as any other: no
// contradiction it names depends on a whole budget at the start (a quota
// refused early is held only where an answer showed the window empty).
func (c *headersCheck) judgeSpent(e *evidence) (string, string, bool) {
	v, d := c.judge(e)
	return v, d, v != Inconclusive
}

func (c *headersCheck) judge(e *evidence) (string, string) {
	if c.with == 0 {
		return Skip, fmt.Sprintf("nothing advertised: none of the %d answers to %s carried RateLimit-Policy, RateLimit, RateLimit-Limit/-Remaining/-Reset, X-RateLimit-* or Retry-After", c.answers, e.primary)
	}
	adv := fmt.Sprintf("%d of %d answers from %s advertised %s", c.with, c.answers, e.primary, strings.Join(c.fields, ", "))
	if c.nBad > 0 {
		adv += fmt.Sprintf("; %d malformed, ignored (%s)", c.nBad, strings.Join(c.malformed, "; "))
	}
	family := e.sd.Fit.Best.Family
	var contra []string
	for _, f := range c.found {
		if f.sureOnly && family != familySlidingLog {
			continue
		}
		if f.needFresh && !c.fresh {
			adv += fmt.Sprintf("; %d refusals came before the advertised quota was spent, but no answer showed an empty window at the start (the address may have sent within the window before the run: wait a window)", f.n)
			continue
		}
		x := f.first
		if f.n > 1 {
			x += fmt.Sprintf(" (and %d more)", f.n-1)
		}
		contra = append(contra, x)
	}
	if w := c.windowContradiction(e); w != "" {
		contra = append(contra, w)
	}
	if len(contra) > 0 {
		return Fail, fmt.Sprintf("the advertised limit contradicts the evidence: %s; %s", strings.Join(contra, "; "), adv)
	}
	held := c.quotaHeld + c.remainingHeld + c.momentsHeld
	if held == 0 {
		return Inconclusive, fmt.Sprintf("nothing advertised could be held to the evidence (no well-formed quota, remaining quota or moment a request tested); %s", adv)
	}
	return Pass, fmt.Sprintf("what was advertised agrees with the evidence (%d quotas, %d remaining counts, %d moments held)%s; %s",
		c.quotaHeld, c.remainingHeld, c.momentsHeld, c.agreement(e), adv)
}

// windowContradiction holds an advertised window to the effective one,
// where the fit names a sliding log (whose window the effective one is):
// beyond a second and 5 % apart, they disagree.
func (c *headersCheck) windowContradiction(e *evidence) string {
	w := c.first.window
	eff := e.sd.Fit.EffectiveWindow
	if w.field == "" || eff <= 0 || e.sd.Fit.Best.Family != familySlidingLog {
		return ""
	}
	adv := time.Duration(w.n) * time.Second
	if absDur(adv-eff) <= time.Second+adv/20 {
		c.momentsHeld++ // a window held, reported with the moments
		return ""
	}
	return fmt.Sprintf("%s=%d, but the effective window is %v", w.field, w.n, eff.Round(time.Millisecond))
}

// agreement names the quota beside the observed limit.
func (c *headersCheck) agreement(e *evidence) string {
	q := c.first.quota
	if q.field == "" || e.sv.ObservedLimit == nil {
		return ""
	}
	return fmt.Sprintf("; %s=%d, observed_limit %d", q.field, q.n, *e.sv.ObservedLimit)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
