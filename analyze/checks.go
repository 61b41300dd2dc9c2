package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// A checkRun is one check of a surface while its records are analyzed: a
// record that owns the evidence the check gathers and judges it once the
// passes are done. What it gathers it takes through the observer
// interfaces it implements (counter, primaryObserver, groupObserver,
// otherObserver, fitWatcher); the shared model (every request's
// judgement, the family fit, the counts in surfaceRun) it reads from the
// evidence.
//
// Adding a check is adding it to method's list and writing its record in
// a file of its own that registers it (see register); tables, JSON, JUnit
// and HTML render what the judges return.
type checkRun interface {
	// judge weighs the evidence gathered.
	judge(e *evidence) (verdict, detail string)
}

// A counter takes every request of the surface in the first pass, in any
// order: g is its group, kind what judges its stream (see kindOf), seq its
// place in the input.
type counter interface {
	count(s *surfaceRun, g *groupRun, r *decode.Record, kind uint8, seq int)
}

// A primaryObserver takes every request of the surface's primary group
// the model judged (an answer, admitted or refused) in the second pass, in
// send order.
type primaryObserver interface {
	judgedPrimary(s *surfaceRun, p sighting)
}

// A groupObserver takes every request of the surface's other groups the
// model judged in the second pass, in send order within its group g.
type groupObserver interface {
	judgedOther(s *surfaceRun, g *groupRun, j *judged)
}

// An otherObserver takes, in the second pass and in send order, the other
// surface's requests from the primary's source.
type otherObserver interface {
	other(s *surfaceRun, r *decode.Record)
}

// A spentJudge judges, in a run whose first burst says the limit
// address's budget was spent before it (see freshStart), what no request
// sent before the run explains; ok is false when nothing is left to
// judge, and the check is inconclusive.
type spentJudge interface {
	judgeSpent(e *evidence) (verdict, detail string, ok bool)
}

// A fitWatcher tells the family fit, before the third pass, which of the
// primary's requests it wants the candidates' decisions on.
type fitWatcher interface {
	watchFit(f *familyFit)
}

// A sighting is a request of the primary the model judged, as the
// primary's observers see it.
type sighting struct {
	*judged           // the request and the model's judgement of it
	g       *groupRun // the primary group
	stream  string    // its stream
	forged  bool      // a probe with a forged forwarding header
}

// checkKinds makes each check's record, by name.
var checkKinds = map[string]func() checkRun{}

// register names the record of a check of method's list: each check's
// file registers its own.
func register(name string, newRun func() checkRun) {
	if checkKinds[name] != nil {
		panic("analyze: check " + name + " registered twice")
	}
	checkKinds[name] = newRun
}

// surfaceCheck is one check of a surface (method.Check: its name, group
// and the evidence it needs) with its record.
type surfaceCheck struct {
	method.Check
	run checkRun
}

// newChecks makes the records of a surface's checks, in report order, and
// hands each to the passes it observes.
func (s *surfaceRun) newChecks() {
	s.fresh = &freshStart{}
	s.counters = append(s.counters, s.fresh)
	for _, c := range method.Checks() {
		newRun := checkKinds[c.Name]
		if newRun == nil {
			panic("analyze: no record for check " + c.Name)
		}
		run := newRun()
		s.checks = append(s.checks, surfaceCheck{c, run})
		if o, ok := run.(counter); ok {
			s.counters = append(s.counters, o)
		}
		if o, ok := run.(primaryObserver); ok {
			s.primaryObservers = append(s.primaryObservers, o)
		}
		if o, ok := run.(groupObserver); ok {
			s.groupObservers = append(s.groupObservers, o)
		}
		if o, ok := run.(otherObserver); ok {
			s.otherObservers = append(s.otherObservers, o)
		}
		if o, ok := run.(fitWatcher); ok {
			s.fitWatchers = append(s.fitWatchers, o)
		}
	}
}

// maxExplained bounds the evidence a check keeps of one kind: the
// independence check's candidates, the keys of rejected-count's tallies.
const maxExplained = 10000

// evidence is what the passes over a surface's records gathered, and what
// the surface's verdict says so far, for the judges.
type evidence struct {
	*surfaceRun
	sv      *SurfaceVerdict
	sd      *SurfaceDetail
	meta    *decode.Meta
	primary string
	Leff    int // the limit the target showed, when above the documented
}

// verdict judges the surface once the passes are done.
func (s *surfaceRun) verdict(meta *decode.Meta) (SurfaceVerdict, SurfaceDetail) {
	sv, sd := s.summary()
	e := &evidence{surfaceRun: s, sv: &sv, sd: &sd, meta: meta}
	missing, spent := s.missing(meta, &sd), false
	if missing == "" && s.primary != nil {
		missing = s.fresh.spent(s)
		spent = missing != ""
	}
	selected := s.selected
	if selected == nil {
		selected = method.CheckNames()
	}
	var judgedSpent map[string]Check
	if s.primary != nil {
		e.primary = s.primary.source
		e.Leff = s.effectiveLimit()
		sd.Primary, sd.Window = s.primary.source, s.window
		if t := s.primary.secondBurstEnd; t != 0 {
			sd.SecondEnd = time.Unix(0, t)
		}
		if s.fit != nil {
			sd.Fit = s.fit.result()
			if s.secondFit != nil {
				sd.Fit.narrow(s.secondFit.result(), s.second.answered-s.second.refusals)
			}
		}
		named := missing
		if spent {
			judgedSpent, missing = s.judgeSpent(e, selected, missing)
			if o, ok := judgedSpent[method.CheckOnset]; ok && o.Verdict == Fail {
				// The limiter refused below L where no request sent before
				// the run can be in the window: what it is can be named,
				// though the early evidence is still a spent budget's.
				named = ""
			}
			iso, shared := judgedSpent[method.CheckIsolation]
			// Weighed even where onset failed on late refusals: a lower
			// limit that the burst measures the first burst had in full
			// clears the premise, and the rest of the run is judged.
			sd.SpentOrLower = !(shared && iso.Verdict == Fail) && s.fresh.shortOfAny(s) != "" && !s.fresh.weighed(s.primary)
		}
		s.model(&sv, &sd, named)
	}
	for _, c := range s.checks {
		if !slices.Contains(selected, c.Name) {
			continue
		}
		// A check the run's premise left unjudged says so in a few words:
		// the reason is the surface's (sv.Missing), said once.
		verdict, detail := Inconclusive, notJudged
		if j, ok := judgedSpent[c.Name]; ok {
			verdict, detail = j.Verdict, j.Detail
		} else if s.onsetOnly != "" && missing == "" && !slices.Contains(stackedJudged, c.Name) {
			verdict, detail = Inconclusive, s.onsetOnly
		} else if missing == "" {
			verdict, detail = c.run.judge(e)
		}
		if verdict == Inconclusive && detail != notJudged {
			detail = fmt.Sprintf("%s (needs %s)", detail, c.Needs)
		}
		sv.Checks = append(sv.Checks, Check{Name: c.Name, Verdict: verdict, Detail: detail})
		sv.Verdict = Worse(sv.Verdict, verdict)
		if c.Name == method.CheckIsolation && verdict == Fail && sv.Model != familyNone {
			// The limiter counts other addresses' requests against this
			// one's: the fit saw only this address's, so it names no family.
			sv.Model, sv.ModelDecided, sv.ModelReplicas, sv.ModelAlternatives = familyUnknown, false, 0, []string{}
		}
	}
	sd.Premise, sd.OnsetOnly = missing, s.onsetOnly
	sv.Missing = missing // said once, for every check it left unjudged
	if missing == "" {
		sv.Timing = s.timingNote(&sv)
	}
	if sv.Verdict == Inconclusive {
		if missing == "" {
			var names []string
			for _, c := range sv.Checks {
				if c.Verdict == Inconclusive {
					names = append(names, c.Name)
				}
			}
			sv.Missing = fmt.Sprintf("the run did not produce the evidence %s need(s): see their detail", strings.Join(names, ", "))
		}
	}
	return sv, sd
}

// notJudged is the detail of a check the run's premise left unjudged
// (the surface's missing evidence says why, once).
const notJudged = "not judged: see the missing evidence"

// judgeSpent asks the selected checks that can (spentJudge) to judge a
// run whose first burst says the budget was spent before it (missing says
// so), and weighs the explanations of that first burst:
//   - a budget shared with other addresses, when isolation proves one: it
//     explains the early refusals, so the onset cannot be measured and is
//     inconclusive, and the run fails isolation;
//   - a limit not honoured (lower than documented, or a limiter that
//     refuses below L in a rolling window), when the onset proves refusals
//     where no request sent before the run can be in the window: the onset
//     fails and the family is named, but a budget spent before the run is
//     not ruled out by that, so the checks that rest on the early evidence
//     stay inconclusive;
//   - otherwise a budget spent before the run, and where a check proved a
//     failure no spent budget explains, the missing evidence of the rest
//     is said so.
func (s *surfaceRun) judgeSpent(e *evidence, selected []string, missing string) (map[string]Check, string) {
	judged := map[string]Check{}
	var names []string
	for _, c := range s.checks {
		if j, ok := c.run.(spentJudge); ok && slices.Contains(selected, c.Name) {
			if v, d, ok := j.judgeSpent(e); ok {
				judged[c.Name] = Check{Name: c.Name, Verdict: v, Detail: d}
				if v == Fail {
					names = append(names, c.Name)
				}
			}
		}
	}
	if iso, ok := judged[method.CheckIsolation]; ok && iso.Verdict == Fail {
		if _, ok := judged[method.CheckOnset]; ok {
			judged[method.CheckOnset] = Check{Name: method.CheckOnset, Verdict: Inconclusive,
				Detail: fmt.Sprintf("a budget shared with other %s explains the refusals of the first burst and after it (see isolation), so the limit of one %s cannot be measured", s.peers(), s.peer())}
		}
		return judged, fmt.Sprintf("the first burst from %s on %s was refused before %d were admitted, which a budget shared with other %s explains (see isolation): the run cannot show what the limiter does with one %s's own budget",
			e.primary, s.name, s.L, s.peers(), s.peer())
	}
	if len(names) > 0 {
		missing = fmt.Sprintf("the first burst from %s on %s was refused before %d were admitted, which a budget spent before the run does not explain (see %s): the run cannot show what the limiter does with a whole budget",
			e.primary, s.name, s.L, strings.Join(names, ", "))
	}
	return judged, missing
}

// summary starts the surface's verdict and detail from the counts: every
// check passes so far.
func (s *surfaceRun) summary() (SurfaceVerdict, SurfaceDetail) {
	sd := s.sd
	var own clock.Millis
	if s.W != s.runW {
		own = clock.WholeMs(s.W)
	}
	sv := SurfaceVerdict{Surface: s.name, WindowMS: own, ExpectedLimit: s.L, Model: familyUnknown, ModelAlternatives: []string{}, MCPRevision: s.revision, Verdict: Pass,
		Requests: sd.Requests, Admitted: sd.Admitted, Refused: sd.Refused, Faults: sd.Faults, OtherAnswers: sd.OtherAnswers, Indeterminate: sd.Indet}
	sd.Latency = s.lat.metrics()
	if m := sd.Latency; m.Count > 0 {
		ms := func(d time.Duration) clock.Millis { return clock.Millis(math.Round(float64(d)/1e3) / 1e3) }
		sv.Latency = LatencySummary{Count: m.Count, MinMS: ms(m.Time.Min), P50MS: ms(m.Time.P50), P95MS: ms(m.Time.P95), P99MS: ms(m.Time.P99), MaxMS: ms(m.Time.Max)}
	}
	for k, n := range s.errs {
		sd.Errors = append(sd.Errors, ErrorCount{Kind: k, N: n})
	}
	slices.SortFunc(sd.Errors, func(a, b ErrorCount) int { return cmp.Or(b.N-a.N, strings.Compare(a.Kind, b.Kind)) })
	return sv, sd
}

// missing says why no check has its evidence, if none has: a stacked
// limit, which the run sends no probes of its own (unreached), a surface the
// run meant to exercise but sent nothing to, where the API is not there
// (though most requests timed out: a server with a short listen backlog
// answers a few with 501 and drops the rest), or whose every request went
// unanswered or failed (empty: the checks judge).
func (s *surfaceRun) missing(meta *decode.Meta, sd *SurfaceDetail) string {
	switch {
	case s.unreached != "":
		return s.unreached
	case s.primary == nil:
		return "no request of this surface in the run"
	case s.absent(meta) != "": // before unanswered: a 501 is an answer
		sd.Absent = true
		return s.absent(meta)
	case s.unanswered() != "":
		return s.unanswered()
	}
	return ""
}

// model says what the primary's requests showed of the limiter: its
// source, the fit, the observed limit and the families that explain it.
// It names none (unknown) where the fit's orders are not the limiter's:
// refusals the host held apart (unordered), or a fit left open on a run
// whose target held what it admitted (holdsAdmissions).
func (s *surfaceRun) model(sv *SurfaceVerdict, sd *SurfaceDetail, missing string) {
	if s.anyRefused {
		obs := s.obs
		sv.ObservedLimit = &obs
	}
	switch {
	case missing != "":
	case !s.anyRefused && s.required429 == 0:
	case !s.anyRefused:
		// Nothing refused, yet some window provably held more than L: no
		// limiter of L per W that counts as the documented one does. But
		// a bucket or a fixed window of L admits up to 2L in a window
		// without refusing where the host spread the requests out (a
		// starved host held two in five up to 2.4 s), so `none` is
		// decided only where the fit outdid every limiter of L per W in
		// every order the requests could have reached the target in. A
		// limiter the run never reached (a log of another window, the
		// scan's; replicas admitting several L) is not a rival: a run
		// that refused nothing cannot tell it from none.
		sv.Model = familyNone
		var rivals Fit
		for _, a := range sd.Fit.Alternatives {
			if a.Window == s.W && a.Replicas <= 1 {
				rivals.Alternatives = append(rivals.Alternatives, a)
			}
		}
		sv.ModelDecided = sd.Fit.Best.Family == familyNone && len(rivals.Alternatives) == 0
		alternatives(sv, rivals)
	default:
		sv.Model = sd.Fit.Best.Family
		if sv.Model == familyNone || !explainsRun(sd.Fit.Best, s.primaryAdmitted()) || s.unordered() || !sd.Fit.Decided && s.holdsAdmissions() {
			sv.Model = familyUnknown
			return
		}
		sv.ModelReplicas, sv.ModelDecided = max(sd.Fit.Best.Replicas, 1), sd.Fit.Decided
		alternatives(sv, sd.Fit)
	}
}

// alternatives lists the families of the fit's alternatives other than
// the model's, once each.
func alternatives(sv *SurfaceVerdict, fit Fit) {
	for _, a := range fit.Alternatives {
		if a.Family != sv.Model && !slices.Contains(sv.ModelAlternatives, a.Family) {
			sv.ModelAlternatives = append(sv.ModelAlternatives, a.Family)
		}
	}
}

// byGroup is a check's state per group of the surface, by group index.
type byGroup[T any] []T

// at returns g's state, making room for it.
func (b *byGroup[T]) at(g *groupRun) *T {
	for len(*b) <= g.index {
		var zero T
		*b = append(*b, zero)
	}
	return &(*b)[g.index]
}

// of returns g's state (the zero value when none was made).
func (b byGroup[T]) of(g *groupRun) T {
	if g.index < len(b) {
		return b[g.index]
	}
	var zero T
	return zero
}
