package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// checkDef is one check of a surface (method.Check: its name, group and
// the evidence it needs) with the judge that weighs the evidence the passes
// gathered. Adding a check is adding one to method's list and its judge
// here; tables, JSON, JUnit and HTML render what the judges return.
type checkDef struct {
	method.Check
	judge func(e *evidence) (verdict, detail string)
}

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

// judges are the judges of the checks, by name.
var judges = map[string]func(e *evidence) (string, string){
	method.CheckOnset:         judgeOnset,
	method.CheckRolling:       judgeRolling,
	method.CheckRejectedCount: judgeRejectedCount,
	method.CheckShape:         judgeShape,
	method.CheckIsolation:     judgeIsolation,
	method.CheckSpoof:         judgeSpoof,
	method.CheckIndependence:  judgeIndependence,
	method.CheckContract:      judgeContract,
}

// surfaceChecks lists the checks of a surface in report order.
func surfaceChecks() []checkDef {
	var defs []checkDef
	for _, c := range method.Checks() {
		defs = append(defs, checkDef{c, judges[c.Name]})
	}
	return defs
}

// verdict judges the surface once the passes are done.
func (s *surfaceRun) verdict(meta *decode.Meta) (SurfaceVerdict, SurfaceDetail) {
	sd := s.sd
	sv := SurfaceVerdict{Surface: s.name, ExpectedLimit: s.L, Model: FamilyUnknown, ModelAlternatives: []string{}, MCPRevision: s.revision, Verdict: Pass,
		Requests: sd.Requests, Admitted: sd.Admitted, Refused: sd.Refused, Faults: sd.Faults, OtherAnswers: sd.OtherAnswers, Indeterminate: sd.Indet}
	sd.Latency = s.lat.metrics()
	if m := sd.Latency; m.Count > 0 {
		ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
		sv.Latency = LatencySummary{Count: m.Count, MinMS: ms(m.Time.Min), P50MS: ms(m.Time.P50), P95MS: ms(m.Time.P95), P99MS: ms(m.Time.P99), MaxMS: ms(m.Time.Max)}
	}
	for k, n := range s.errs {
		sd.Errors = append(sd.Errors, ErrorCount{Kind: k, N: n})
	}
	slices.SortFunc(sd.Errors, func(a, b ErrorCount) int { return cmp.Or(b.N-a.N, strings.Compare(a.Kind, b.Kind)) })
	e := &evidence{surfaceRun: s, sv: &sv, sd: &sd, meta: meta}
	selected := s.selected
	if selected == nil {
		selected = method.CheckNames()
	}
	// A surface the run meant to exercise but sent nothing to, whose every
	// request went unanswered, or where the API is not there, gives no
	// check its evidence.
	missing := ""
	switch {
	case s.primary == nil:
		missing = "no request of this surface in the run"
	case s.unanswered() != "":
		missing = s.unanswered()
	case s.absent(meta) != "":
		missing = s.absent(meta)
		sd.Absent = true
	}
	if s.primary != nil {
		e.primary = s.primary.source
		sd.Primary = s.primary.source
		if s.fit != nil {
			sd.Fit = s.fit.result()
		}
		if s.anyRefused {
			obs := s.obs
			sv.ObservedLimit = &obs
		}
		e.Leff = s.effectiveLimit()
		switch {
		case missing != "":
		case !s.anyRefused && s.required429 == 0:
		case !s.anyRefused:
			sv.Model = FamilyNone
		default:
			sv.Model = sd.Fit.Best.Family
			if sv.Model == FamilyNone {
				sv.Model = FamilyUnknown
			}
			for _, a := range sd.Fit.Alternatives {
				if !slices.Contains(sv.ModelAlternatives, a.Family) {
					sv.ModelAlternatives = append(sv.ModelAlternatives, a.Family)
				}
			}
		}
	}
	for _, c := range surfaceChecks() {
		if !slices.Contains(selected, c.Name) {
			continue
		}
		verdict, detail := Inconclusive, missing
		if missing == "" {
			verdict, detail = c.judge(e)
		}
		if verdict == Inconclusive {
			detail = fmt.Sprintf("%s (needs %s)", detail, c.Needs)
		}
		sv.Checks = append(sv.Checks, Check{Name: c.Name, Verdict: verdict, Detail: detail})
		sv.Verdict = Worse(sv.Verdict, verdict)
	}
	if sv.Verdict == Inconclusive {
		sv.Missing = missing
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

func judgeOnset(e *evidence) (string, string) {
	L, obs, p := e.L, e.obs, e.primary
	switch {
	case !e.anyRefused && e.required429 == 0:
		return Inconclusive, fmt.Sprintf("no window from %s provably held more than %d requests (at most %d surely in one), so no 429 was due", p, L, e.mostSure)
	case !e.anyRefused:
		return Fail, fmt.Sprintf("no 429 at all from %s although %d requests provably exceeded %d in one window: no limit enforced", p, e.required429, L)
	case e.onsetLeaks > 0:
		return Fail, fmt.Sprintf("from %s %d requests were admitted past %d in one window before the first 429 (observed_limit %d)", p, e.onsetLeaks, L, obs)
	case e.onsetFalse > 0:
		return Fail, fmt.Sprintf("from %s 429s began before %d requests could have been in one window (observed_limit %d; if this address sent requests in the window before the run, wait a window and run again)", p, L, obs)
	case obs == L:
		return Pass, fmt.Sprintf("from %s the first 429 came after exactly %d admitted in one window (observed_limit %d)", p, L, obs)
	}
	return Pass, fmt.Sprintf("from %s observed_limit %d, within the timing uncertainty: %d requests of the onset could be counted in either window; none provably broke %d", p, obs, e.onsetIndet, L)
}

func judgeRolling(e *evidence) (string, string) {
	ew := fmt.Sprintf("effective window %v (documented %v)", e.sd.Fit.EffectiveWindow.Round(time.Millisecond), e.W)
	switch {
	case e.sd.Leaks+e.sd.FalseThrottles > 0:
		return Fail, fmt.Sprintf("%d leaks (%s), %d false throttles (%s) against %d per %v; %s",
			e.sd.Leaks, strings.Join(e.leaks, "; "), e.sd.FalseThrottles, strings.Join(e.falses, "; "), e.L, e.W, ew)
	case e.judgedN == 0:
		return Inconclusive, fmt.Sprintf("no request from %s was admitted (2xx) or refused (429)", e.primary)
	case e.judgedN == e.indet:
		return Inconclusive, fmt.Sprintf("the outcome of every one of the %d answered requests from %s is indeterminate: latency too large against the window", e.judgedN, e.primary)
	}
	return Pass, fmt.Sprintf("%d requests from %s: 0 leaks, 0 false throttles (%d indeterminate); %s", e.judgedN, e.primary, e.indet, ew)
}

// judgeRejectedCount weighs the requests only one reading of refusals
// explains, against the limit the target showed: an admission while the
// window provably held more than that limit counting refusals but not
// counting only admissions proves refusals are forgotten; a refusal that a
// limiter forgetting refusals had to admit proves they count.
func judgeRejectedCount(e *evidence) (string, string) {
	L := e.Leff
	forgets, counts := 0, 0
	for k, n := range e.leakCounts {
		if 1+int(k[0]) >= L+1 && 1+int(k[1]) <= L {
			forgets += n
		}
	}
	for k, n := range e.refusalCounts {
		if 1+int(k[1]) <= L && 1+int(k[0]) > L {
			counts += n
		}
	}
	best := e.sd.Fit.Best
	switch {
	case forgets > 0:
		e.sv.RejectedCount = boolPtr(false)
		return Fail, fmt.Sprintf("%d requests were admitted while refused requests filled the window past %d: refusals do not count (the contract says they do); best fit %s", forgets, L, best)
	case counts > 0:
		e.sv.RejectedCount = boolPtr(true)
		return Pass, fmt.Sprintf("%d refusals are explained only by counting refused requests, as documented; best fit %s", counts, best)
	}
	return Inconclusive, fmt.Sprintf("no request proves either way whether refusals count (timing too uncertain, or the run did not send refused requests while under the limit); best fit %s", best)
}

func judgeShape(e *evidence) (string, string) {
	hdrs := ""
	var extras []string
	for _, src := range e.sd.Sources {
		for _, x := range e.groups[src].extras {
			if !slices.Contains(extras, x) && len(extras) < 3 {
				extras = append(extras, x)
			}
		}
	}
	if len(extras) > 0 {
		hdrs = "; the target also sent " + strings.Join(extras, ", ")
	}
	want := map[string]string{method.REST: `{"error":{"code":"rate_limited"}}`, method.MCP: "JSON-RPC error -32603"}[e.name]
	switch {
	case e.shapeN == 0:
		return Inconclusive, "no 429 to inspect"
	case e.shapeBad == 0:
		return Pass, fmt.Sprintf("all %d refusals carry %s%s", e.shapeN, want, hdrs)
	}
	instead := ""
	if smp := e.sample(e.meta, func(s *decode.Sample) bool { return s.Refused }); smp != "" {
		instead = "; for example " + smp
	}
	return Fail, fmt.Sprintf("%d of %d refusals lack %s%s%s", e.shapeBad, e.shapeN, want, instead, hdrs)
}

// judgeIsolation: another address refused though its own window provably
// allowed it fails; one admitted while the limit address was provably over
// its limit passes.
func judgeIsolation(e *evidence) (string, string) {
	if len(e.sd.Sources) < 2 {
		return Skip, fmt.Sprintf("one source address only (%s): isolation needs a second (--sources)", e.primary)
	}
	var isoBad []string
	for _, src := range e.sd.Sources {
		for _, b := range e.groups[src].isoBad {
			if len(isoBad) < 2 {
				isoBad = append(isoBad, b)
			}
		}
	}
	switch {
	case e.isoBadN > 0:
		return Fail, fmt.Sprintf("another address shares the budget of %s: %s", e.primary, strings.Join(isoBad, "; "))
	case e.isoProven == 0:
		return Inconclusive, fmt.Sprintf("no request from another address was admitted while %s was provably over its limit (timing too uncertain, or none sent then)", e.primary)
	}
	return Pass, fmt.Sprintf("%d requests from other addresses were admitted while %s was provably over its limit", e.isoProven, e.primary)
}

// judgeSpoof weighs the forged-header probes of each header against the
// plain probes sent from the same address just before and after each. A
// forged probe is over the limit when both were refused (or provably over
// the limit the target shows): the address had no budget then. Forged
// probes refused while over the limit prove that header buys nothing;
// more admitted while over the limit than the address's own budget could
// have refilled in the meantime (a bucket refills, a window ages out)
// prove it buys a fresh budget; anything else proves nothing.
func judgeSpoof(e *evidence) (string, string) {
	var plain []spoofProbe
	forged := map[string][]spoofProbe{}
	var headers []string
	for _, p := range e.spoofs {
		switch {
		case p.header == "":
			plain = append(plain, p)
		case forged[p.header] == nil:
			headers = append(headers, p.header)
			fallthrough
		default:
			forged[p.header] = append(forged[p.header], p)
		}
	}
	if len(headers) == 0 {
		return Skip, "no probe with forged forwarding headers"
	}
	over := func(p spoofProbe) bool { return p.refused || 1+int(p.definite) >= e.Leff+1 }
	near := int64(e.W / 100)
	bracketed := func(f spoofProbe) bool {
		before, after := false, false
		for _, c := range plain {
			switch d := c.start - f.start; {
			case d <= 0 && d >= -near && over(c):
				before = true
			case d >= 0 && d <= near && over(c):
				after = true
			}
		}
		return before && after
	}
	var trusted, unproven, refusedBy []string
	for _, h := range headers {
		leaks, proven := 0, 0
		var from, to int64 = math.MaxInt64, math.MinInt64
		for _, f := range forged[h] {
			if !bracketed(f) {
				continue // nothing to weigh it against
			}
			switch {
			case f.admitted:
				leaks++
				from, to = min(from, f.start), max(to, f.end)
			case f.refused:
				proven++
			}
		}
		// What the address's own budget could have given back while the
		// admitted forged probes were in flight: one, plus the limit's
		// rate over that time.
		refill := 1
		if leaks > 0 {
			refill += int(float64(to-from) * float64(e.Leff) / float64(e.W))
		}
		switch {
		case leaks > refill:
			trusted = append(trusted, fmt.Sprintf("%s (%d of %d admitted)", h, leaks, len(forged[h])))
		case proven == 0:
			unproven = append(unproven, h)
		default:
			refusedBy = append(refusedBy, fmt.Sprintf("%s (%d refused)", h, proven))
		}
	}
	switch {
	case len(trusted) > 0:
		return Fail, fmt.Sprintf("probes forging %s were admitted while the plain probes from %s sent between them were refused, more than its own budget could have given back: the target trusts forwarding headers", strings.Join(trusted, ", "), e.primary)
	case len(unproven) > 0:
		return Inconclusive, fmt.Sprintf("no probe forging %s was refused between plain ones refused or provably over the limit (%d plain probes)", strings.Join(unproven, ", "), len(plain))
	}
	return Pass, fmt.Sprintf("probes forging %s were refused like the plain probes beside them", strings.Join(refusedBy, ", "))
}

// judgeIndependence fails only on a refusal that the other surface's
// traffic explains and no limiter of this surface alone does.
func judgeIndependence(e *evidence) (string, string) {
	if e.other == nil {
		return Skip, fmt.Sprintf("the other surface was not exercised from %s", e.primary)
	}
	n := e.explainedMore
	for _, i := range e.explained {
		if !e.fit.explains(e.sd.Fit, i) {
			n++
		}
	}
	switch {
	case n > 0:
		return Fail, fmt.Sprintf("%d refusals on %s from %s are explained only by counting the other surface's requests, and by no limiter of this surface alone: the surfaces share a counter", n, e.name, e.primary)
	case len(e.explained) > 0:
		return Inconclusive, fmt.Sprintf("%d refusals the other surface's traffic could explain are explained as well by a limiter of %s alone (best fit %s): the run cannot tell a shared counter from a limit of its own", len(e.explained), e.name, e.sd.Fit.Best)
	}
	return Pass, fmt.Sprintf("traffic on the other surface from %s did not count toward this one", e.primary)
}

func judgeContract(e *evidence) (string, string) {
	// in the table's order, then by source, then by send time
	hits := slices.Clone(e.contract)
	slices.SortStableFunc(hits, func(a, b contractHit) int {
		return cmp.Or(a.row-b.row, strings.Compare(a.source, b.source), cmp.Compare(a.rec.Start, b.rec.Start), a.seq-b.seq)
	})
	var rows, bad, unanswered []string
	for _, h := range hits {
		row, r := method.ContractRows[h.row], &h.rec
		rows = append(rows, row.Stream)
		if r.Code == 0 { // no answer: proves nothing about the row
			unanswered = append(unanswered, fmt.Sprintf("%s (%s)", row.Stream, decode.ErrKind(e.tab.Err(r))))
			continue
		}
		if p := checkRow(row, r, e.tab); p != "" {
			bad = append(bad, fmt.Sprintf("%s (%s) [%s]: %s", row.Stream, row.What, row.By(), p))
		}
	}
	switch {
	case len(rows) == 0:
		return Skip, "no contract probe on this surface"
	case len(bad) > 0:
		return Fail, fmt.Sprintf("%d of %d rows wrong: %s", len(bad), len(rows), strings.Join(bad, "; "))
	case len(unanswered) > 0:
		return Inconclusive, fmt.Sprintf("%d of %d rows got no answer, so they prove nothing: %s", len(unanswered), len(rows), strings.Join(unanswered, "; "))
	}
	spec := 0
	for _, h := range hits {
		if method.ContractRows[h.row].By() != method.ByAPI {
			spec++
		}
	}
	by := "all documented by this API alone"
	if spec > 0 {
		by = fmt.Sprintf("%d fixed at least in part by the MCP specification, %d documented by this API alone", spec, len(rows)-spec)
	}
	return Pass, fmt.Sprintf("all %d failure-table rows answer as documented and are classified as answers, not retried (%s)", len(rows), by)
}
