package analyze

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/human"
)

// timingSample is how many answers of each kind (admissions, refusals) a
// group keeps to say how long they took: every one of verify's limit
// address, a sample beyond.
const timingSample = 1024

// decidingShare is the share of the window within which the plan decides
// what it is built to decide: the simulated busy host it is proved on
// answers within it (docs/method.md), and so does a quiet one.
const decidingShare = 0.01

// orderedShare is how much longer than the fastest refusal of the run a
// refusal may take before it counts as held apart by the host, and
// unorderedBins at how many moments (hundredths of the window, by
// response) refusals held apart must come back to make the fit's orders
// untrusted. A limiter answers a refusal at once, so refusals that came
// back far apart from the fastest were held by the host, before the
// limiter or after it. A freeze holds every request in flight alike and
// lets them all go at its end: its refusals come back at one moment,
// however many it held, and the limiter counted them in their order. A
// host whose CPUs other work takes holds requests one by one and lets
// them go at moment after moment (a starved host: two requests in five
// wait up to 40 % of the window); the limiter then counted them in an
// order that is neither their sends', their responses' nor the mix's,
// the orders the fit replays and holds it to lie between. There nginx's
// leaky bucket fitted worse than a fixed window or a log in every order
// in 84 runs of 100, none of which named it among the families left
// open; and a run whose six refusals each took a sixth to a third of the
// window, none more than a tenth longer than those sent near it, named
// a fixed window and a log. Such a run's model is unknown, and its
// timing note says what window would decide. A heavy tail holds one
// request at a time, rarely: one refusal of a loaded host's run held a
// second is one moment. At a tenth of the window, a suite run of the
// embedded target on a busy 2-core machine decided a wrong family: its
// 60 spoof probes, each refused at once by the target, took 200 to 351 ms
// of the 4 s window (8.8 %) and came back over a quarter second, and a
// sliding-window counter (14 mismatches in every order) was decided
// against the target's log of 4 s (39, 30, 43) and the scan's log of
// 4.16 s (17): which of a counter's edge and a log's the window held is
// what those held probes moved. A twentieth names no family there.
const (
	orderedShare  = 0.05
	unorderedBins = 3
)

// unordered reports whether the limit address's refusals held apart (see
// orderedShare) came back at unorderedBins moments or more.
func (s *surfaceRun) unordered() bool {
	g := s.primary
	return g != nil && len(g.heldApartEnds) >= unorderedBins
}

// timingNote says why the run's timing left open what it left open on
// this surface (sv: a family not told from another, a check of the limit
// inconclusive), when the limit address's answers took longer than the
// plan decides through: how long (admissions and refusals apart), against
// the window, and the window at which that would be within decidingShare.
// Where the admissions took much longer than the refusals, it says that a
// target holding what it admits for a share of its window (nginx's delay)
// holds it as long at any window: the run cannot tell that from a busy
// host. Where the host held refusals apart (see unordered), it says so
// first, whatever the p99. Empty when nothing is open, or the answers
// came back within decidingShare and nothing was held apart.
func (s *surfaceRun) timingNote(sv *SurfaceVerdict) string {
	if s.primary == nil || !timingOpen(sv) {
		return ""
	}
	g := s.primary
	held := ""
	if s.unordered() {
		d := time.Duration(g.slowest.high - g.slowest.lo)
		held = fmt.Sprintf("the host held refusals to %s apart: some took %v longer than the fastest (%v), %.1f %% of the %v window, and came back at %d moments or more, so the order its limiter counted in is lost",
			g.source, human.Duration(d), human.Duration(time.Duration(g.slowest.lo)), 100*float64(d)/float64(s.W), s.W, unorderedBins)
		if all := p99Of(&g.admLat, &g.refLat); all <= time.Duration(decidingShare*float64(s.W)) {
			return fmt.Sprintf("%s: a window of %v or more, or a quieter host, would decide it", held, decidingWindow(d))
		}
	}
	all := p99Of(&g.admLat, &g.refLat)
	if all <= time.Duration(decidingShare*float64(s.W)) {
		return ""
	}
	adm, ref := p99Of(&g.admLat), p99Of(&g.refLat)
	note := fmt.Sprintf("the answers to %s took up to %v (p99; admissions %v, refusals %v), %.1f %% of the %v window, where the plan decides what it is built to within %.0f %%: a window of %v or more, or a quieter host, would decide it",
		g.source, human.Duration(all), human.Duration(adm), human.Duration(ref), 100*float64(all)/float64(s.W), s.W, 100*decidingShare, decidingWindow(all))
	if s.holdsAdmissions() {
		note += ", unless the target holds what it admits for a share of its window (as nginx's burst and delay does), which no window undoes"
	}
	if held != "" {
		note = held + "; " + note
	}
	return note
}

// holdsAdmissions reports whether the limit address's admissions took
// much longer than its refusals (over three times their p99) on a run
// whose answers took longer than the plan decides through (see
// decidingShare): a target holding what it admits, as nginx's burst and
// delay does, or a host that held them. The order the answers came back
// in is then not the order the limiter counted in, for admissions; the
// order of the sends is, only where the host sent on time, which the
// slow answers leave in doubt. A fit left open there names no family
// (unknown): a CI run against nginx's burst and delay, its answers up to
// 2.46 s (61 % of the 4 s window), left a log and a fixed window open
// and named no bucket.
func (s *surfaceRun) holdsAdmissions() bool {
	g := s.primary
	if g == nil || g.refusals == 0 {
		return false
	}
	if p99Of(&g.admLat, &g.refLat) <= time.Duration(decidingShare*float64(s.W)) {
		return false
	}
	return p99Of(&g.admLat) > 3*p99Of(&g.refLat)
}

// timingOpen reports whether the run left open on a surface what its
// timing decides: the family, between families or as none the fit
// replays explaining the run (unknown, with refusals seen), or a check of
// the limit.
func timingOpen(sv *SurfaceVerdict) bool {
	if !sv.ModelDecided && (len(sv.ModelAlternatives) > 0 || sv.Model == familyUnknown && sv.ObservedLimit != nil) {
		return true
	}
	for _, c := range sv.Checks {
		switch c.Name {
		case "rolling", "rejected-count", "isolation":
			if c.Verdict == Inconclusive && c.Detail != notJudged {
				return true
			}
		}
	}
	return false
}

// p99Of is the 99th percentile of the latencies sampled in rs together
// (nearest rank).
func p99Of(rs ...*reservoir) time.Duration {
	var all []time.Duration
	for _, r := range rs {
		all = append(all, r.sample...)
	}
	if len(all) == 0 {
		return 0
	}
	slices.Sort(all)
	return all[int(math.Ceil(0.99*float64(len(all))))-1]
}

// decidingWindow is the least whole number of seconds for which d is
// within decidingShare of the window.
func decidingWindow(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d)/decidingShare/float64(time.Second))) * time.Second
}
