package analyze

// The batch analyzer as it was before analysis became streaming: the
// reference the streaming Analyze, Model, FitFamily and ObservedLimit are
// tested against (differential tests in stream_test.go). It holds every
// record of a group in memory; the streaming one holds a window.

import (
	"cmp"
	"fmt"
	"github.com/connectbyjbrh/ratecheck/internal/human"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jamiealquiza/tachymeter"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Analyze judges the input against cfg.
func refAnalyze(in *decode.Input, cfg Config) *Report {
	rep := &Report{Verdict: Verdict{Schema: 1, Verdict: Pass, Target: cfg.Target, WindowMS: clock.WholeMs(cfg.Window), Run: cfg.Run}}
	rep.Warnings = append(rep.Warnings, in.Truncated...)
	notes, warnings := mergeNotes(&in.Meta, cfg.Window)
	rep.Notes = notes
	rep.Warnings = append(rep.Warnings, warnings...)
	bySurface := map[string]map[string]*Group{}
	// Find each label's group, count, then fill the groups in send order.
	byLabel := map[uint32]*Group{}
	groupOf := func(r *decode.Record) *Group {
		g, ok := byLabel[r.LabelID()]
		if !ok {
			if sf := in.Tables().Labels(r).Surface; sf == method.REST || sf == method.MCP {
				if bySurface[sf] == nil {
					bySurface[sf] = map[string]*Group{}
				}
				if g = bySurface[sf][in.Tables().Labels(r).Source]; g == nil {
					g = &Group{Surface: sf, Source: in.Tables().Labels(r).Source, Uncertain: func(r *decode.Record) bool { return method.IsForged(in.Tables().Labels(r).Stream) }}
					bySurface[sf][in.Tables().Labels(r).Source] = g
				}
			}
			byLabel[r.LabelID()] = g
		}
		return g
	}
	size := map[*Group]int{}
	for i := range in.Records {
		if g := groupOf(&in.Records[i]); g != nil {
			size[g]++
		}
	}
	for g, n := range size {
		g.Records = make([]*decode.Record, 0, n)
	}
	for i := range in.Records {
		if g := byLabel[in.Records[i].LabelID()]; g != nil {
			g.Records = append(g.Records, &in.Records[i])
		}
	}
	// The surfaces are judged side by side (they only read the records).
	surfaces := []string{method.REST, method.MCP}
	svs, sds := make([]SurfaceVerdict, len(surfaces)), make([]SurfaceDetail, len(surfaces))
	var wg sync.WaitGroup
	for i, sf := range surfaces {
		if bySurface[sf] == nil {
			continue
		}
		wg.Go(func() {
			other := bySurface[map[string]string{method.REST: method.MCP, method.MCP: method.REST}[sf]]
			svs[i], sds[i] = refAnalyzeSurface(in.Tables(), sf, bySurface[sf], other, cfg)
		})
	}
	wg.Wait()
	for i, sf := range surfaces {
		if bySurface[sf] == nil {
			continue
		}
		rep.Verdict.Surfaces = append(rep.Verdict.Surfaces, svs[i])
		rep.Surfaces = append(rep.Surfaces, sds[i])
		if svs[i].Verdict == Fail {
			rep.Verdict.Verdict = Fail
		}
	}
	if len(rep.Verdict.Surfaces) == 0 {
		rep.Verdict.Verdict = Fail
		rep.Warnings = append(rep.Warnings, "no REST or MCP requests in the input")
	}
	return rep
}

func refAnalyzeSurface(tab *decode.Tables, sf string, groups, other map[string]*Group, cfg Config) (SurfaceVerdict, SurfaceDetail) {
	L, W := limitOf(cfg, sf), cfg.Window
	sv := SurfaceVerdict{Surface: sf, ExpectedLimit: L, Model: familyUnknown, Verdict: Pass}
	var sd SurfaceDetail
	tach := tachymeter.New(&tachymeter.Config{Size: 100000, HBins: 10})
	var lats []time.Duration
	var t0 int64 = 1<<63 - 1
	var srcs []string
	for src, g := range groups {
		srcs = append(srcs, src)
		t0 = min(t0, g.Records[0].Start)
	}
	sort.Strings(srcs)
	sd.Sources = srcs
	// The primary group is the one the limit probes came from: the most
	// refusals, then the most requests.
	var primary *Group
	var primaryRefusals int
	for _, src := range srcs {
		g, n := groups[src], 0
		for _, r := range g.Records {
			if refused(r) {
				n++
			}
		}
		if primary == nil || n > primaryRefusals || (n == primaryRefusals && len(g.Records) > len(primary.Records)) {
			primary, primaryRefusals = g, n
		}
	}
	// Only the primary group's judgements are kept; of the others' the
	// isolation check needs their false throttles and how many of them were
	// admitted while the primary address was provably over its limit.
	var pj []Judgement
	locked := refLockedOut(primary, W)
	var isoBad []string // the first two
	isoBadN, isoProven := 0, 0
	var shapeBad, shapeN int
	shapeMemo := map[string]bool{} // bodies are interned: few distinct ones
	var extras []string
	errs := map[string]int{}
	for _, src := range srcs {
		g := groups[src]
		js := refModel(*g, L, W)
		if g == primary {
			pj = js
		} else {
			for _, j := range js {
				r := g.Records[j.Index]
				if j.FalseThrottle {
					isoBadN++
				}
				if j.FalseThrottle && len(isoBad) < 2 {
					isoBad = append(isoBad, fmt.Sprintf("%s refused at %s with at most %d in its own window", src, at(r, t0), j.Definite+j.Ambiguous))
				}
				if admitted(r) && locked(r) {
					isoProven++
				}
			}
		}
		for _, r := range g.Records {
			sd.Requests++
			tach.AddTime(r.Latency())
			lats = append(lats, r.Latency())
			switch {
			case refused(r):
				sd.Refused++
				shapeN++
				ok, known := r.Judged() // judged on reading since
				if !known {
					var seen bool
					if ok, seen = shapeMemo[string(tab.Body(r))]; !seen {
						ok = shapeOK(sf, tab.Body(r))
						shapeMemo[string(tab.Body(r))] = ok
					}
				}
				if !ok {
					shapeBad++
				}
				_, retryAfter, rateLimit := tab.Header(r)
				if retryAfter != "" && !slices.Contains(extras, "Retry-After: "+retryAfter) && len(extras) < 3 {
					extras = append(extras, "Retry-After: "+retryAfter)
				}
				if rateLimit != "" && !slices.Contains(extras, "RateLimit: "+rateLimit) && len(extras) < 3 {
					extras = append(extras, "RateLimit: "+rateLimit)
				}
			case admitted(r):
				sd.Admitted++
			case r.Code == 0 || r.Code >= 500:
				sd.Faults++
				if r.Code == 0 {
					errs[archive.ErrKind(tab.Err(r))]++
				}
			default:
				sd.OtherAnswers++
			}
		}
		for _, j := range js {
			switch j.Required {
			case require200:
				sd.Required200++
			case require429:
				sd.Required429++
			default:
				sd.Indet++
			}
		}
	}
	m := tach.Calc()
	if len(lats) > 0 {
		m.Histogram, m.HistogramBinSize = histogramOf(lats, m.Time.Min, m.Time.Max, latencyBins)
	}
	sd.Latency = m
	for k, n := range errs {
		sd.Errors = append(sd.Errors, ErrorCount{Kind: k, N: n})
	}
	slices.SortFunc(sd.Errors, func(a, b ErrorCount) int { return cmp.Or(b.N-a.N, strings.Compare(a.Kind, b.Kind)) })
	// observed limit, family and refusal counting, from the primary group
	obs, anyRefused := refObservedLimit(*primary, W)
	if anyRefused {
		sv.ObservedLimit = &obs
	}
	sd.Fit = refFitFamily(*primary, L, W)
	sd.Primary = primary.Source
	required429 := 0
	for _, j := range pj {
		if j.Required == require429 {
			required429++
		}
	}
	switch {
	case !anyRefused && required429 == 0:
		sv.Model = familyUnknown
	case !anyRefused:
		sv.Model = familyNone
	default:
		sv.Model = sd.Fit.Best.Family
		if sv.Model == familyNone {
			sv.Model = familyUnknown
		}
	}

	checks := map[string]Check{}
	add := func(name, verdict, format string, args ...any) {
		checks[name] = Check{Name: name, Verdict: verdict, Detail: fmt.Sprintf(format, args...)}
	}
	// onset: the first episode, up to the first refusal's response. It
	// fails only on what is proven: an admission past L, a refusal below L,
	// or no refusal although the window provably exceeded L.
	var firstRefusalEnd int64 = 1<<63 - 1
	for _, r := range primary.Records {
		if refused(r) {
			firstRefusalEnd = min(firstRefusalEnd, r.End)
		}
	}
	onsetLeaks, onsetFalse, onsetIndet := 0, 0, 0
	for _, j := range pj {
		r := primary.Records[j.Index]
		if r.Start > firstRefusalEnd || method.IsForged(tab.Labels(r).Stream) {
			continue
		}
		switch {
		case j.Leak:
			onsetLeaks++
		case j.FalseThrottle:
			onsetFalse++
		case j.Required == indeterminate:
			onsetIndet++
		}
	}
	switch {
	case !anyRefused && required429 == 0:
		add("onset", Skip, "no window from %s held more than %d requests, so no 429 was due", primary.Source, L)
	case !anyRefused:
		add("onset", Fail, "no 429 at all from %s although %d requests provably exceeded %d in one window: no limit enforced", primary.Source, required429, L)
	case onsetLeaks > 0:
		add("onset", Fail, "from %s %s admitted past the limit of %d before the first 429, each with %d or more others surely in its window; the fullest window ending at a 429 admitted %d (observed_limit), %d past the limit, counting admissions after the first 429 too",
			primary.Source, human.Count(onsetLeaks, "request was", "requests were"), L, L, obs, obs-L)
	case onsetFalse > 0:
		add("onset", Fail, "from %s 429s began before %d requests could have been in one window (observed_limit %d)", primary.Source, L, obs)
	case obs == L:
		add("onset", Pass, "from %s the first 429 came after exactly %d admitted in one window (observed_limit %d)", primary.Source, L, obs)
	default:
		add("onset", Pass, "from %s observed_limit %d, within the timing uncertainty: %d requests of the onset could be counted in either window; none provably broke %d", primary.Source, obs, onsetIndet, L)
	}
	// rolling: leaks and false throttles of the primary group's limit probes
	var leaks, falses []string
	for _, j := range pj {
		r := primary.Records[j.Index]
		if method.IsForged(tab.Labels(r).Stream) {
			continue
		}
		if j.Leak {
			sd.Leaks++
			if len(leaks) < 2 {
				leaks = append(leaks, fmt.Sprintf("%s admitted with %d others surely in its window: %d admitted, %d refused", at(r, t0), j.Definite, j.DefiniteAdmitted, j.Definite-j.DefiniteAdmitted))
			}
		}
		if j.FalseThrottle {
			sd.FalseThrottles++
			if len(falses) < 2 {
				falses = append(falses, fmt.Sprintf("%s refused with at most %d others in its window", at(r, t0), j.Definite+j.Ambiguous))
			}
		}
	}
	ew := fmt.Sprintf("effective window %v (documented %v)", sd.Fit.EffectiveWindow.Round(time.Millisecond), W)
	indet := 0
	for _, j := range pj {
		if j.Required == indeterminate {
			indet++
		}
	}
	if sd.Leaks+sd.FalseThrottles == 0 {
		add("rolling", Pass, "%d requests from %s: 0 leaks, 0 false throttles (%d indeterminate); %s", len(pj), primary.Source, indet, ew)
	} else {
		add("rolling", Fail, "%d leaks (%s), %d false throttles (%s) against %d per %v; %s",
			sd.Leaks, strings.Join(leaks, "; "), sd.FalseThrottles, strings.Join(falses, "; "), L, W, ew)
	}
	// rejected-count: proven either way by requests that only one reading
	// of refusals explains.
	countsProof, forgetsProof := 0, 0
	for _, j := range pj {
		r := primary.Records[j.Index]
		if refused(r) && 1+int(j.PossibleAdmitted) <= L && !j.FalseThrottle {
			countsProof++ // a limiter that forgot refusals had to admit it
		}
		if j.Leak && 1+int(j.DefiniteAdmitted) <= L {
			forgetsProof++ // admitted although the refusals alone filled the window
		}
	}
	switch {
	case forgetsProof > 0:
		sv.RejectedCount = boolPtr(false)
		add("rejected-count", Fail, "%d requests were admitted while refused requests filled the window: refusals do not count (the contract says they do); best fit %s", forgetsProof, sd.Fit.Best)
	case countsProof > 0:
		sv.RejectedCount = boolPtr(true)
		add("rejected-count", Pass, "%d refusals are explained only by counting refused requests, as documented; best fit %s", countsProof, sd.Fit.Best)
	default:
		add("rejected-count", Skip, "no request proves either way whether refusals count (timing too uncertain, or the plan did not flood); best fit %s", sd.Fit.Best)
	}
	// shape
	hdrs := ""
	if len(extras) > 0 {
		hdrs = "; the target also sent " + strings.Join(extras, ", ")
	}
	want := map[string]string{method.REST: `{"error":{"code":"rate_limited"}}`, method.MCP: "JSON-RPC error -32603"}[sf]
	switch {
	case shapeN == 0:
		add("shape", Skip, "no 429 to inspect")
	case shapeBad == 0:
		add("shape", Pass, "all %d refusals carry %s%s", shapeN, want, hdrs)
	default:
		add("shape", Fail, "%d of %d refusals lack %s%s", shapeBad, shapeN, want, hdrs)
	}
	// isolation: another address is refused though its own window provably
	// allowed it (fail), or admitted while the primary address was provably
	// over its limit (pass).
	if len(srcs) < 2 {
		add("isolation", Skip, "one source address only (%s): isolation needs a second (--sources)", primary.Source)
	} else {
		switch {
		case isoBadN > 0:
			add("isolation", Fail, "another address shares the budget of %s: %s", primary.Source, strings.Join(isoBad, "; "))
		case isoProven == 0:
			add("isolation", Skip, "no request from another address went out while %s was provably over its limit (timing too uncertain)", primary.Source)
		default:
			add("isolation", Pass, "%d requests from other addresses were admitted while %s was provably over its limit", isoProven, primary.Source)
		}
	}
	// spoof: a probe with forged forwarding headers admitted although a
	// refusal of its real address came back before it was sent and too few
	// requests could have aged out since for the window to drop below L.
	spoofN, spoofLeaks, spoofProven := 0, 0, 0
	for _, j := range pj {
		r := primary.Records[j.Index]
		if !method.IsForged(tab.Labels(r).Stream) {
			continue
		}
		spoofN++
		if !admitted(r) {
			if j.Required == require429 || locked(r) {
				spoofProven++
			}
			continue
		}
		if j.Required == require429 || locked(r) {
			spoofLeaks++
		}
	}
	switch {
	case spoofN == 0:
		add("spoof", Skip, "no probe with forged forwarding headers")
	case spoofLeaks > 0:
		add("spoof", Fail, "%d of %d probes with forged X-Forwarded-For, Forwarded or X-Real-IP were admitted while %s was provably over its limit: the target trusts forwarding headers", spoofLeaks, spoofN, primary.Source)
	case spoofProven == 0:
		add("spoof", Skip, "no forged-header probe went out while %s was provably over its limit (timing too uncertain)", primary.Source)
	default:
		add("spoof", Pass, "%d probes with forged X-Forwarded-For, Forwarded or X-Real-IP were refused like their real address", spoofProven)
	}
	// independence: refusals explained only by the other surface's traffic
	og := other[primary.Source]
	if og == nil {
		add("independence", Skip, "the other surface was not exercised from %s", primary.Source)
	} else {
		explained := 0
		for _, j := range pj {
			if !j.FalseThrottle {
				continue
			}
			r := primary.Records[j.Index]
			if 1+int(j.Definite)+refDefiniteIn(og, r, W) >= L+1 {
				explained++
			}
		}
		if explained > 0 {
			add("independence", Fail, "%d refusals on %s from %s are explained only by counting the other surface's requests: the surfaces share a counter", explained, sf, primary.Source)
		} else {
			add("independence", Pass, "traffic on the other surface from %s did not count toward this one", primary.Source)
		}
	}
	// contract
	var rows, bad, unanswered []string
	for _, row := range method.ContractRows {
		if row.Surface != sf {
			continue
		}
		for _, src := range srcs {
			for _, r := range groups[src].Records {
				if tab.Labels(r).Stream != row.Stream {
					continue
				}
				rows = append(rows, row.Stream)
				if r.Code == 0 { // no answer: proves nothing about the row
					unanswered = append(unanswered, fmt.Sprintf("%s (%s)", row.Stream, archive.ErrKind(tab.Err(r))))
					continue
				}
				if p := checkRow(row, r, tab); p != "" {
					bad = append(bad, fmt.Sprintf("%s (%s): %s", row.Stream, row.What, p))
				}
			}
		}
	}
	switch {
	case len(rows) == 0:
		add("contract", Skip, "no contract probe on this surface")
	case len(bad) > 0:
		add("contract", Fail, "%d of %d rows wrong: %s", len(bad), len(rows), strings.Join(bad, "; "))
	case len(unanswered) > 0:
		add("contract", Skip, "%d of %d rows got no answer, so they prove nothing: %s", len(unanswered), len(rows), strings.Join(unanswered, "; "))
	default:
		add("contract", Pass, "all %d failure-table rows answer as documented and are classified as answers, not retried", len(rows))
	}

	selected := cfg.Checks
	if selected == nil {
		selected = method.CheckNames()
	}
	for _, name := range method.CheckNames() {
		if !slices.Contains(selected, name) {
			continue
		}
		c := checks[name]
		sv.Checks = append(sv.Checks, c)
		if c.Verdict == Fail {
			sv.Verdict = Fail
		}
	}
	return sv, sd
}

// lockedOut returns a function reporting whether g's window surely held
// more than L requests when a request r was counted, from the server's own
// refusals: some refused request of g came back before r was sent (so at
// least L+1 requests were counted by then), and at most one of g's
// requests was sent early enough to have aged out of r's window since.
func refLockedOut(g *Group, w time.Duration) func(r *decode.Record) bool {
	firstRefusalEnd := int64(1<<63 - 1)
	starts := make([]int64, 0, len(g.Records))
	for _, i := range g.Records {
		if refused(i) {
			firstRefusalEnd = min(firstRefusalEnd, i.End)
		}
		starts = append(starts, i.Start)
	}
	slices.Sort(starts)
	return func(r *decode.Record) bool {
		return firstRefusalEnd <= r.Start && le(starts, r.End-int64(w)) <= 1
	}
}

// definiteIn counts the sure requests of g definitely in r's window.
func refDefiniteIn(g *Group, r *decode.Record, w time.Duration) int {
	n := 0
	for _, i := range g.Records {
		if sure(i) && i.End <= r.Start && i.Start > r.End-int64(w) {
			n++
		}
	}
	return n
}

// window counts, for a request j, the requests of a set that were surely
// and possibly counted in the server's window when j was counted.
type refWindow struct {
	W                  int64
	sureS, sureR       []int64 // sorted sends and responses of surely counted requests
	allS, allR         []int64 // the same over every request that may have been counted
	long, sure         []*decode.Record
	contains, sureOnly func(*decode.Record) bool
	at                 [4]int // where the last answer of each count was, for upTo
}

// newWindow indexes the records of g that count: those for which
// maybe(r) holds, and of those, surely those for which certain(r) holds.
func refNewWindow(g Group, w time.Duration, maybe, certain func(*decode.Record) bool) *refWindow {
	n := len(g.Records)
	x := &refWindow{W: int64(w), contains: maybe, sureOnly: certain,
		sureS: make([]int64, 0, n), sureR: make([]int64, 0, n), allS: make([]int64, 0, n), allR: make([]int64, 0, n)}
	for _, r := range g.Records {
		if !maybe(r) {
			continue
		}
		x.allS, x.allR = append(x.allS, r.Start), append(x.allR, r.End)
		if certain(r) {
			x.sureS, x.sureR = append(x.sureS, r.Start), append(x.sureR, r.End)
			if r.End-r.Start > x.W/2 {
				x.long = append(x.long, r)
			}
			x.sure = append(x.sure, r)
		}
	}
	for _, a := range [][]int64{x.sureS, x.sureR, x.allS, x.allR} {
		if !slices.IsSorted(a) {
			slices.Sort(a)
		}
	}
	return x
}

// definite counts the sure requests other than rj with r_i ≤ s_j and
// s_i > r_j − W: #{r_i ≤ s_j} − #{s_i ≤ r_j − W} + #{s_i ≤ r_j − W ∧ r_i > s_j},
// the last term only possible for requests slower than W − lat_j.
func (x *refWindow) definite(rj *decode.Record) int {
	s, r := rj.Start, rj.End
	n := upTo(x.sureR, s, &x.at[0]) - upTo(x.sureS, r-x.W, &x.at[1])
	others := x.long
	if r-s > x.W/2 {
		others = x.sure // fixed after the batch model: see streamWindow.definite
	}
	for _, li := range others {
		if li != rj && li.Start <= r-x.W && li.End > s {
			n++
		}
	}
	if x.sureOnly(rj) && x.contains(rj) {
		lat := r - s
		if lat == 0 {
			n--
		}
		if lat >= x.W {
			n++ // fixed after the batch model, which took one off here
		}
	}
	return n
}

// possible counts the requests other than rj not definitely out of its
// window: #{i ≠ j : r_i > s_j − W ∧ s_i < r_j}.
func (x *refWindow) possible(rj *decode.Record) int {
	n := upTo(x.allS, rj.End-1, &x.at[2]) - upTo(x.allR, rj.Start-x.W, &x.at[3])
	if x.contains(rj) && rj.End > rj.Start {
		n--
	}
	return n
}

// Model evaluates the uncertainty interval of every request of g against a
// limit of L per window w, refused requests counted as documented. It runs
// in O(n log n).
//
// Request i was counted at some τ_i in [s_i, r_i]. For request j, i is
// definitely in its window when r_i ≤ s_j and s_i > r_j − w; definitely out
// when r_i ≤ s_j − w or s_i ≥ r_j; otherwise ambiguous. Requests that may
// not have been counted at all (transport errors, 5xx) are never definite.
func refModel(g Group, limit int, w time.Duration) []Judgement {
	uncertain := g.Uncertain
	if uncertain == nil {
		uncertain = func(*decode.Record) bool { return false }
	}
	all := refNewWindow(g, w, func(*decode.Record) bool { return true }, func(r *decode.Record) bool { return sure(r) && !uncertain(r) })
	adm := refNewWindow(g, w, func(r *decode.Record) bool { return !refused(r) }, func(r *decode.Record) bool { return admitted(r) && !uncertain(r) })
	out := make([]Judgement, 0, len(g.Records))
	for j, rj := range g.Records {
		if !admitted(rj) && !refused(rj) {
			continue
		}
		definite, possible := all.definite(rj), all.possible(rj)
		jd := Judgement{Index: int32(j), Definite: int32(definite), Ambiguous: int32(possible - definite),
			DefiniteAdmitted: int32(adm.definite(rj)), PossibleAdmitted: int32(adm.possible(rj))}
		switch {
		case 1+definite >= limit+1:
			jd.Required = require429
			jd.Leak = admitted(rj)
		case 1+possible <= limit:
			jd.Required = require200
			jd.FalseThrottle = refused(rj)
		}
		out = append(out, jd)
	}
	return out
}

// ObservedLimit returns the most admitted requests of g all sent within one
// window before a refused request's response came back, over every refusal
// of g, and false when nothing was refused.
func refObservedLimit(g Group, w time.Duration) (int, bool) {
	var adm []int64
	for _, r := range g.Records {
		if admitted(r) && (g.Uncertain == nil || !g.Uncertain(r)) {
			adm = append(adm, r.Start)
		}
	}
	sort.Slice(adm, func(i, j int) bool { return adm[i] < adm[j] })
	best, any := 0, false
	for _, r := range g.Records {
		if !refused(r) {
			continue
		}
		any = true
		// admitted i with s_i in (r_j − W, r_j)
		hi := sort.Search(len(adm), func(i int) bool { return adm[i] >= r.End })
		lo := sort.Search(len(adm), func(i int) bool { return adm[i] > r.End-int64(w) })
		best = max(best, hi-lo)
	}
	return best, any
}

// fitFamily replays each candidate limiter (limit L, window w) over the send
// times of g's answered requests and counts mismatches per time bin of w/100,
// which does not care in what order concurrent requests reached the server.
// The fewest mismatches win; ties go to the simplest family.
func refFitFamily(g Group, limit int, w time.Duration) Fit {
	// The server counted each request somewhere between its send and its
	// response: refReplay on both ends and keep, per candidate, the better.
	// Send times fit when the delay is on the way in, response times when
	// requests queued at the server.
	// The mix: admissions on their sends, refusals on their responses.
	var starts, ends, mixed []int64
	var obs []bool
	for _, r := range g.Records {
		if admitted(r) || refused(r) {
			starts, ends, obs = append(starts, r.Start), append(ends, r.End), append(obs, admitted(r))
			mixed = append(mixed, r.End)
			if admitted(r) {
				mixed[len(mixed)-1] = r.Start
			}
		}
	}
	if len(starts) == 0 {
		return Fit{Best: Candidate{Family: familyUnknown, Window: w}}
	}
	endTs, endObs := refSortedBy(ends, obs)
	mixTs, mixObs := refSortedBy(mixed, obs)
	fs, fe, fm := refFitOn(starts, obs, limit, w), refFitOn(endTs, endObs, limit, w), refFitOn(mixTs, mixObs, limit, w)
	fit := Fit{Candidates: make([]Candidate, len(fs.Candidates))}
	for i := range fs.Candidates {
		fit.Candidates[i] = fs.Candidates[i]
		for _, o := range []Fit{fe, fm} {
			if o.Candidates[i].Mismatches < fit.Candidates[i].Mismatches {
				fit.Candidates[i] = o.Candidates[i]
			}
		}
	}
	fit.Best = fit.Candidates[0]
	for _, c := range fit.Candidates[1:] {
		if c.Mismatches < fit.Best.Mismatches {
			fit.Best = c
		}
	}
	fit.EffectiveWindow, fit.effM = fs.EffectiveWindow, fs.effM
	for _, o := range []Fit{fe, fm} {
		if o.effM < fit.effM {
			fit.EffectiveWindow, fit.effM = o.EffectiveWindow, o.effM
		}
	}
	return fit
}

// sortedBy returns ts sorted, reordering obs alongside (a copy).
func refSortedBy(ts []int64, obs []bool) ([]int64, []bool) {
	if slices.IsSorted(ts) {
		return ts, obs
	}
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ts[idx[a]] < ts[idx[b]] })
	t2, o2 := make([]int64, len(ts)), make([]bool, len(ts))
	for i, k := range idx {
		t2[i], o2[i] = ts[k], obs[k]
	}
	return t2, o2
}

// fitOn fits every candidate to requests at times ts (sorted) with the
// observed outcomes obs. Each candidate replays the requests once, adding
// its admissions to the time bins as it goes.
func refFitOn(ts []int64, obs []bool, limit int, w time.Duration) Fit {
	t0 := ts[0]
	bin := max(int64(w)/100, 1)
	nbins := int((ts[len(ts)-1]-t0)/bin) + 1
	bins := make([]int32, len(ts))
	obsBins := make([]int, nbins)
	for i, t := range ts {
		bins[i] = int32((t - t0) / bin)
		if obs[i] {
			obsBins[bins[i]]++
		}
	}
	r := &refReplay{ts: ts, bins: bins, adm: make([]int, nbins), ring: make([]int64, 0, limit)}
	score := func() int {
		m := 0
		for i := range r.adm {
			m += refAbs(r.adm[i] - obsBins[i])
		}
		clear(r.adm)
		return m
	}
	// Scans are bounded so that a flood of a million results fits in about
	// the time it takes to decode them.
	phases := 50
	switch {
	case len(ts) <= 5000:
		phases = 200
	case len(ts) > 20000:
		phases = 10
	}
	var cands []Candidate
	for i := range ts {
		r.admit(i)
	}
	cands = append(cands, Candidate{Family: familyNone, Limit: limit, Window: w, Mismatches: score()})
	for _, cr := range []*bool{boolPtr(true), boolPtr(false)} {
		r.slidingLog(limit, int64(w), *cr)
		cands = append(cands, Candidate{Family: familySlidingLog, CountsRefused: cr, Limit: limit, Window: w, Mismatches: score()})
	}
	// Token buckets refilling L in W, 2W, 4W, … below L windows, and in L.
	bestBucket := Candidate{Family: familyTokenBucket, CountsRefused: boolPtr(false), Limit: limit, Window: w, Mismatches: math.MaxInt}
	for k := 1; ; k *= 2 {
		if k >= limit {
			k = max(limit, 1)
		}
		r.tokenBucket(limit, int64(w)*int64(k))
		if m := score(); m < bestBucket.Mismatches {
			bestBucket.Mismatches, bestBucket.Refill = m, w*time.Duration(k)
		}
		if k >= limit {
			break
		}
	}
	cands = append(cands, bestBucket)
	// Fixed windows and counters at each phase of the grid; on a run of
	// the finest grid, also at refineSteps phases a grid step either side
	// of the best grid phase.
	scanPhases := func(best *Candidate, replay func(origin int64)) {
		for p := range phases {
			ph := int64(w) * int64(p) / int64(phases)
			replay(t0 - ph)
			if m := score(); m < best.Mismatches {
				best.Mismatches, best.Phase = m, time.Duration(ph)
			}
		}
		if phases != 200 {
			return
		}
		grid, refined, refinedM := int64(best.Phase), int64(0), math.MaxInt
		for j := -refineSteps + 1; j < refineSteps; j++ {
			if j == 0 {
				continue
			}
			ph := grid - int64(w)*int64(j)/int64(phases*refineSteps)
			replay(t0 - ph)
			if m := score(); m < refinedM {
				refined, refinedM = ph, m
			}
		}
		if refinedM < best.Mismatches {
			best.Mismatches, best.Phase = refinedM, time.Duration((refined%int64(w)+int64(w))%int64(w))
		}
	}
	bestFixed := Candidate{Family: familyFixedWindow, Limit: limit, Window: w, Mismatches: math.MaxInt}
	scanPhases(&bestFixed, func(o int64) { r.fixedWindow(limit, int64(w), o) })
	cands = append(cands, bestFixed)
	for _, cr := range []*bool{boolPtr(true), boolPtr(false)} {
		best := Candidate{Family: familySlidingWindow, CountsRefused: cr, Limit: limit, Window: w, Mismatches: math.MaxInt}
		scanPhases(&best, func(o int64) { r.slidingCounter(limit, int64(w), o, *cr) })
		cands = append(cands, best)
	}
	fit := Fit{Candidates: cands}
	// The effective window: the sliding-log window length (counting
	// refusals, as documented) that fits best, scanned from half to twice
	// the documented one; on a tie the one nearest the documented.
	fit.effM = math.MaxInt
	for _, k := range windowScan(len(ts)) {
		wk := int64(w) * int64(k) / 100
		r.slidingLog(limit, wk, true)
		if m := score(); m < fit.effM {
			fit.effM, fit.EffectiveWindow = m, time.Duration(wk)
		}
	}
	return fit
}

// refReplay replays candidate limiters over requests at times ts (sorted),
// counting each one's admissions per time bin in adm.
type refReplay struct {
	ts   []int64
	bins []int32 // the time bin of each request
	adm  []int
	ring []int64
}

func (r *refReplay) admit(i int) { r.adm[r.bins[i]]++ }

func refAbs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// slidingLog admits a request when fewer than L counted requests arrived in
// (t − W, t): the L-th newest counted arrival decides.
func (r *refReplay) slidingLog(limit int, W int64, countRefused bool) {
	ring := r.ring[:0] // grows up to limit
	head := 0
	for i, t := range r.ts {
		ok := len(ring) < limit || ring[head] <= t-W
		if ok || countRefused {
			if len(ring) < limit {
				ring = append(ring, t)
			} else {
				ring[head] = t
				head = (head + 1) % limit
			}
		}
		if ok {
			r.admit(i)
		}
	}
}

// tokenBucket holds L tokens refilled at L per W; refusals cost nothing.
func (r *refReplay) tokenBucket(limit int, W int64) {
	tokens, last := float64(limit), r.ts[0]
	for i, t := range r.ts {
		tokens = math.Min(float64(limit), tokens+float64(t-last)*float64(limit)/float64(W))
		last = t
		if tokens >= 1 {
			tokens--
			r.admit(i)
		}
	}
}

// fixedWindow admits L per window aligned at origin.
func (r *refReplay) fixedWindow(limit int, W, origin int64) {
	idx, n := int64(math.MinInt64), 0
	for i, t := range r.ts {
		if k := floorDiv(t-origin, W); k != idx {
			idx, n = k, 0
		}
		if n < limit {
			n++
			r.admit(i)
		}
	}
}

// slidingCounter estimates the rolling count as the previous fixed window's
// count weighted by its overlap plus the current window's count.
func (r *refReplay) slidingCounter(limit int, W, origin int64, countRefused bool) {
	idx, cur, prev := int64(math.MinInt64), 0, 0
	for i, t := range r.ts {
		if k := floorDiv(t-origin, W); k != idx {
			if k == idx+1 {
				prev = cur
			} else {
				prev = 0
			}
			idx, cur = k, 0
		}
		frac := float64(t-origin-idx*W) / float64(W)
		est := float64(prev)*(1-frac) + float64(cur)
		ok := est+1 <= float64(limit)
		if ok || countRefused {
			cur++
		}
		if ok {
			r.admit(i)
		}
	}
}

func le(a []int64, x int64) int { return sort.Search(len(a), func(i int) bool { return a[i] > x }) }
