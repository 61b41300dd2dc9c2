package analyze

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/human"
)

// This file holds a limit whose contract documents its limiter: the
// family it names, which rolling and onset hold the limit to instead of
// a rolling window.

// Family is the limiter a contract documents for a limit, when it is not
// a sliding log (which every limit is held to without one).
type Family struct {
	// Name is fixed-window, sliding-window-counter or token-bucket.
	Name string
	// Refill, for a token bucket, is how long it takes to refill its
	// burst, which is the limit's quota: the burst over the rate. The fit
	// replays a bucket of that refill beside the ones it scans.
	Refill time.Duration
}

// documented reports whether f names a limiter other than a sliding log.
func (f Family) documented() bool { return f.Name != "" && f.Name != familySlidingLog }

// describe says the documented limiter in words, at limit l per window w.
func (f Family) describe(l int, w time.Duration) string {
	switch f.Name {
	case familyTokenBucket:
		return fmt.Sprintf("token bucket of %d refilling %d per %v (one every %s)", l, l, f.Refill.Round(time.Millisecond), human.Duration(f.Refill/time.Duration(max(l, 1))))
	case familyFixedWindow:
		return fmt.Sprintf("fixed window of %d per %v", l, human.Duration(w))
	}
	return fmt.Sprintf("sliding-window counter of %d per %v", l, human.Duration(w))
}

// is reports whether candidate c is the documented limiter at limit l:
// its family, one limiter, the limit, and for a token bucket the refill.
func (f Family) is(c Candidate, l int) bool {
	return c.Family == f.Name && c.Replicas <= 1 && c.Limit == l && (f.Name != familyTokenBucket || c.Refill == f.Refill)
}

// refill has the fit replay token buckets of refill d (0: none) besides
// the ones it scans.
func (f *familyFit) refill(d time.Duration) {
	if d <= 0 {
		return
	}
	for _, rps := range [][]*replay{f.starts, f.ends, f.mixes} {
		for _, r := range rps {
			r.docRefill = int64(d)
		}
	}
}

// documentedBucket is the token bucket of the documented refill at the
// documented limit, replayed in each order as the fit's candidates are
// (see better); the zero Candidate where no refill was documented.
func (f *familyFit) documentedBucket() Candidate {
	if len(f.starts) == 0 || f.starts[0].docRefill == 0 {
		return Candidate{}
	}
	var orders [3]Candidate
	for o, r := range []*replay{f.starts[0], f.ends[0], f.mixes[0]} {
		i := slices.IndexFunc(r.buckets, func(b tokenBucket) bool { return b.W == r.docRefill })
		if i < 0 {
			return Candidate{}
		}
		orders[o] = Candidate{Family: familyTokenBucket, CountsRefused: boolPtr(false), Limit: r.limit, Window: time.Duration(r.w), Refill: time.Duration(r.docRefill), Mismatches: r.buckets[i].mis}
	}
	return better(orders[0], orders[1], orders[2])
}

// fitsDocumented says whether the run named the documented limiter,
// decided: the fit's best at the documented limit (a token bucket at its
// documented refill), which no other family fits as well within what the
// run's timing can move.
func (e *evidence) fitsDocumented() bool {
	return e.family.documented() && e.sv.Model == e.family.Name && e.sv.ModelDecided && e.family.is(e.sd.Fit.Best, e.L)
}

// judgeFamily holds the limit to the limiter its contract documents,
// rather than to a rolling window (see rollingCheck.judge, which has
// judged the evidence enough): a run whose fit names it, decided,
// passes, and the leaks and false throttles a rolling window of L per W
// would count are that limiter's; one that names another limiter, or
// the documented family at another refill, by more than the timing can
// move fails; one the timing leaves open between the documented and
// another is inconclusive.
func (c *rollingCheck) judgeFamily(e *evidence) (string, string) {
	want, b := e.family.describe(e.L, e.W), e.sd.Fit.Best
	asLog := fmt.Sprintf("against a rolling window of %d per %v the run would count %s and %s, which are the %s's",
		e.L, human.Duration(e.W), human.Count(e.sd.Leaks, "leak", ""), human.Count(e.sd.FalseThrottles, "false throttle", ""), e.family.Name)
	n := human.Count(c.judgedN, "request", "")
	switch {
	case e.fitsDocumented():
		return Pass, fmt.Sprintf("%s from %s fit the documented %s (%s), and no other family within what the run's timing can move; %s",
			n, e.primary, want, human.Count(b.Mismatches, "mismatch", "mismatches"), asLog)
	case !explainsRun(b, e.primaryAdmitted()):
		return Fail, fmt.Sprintf("%s from %s fit no limiter the fit replays, the documented %s included: the best, %v, misplaces more than one admission in five", n, e.primary, want, b)
	case e.sv.Model == familyUnknown:
		return Inconclusive, fmt.Sprintf("%s from %s: the run's timing leaves the family unnamed (best fit %v), so it cannot show the documented %s", n, e.primary, b, want)
	case e.sv.Model == e.family.Name && b.Family == familyTokenBucket && !e.family.is(b, e.L) && e.sd.Fit.documented.Family != "" && e.sd.Fit.documented.fewest() <= b.worst()+oneMisplaced:
		return Inconclusive, fmt.Sprintf("%s from %s fit a token bucket best, %v, but the documented %s fits as well within what the run's timing can move (%s): the run cannot tell the refills apart",
			n, e.primary, b, want, human.Count(e.sd.Fit.documented.Mismatches, "mismatch", "mismatches"))
	case e.sv.Model == e.family.Name && e.family.is(b, e.L):
		return Inconclusive, fmt.Sprintf("%s from %s fit the documented %s best (%s), but %s fit as well within what the run's timing can move: the run cannot tell them apart",
			n, e.primary, want, human.Count(b.Mismatches, "mismatch", "mismatches"), strings.Join(e.sv.ModelAlternatives, ", "))
	case slices.Contains(e.sv.ModelAlternatives, e.family.Name):
		return Inconclusive, fmt.Sprintf("%s from %s fit %v best, but the documented %s fits as well within what the run's timing can move: the run cannot tell them apart", n, e.primary, b, want)
	}
	return Fail, fmt.Sprintf("%s from %s fit %v, not the documented %s, by more than the run's timing can move", n, e.primary, b, want)
}

// bucketOnset is the onset of a documented token bucket: the requests of
// the first episode, in send order, which judge holds to the bucket's
// bound. However full it was, a bucket of B refilling at R admits at most
// B + R·d in any span of d: the admitted requests of the episode up to
// one, all sent no earlier than the first of them and answered by the
// latest answer among them, are more than that for the span between
// them only where the target admitted past the bucket.
type bucketOnset struct {
	spans []onsetSpan
}

// onsetSpan is a request of the first episode: its send and answer, and
// whether it was admitted.
type onsetSpan struct {
	start, end int64
	ok         bool
}

// leaks counts the admissions past a bucket of burst l refilled in
// refill, and returns the last admitted request's bound (the most the
// bucket could admit from the first admission to its answer) with the
// admissions it is held against.
func (o *bucketOnset) leaks(l int, refill time.Duration) (leaks, admitted int, bound float64, span time.Duration) {
	var first, last int64
	for _, p := range o.spans {
		if !p.ok {
			continue
		}
		if admitted == 0 {
			first = p.start
		}
		admitted++
		last = max(last, p.end)
		span = time.Duration(last - first)
		bound = float64(l) + float64(l)*float64(span)/float64(refill)
		if float64(admitted) > math.Floor(bound) {
			leaks++
		}
	}
	return leaks, admitted, bound, span
}

// bucketShown is the least burst the limit address's first episode shows
// a documented token bucket has: what it admitted less what the bucket
// could have refilled in their span (false: no documented bucket, or
// nothing admitted).
func (s *surfaceRun) bucketShown() (int, bool) {
	if s.family.Name != familyTokenBucket {
		return 0, false
	}
	for _, c := range s.checks {
		if o, ok := c.run.(*onsetCheck); ok {
			_, admitted, _, span := o.bucket.leaks(s.L, s.family.Refill)
			if admitted == 0 {
				return 0, false
			}
			return max(admitted-int(math.Ceil(float64(s.L)*float64(span)/float64(s.family.Refill))), 0), true
		}
	}
	return 0, false
}
