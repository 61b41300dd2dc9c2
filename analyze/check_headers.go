package analyze

import (
	"fmt"
	"slices"
	"strings"
	"time"

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
	// what was held to the evidence, and the contradictions found
	quotaHeld, remainingHeld, momentsHeld int
	found                                 []headerFinding
	// the previous plain request of the primary, with what it advertised
	prev         *sighting
	prevAd       *advertised
	maxEnd       int64 // the latest answer of the requests before prev
	maxEndBefore int64
}

// A headerFinding is one kind of contradiction: the first example, and
// how many. sureOnly findings hold only where the fit names a limiter
// whose remaining quota only falls within a window (sliding-log).
type headerFinding struct {
	key, first string
	n          int
	sureOnly   bool
}

// note counts a contradiction of kind key.
func (c *headersCheck) note(key string, sureOnly bool, example func() string) {
	for i := range c.found {
		if c.found[i].key == key {
			c.found[i].n++
			return
		}
	}
	if len(c.found) < 16 {
		c.found = append(c.found, headerFinding{key: key, first: example(), n: 1, sureOnly: sureOnly})
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
	if p.forged { // another key's answer: nothing is held across it
		c.prev, c.prevAd = nil, nil
		c.maxEnd = max(c.maxEnd, p.End)
		return
	}
	if a != nil {
		c.take(a)
		c.holdQuota(s, &p, a)
		c.holdRemaining(s, &p, a)
	}
	c.holdMoments(s, &p)
	c.maxEndBefore = c.maxEnd
	c.maxEnd = max(c.maxEnd, p.End)
	sc := p
	c.prev, c.prevAd = &sc, a
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

// holdQuota holds an advertised quota q to the request's window: a
// refusal with at most q requests in its window, itself included, came
// before the quota was spent; an admission with q others surely admitted
// in its window went past it. Judged only at the documented window, or
// where the advertised one is within its second of it.
func (c *headersCheck) holdQuota(s *surfaceRun, p *sighting, a *advertised) {
	q := a.quota
	if q.field == "" || (a.window.field != "" && absDur(time.Duration(a.window.n)*time.Second-s.W) > time.Second) {
		return
	}
	c.quotaHeld++
	switch {
	case refused(&p.Record) && 1+int64(p.Definite)+int64(p.Ambiguous) <= q.n:
		c.note("quota-early", false, func() string {
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

// holdRemaining holds the remaining quota: not positive on a 429 (of the
// least of the policies advertised), and, on an admission of the onset,
// no more than the quota less the admissions surely counted before it
// (it falls by one per admission).
func (c *headersCheck) holdRemaining(s *surfaceRun, p *sighting, a *advertised) {
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
	if q.field != "" && p.Admitted() && p.Start <= p.g.firstRefusalEnd && r.n > q.n-1-int64(p.DefiniteAdmitted) {
		c.note("remaining-falls", true, func() string {
			return fmt.Sprintf("%s=%d on the admission at %s, with %d admissions surely counted before it in its window against %s=%d: it did not fall by one per admission",
				r.field, r.n, at(&p.Record, s.t0), p.DefiniteAdmitted, q.field, q.n)
		})
	}
}

// holdMoments holds the moments the previous request advertised to this
// one, when nothing was sent between them and every earlier request was
// answered before the previous one was sent (nothing else could be
// counted between): a request sent after the Retry-After of a 429 must
// not be refused; one answered before the reset of an exhausted quota
// must not be admitted (the draft's t is the time until more quota is
// made available, §4.1.2; a request refused after it is allowed, §7.4).
func (c *headersCheck) holdMoments(s *surfaceRun, p *sighting) {
	prev, a := c.prev, c.prevAd
	if prev == nil || a == nil || prev.End > p.Start || c.maxEndBefore > prev.Start {
		return
	}
	exhausted := refused(&prev.Record) || (a.remaining.field != "" && a.remaining.n <= 0)
	if ra := a.retryAfter; ra.field != "" && refused(&prev.Record) && p.Start >= ra.after(prev.End) {
		c.momentsHeld++
		if refused(&p.Record) {
			c.note("retry-after", false, func() string {
				return fmt.Sprintf("%s on the 429 at %s, but the next request, sent %v later with nothing between, was refused",
					ra, at(&prev.Record, s.t0), time.Duration(p.Start-prev.End).Round(time.Millisecond))
			})
		}
	}
	if rs := a.reset; rs.field != "" && exhausted && p.End <= rs.before(prev.Start) {
		c.momentsHeld++
		if p.Admitted() {
			c.note("reset", false, func() string {
				return fmt.Sprintf("%s with no quota left at %s, but the next request, answered %v later (before that moment), was admitted",
					rs, at(&prev.Record, s.t0), time.Duration(p.End-prev.Start).Round(time.Millisecond))
			})
		}
	}
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
		if f.sureOnly && family != FamilySlidingLog {
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
	if w.field == "" || eff <= 0 || e.sd.Fit.Best.Family != FamilySlidingLog {
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
