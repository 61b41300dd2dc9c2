package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jamiealquiza/tachymeter"
)

// Check names, in report order, and the groups --checks selects them by.
var (
	CheckNames  = []string{"onset", "rolling", "rejected-count", "shape", "isolation", "spoof", "independence", "contract"}
	CheckGroups = map[string][]string{
		"limits":    {"onset", "rolling", "rejected-count", "shape"},
		"isolation": {"isolation", "spoof", "independence"},
		"contract":  {"contract"},
	}
)

// Verdicts of checks, surfaces and runs.
const (
	Pass = "pass"
	Fail = "fail"
	Skip = "skip"
)

// Config says what the results are judged against.
type Config struct {
	// Window is the documented window (the run's, when compressed).
	Window time.Duration
	// Limits are the documented limits per surface.
	Limits map[string]int
	// Checks selects checks by name; nil means all.
	Checks []string
	// Target and Run are reported as given.
	Target, Run string
}

// Verdict is the machine-readable verdict, schema 1 (DESIGN.md §4).
type Verdict struct {
	Schema   int              `json:"schema"`
	Verdict  string           `json:"verdict"`
	Target   string           `json:"target"`
	WindowMS int64            `json:"window_ms"`
	Run      string           `json:"run"`
	Surfaces []SurfaceVerdict `json:"surfaces"`
}

// SurfaceVerdict is the verdict of one surface.
type SurfaceVerdict struct {
	Surface       string  `json:"surface"`
	ExpectedLimit int     `json:"expected_limit"`
	ObservedLimit *int    `json:"observed_limit"`
	Model         string  `json:"model"`
	RejectedCount *bool   `json:"rejected_count"`
	Verdict       string  `json:"verdict"`
	Checks        []Check `json:"checks"`
}

// Check is one check's verdict and evidence.
type Check struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
}

// Report is a verdict and what a person needs beside it.
type Report struct {
	Verdict Verdict
	// Surfaces holds, per surface in the verdict's order, the evidence that
	// does not fit schema 1.
	Surfaces []SurfaceDetail
	// Notes describe the input (such as the shards merged); Warnings say
	// what may make the verdict less than it seems.
	Notes, Warnings []string
}

// SurfaceDetail is the evidence behind a surface's verdict.
type SurfaceDetail struct {
	Requests, Admitted, Refused, Faults int
	Required200, Required429, Indet     int
	Leaks, FalseThrottles               int
	// Errors counts the transport errors of results without an answer,
	// by kind (the text after the error's last colon), most frequent first.
	Errors  []ErrorCount
	Fit     Fit
	Latency *tachymeter.Metrics
	Sources []string
	// Primary is the source whose requests decided the limit checks: the
	// one with the most refusals.
	Primary string
}

// ErrorCount is how many results failed with one kind of transport error.
type ErrorCount struct {
	Kind string
	N    int
}

// errKind is the part of a transport error that does not name the request
// or the connection: the text after its last colon.
func errKind(err string) string {
	if err == "" {
		return "no answer"
	}
	if i := strings.LastIndex(err, ": "); i >= 0 {
		return err[i+2:]
	}
	return err
}

// Analyze judges an input held in memory against cfg.
func Analyze(in *Input, cfg Config) *Report {
	rep, _ := AnalyzeSource(in, cfg) // reading memory cannot fail
	return rep
}

// AnalyzeSource judges src against cfg in two passes over its records.
// The first counts each group (a surface and a source address) and picks
// each surface's primary group: the one the limit probes came from, with
// the most refusals. The second, in send order, runs the windowed model
// of every group, and the observed limit and limiter fit of the primaries,
// holding about one window of records at a time.
func AnalyzeSource(src Source, cfg Config) (*Report, error) {
	meta := src.Info()
	rep := &Report{Verdict: Verdict{Schema: 1, Verdict: Pass, Target: cfg.Target, WindowMS: cfg.Window.Milliseconds(), Run: cfg.Run}}
	rep.Warnings = append(rep.Warnings, meta.Truncated...)
	notes, warnings := mergeNotes(meta, cfg.Window)
	rep.Notes = notes
	rep.Warnings = append(rep.Warnings, warnings...)

	// Each surface is judged by a worker of its own, side by side: both see
	// every record and take theirs (and, for the independence check, the
	// other surface's from their primary's source).
	rest, mcp := newSurfaceRun(REST, cfg), newSurfaceRun(MCP, cfg)
	workers := []*surfaceRun{rest, mcp}
	err := fanOut(src.Each, workers, func(s *surfaceRun, r *Record, seq int) {
		if g := s.groupOf(r, true); g != nil {
			s.count(g, r, seq)
		}
	})
	if err != nil {
		return nil, err
	}
	rest.choosePrimary(mcp)
	mcp.choosePrimary(rest)
	err = fanOut(src.InOrder, workers, func(s *surfaceRun, r *Record, _ int) {
		switch g := s.groupOf(r, false); {
		case g == nil:
		case g.surface == s:
			g.add(r)
		case g == s.other:
			s.addOther(r)
		}
	})
	if err != nil {
		return nil, err
	}
	surfaces := map[string]*surfaceRun{}
	for _, s := range workers {
		if len(s.groups) > 0 {
			surfaces[s.name] = s
		}
	}
	for _, sf := range []string{REST, MCP} {
		s := surfaces[sf]
		if s == nil {
			continue
		}
		sv, sd := s.verdict()
		rep.Verdict.Surfaces = append(rep.Verdict.Surfaces, sv)
		rep.Surfaces = append(rep.Surfaces, sd)
		if sv.Verdict == Fail {
			rep.Verdict.Verdict = Fail
		}
	}
	if len(rep.Verdict.Surfaces) == 0 {
		rep.Verdict.Verdict = Fail
		rep.Warnings = append(rep.Warnings, "no REST or MCP requests in the input")
	}
	return rep, nil
}

func limitOf(cfg Config, surface string) int {
	if l := cfg.Limits[surface]; l > 0 {
		return l
	}
	if surface == MCP {
		return 120
	}
	return 240
}

// at formats a record's send time relative to t0.
func at(r *Record, t0 int64) string {
	return "+" + time.Duration(r.Start-t0).Round(time.Millisecond).String()
}

// groupRun is one group's counts (first pass) and model (second pass).
type groupRun struct {
	surface         *surfaceRun
	source          string
	n, refusals     int
	answered        int
	first, second   int64 // the two earliest sends
	firstRefusalEnd int64
	extras          []string // the first distinct headers its refusals carried, in send order
	model           *groupModel
	// Of a group other than its surface's primary: the first two false
	// throttles, in send order.
	isoBad []string
}

// add takes the group's next request in send order (second pass).
func (g *groupRun) add(r *Record) {
	s := g.surface
	if g == s.primary {
		s.fit.add(r, g.model.n)
	}
	g.model.add(r)
	if refused(r) {
		g.addExtras(r)
	}
}

// addExtras notes the Retry-After and RateLimit values a refusal carried:
// the first six distinct, enough for the surface to report its first three.
func (g *groupRun) addExtras(r *Record) {
	_, retryAfter, rateLimit := r.Header()
	if retryAfter != "" && !slices.Contains(g.extras, "Retry-After: "+retryAfter) && len(g.extras) < 6 {
		g.extras = append(g.extras, "Retry-After: "+retryAfter)
	}
	if rateLimit != "" && !slices.Contains(g.extras, "RateLimit: "+rateLimit) && len(g.extras) < 6 {
		g.extras = append(g.extras, "RateLimit: "+rateLimit)
	}
}

// surfaceRun gathers one surface's evidence over both passes.
type surfaceRun struct {
	name     string
	L        int
	W        time.Duration
	selected []string // the checks reported (nil: all)
	groups   map[string]*groupRun
	byLabel  []*groupRun // by label index; nil: not seen yet, or not a group
	seen     []bool      // by label index: looked up
	t0       int64
	sd       SurfaceDetail
	// first pass
	shapeN, shapeBad int
	shapeMemo        map[string]bool // of the first bodies of refusals made in memory
	errs             map[string]int
	lat              reservoir
	contract         []contractHit
	// second pass
	primary                            *groupRun
	other                              *groupRun // the other surface's group from the primary's source
	otherSure                          []span    // its surely counted requests sent within a window of the primary's
	fit                                *familyFit
	obs                                int
	anyRefused                         bool
	judgedN                            int
	required429                        int
	indet                              int
	onsetLeaks, onsetFalse, onsetIndet int
	leaks, falses                      []string
	countsProof, forgetsProof          int
	spoofN, spoofLeaks, spoofProven    int
	explained                          int
	isoBadN, isoProven                 int
}

// span is a request's send and response.
type span struct{ start, end int64 }

// contractHit is a contract probe, kept (they are few) to report in order.
type contractHit struct {
	row    int
	source string
	seq    int
	rec    Record
}

func newSurfaceRun(name string, cfg Config) *surfaceRun {
	return &surfaceRun{name: name, L: limitOf(cfg, name), W: cfg.Window, selected: cfg.Checks, groups: map[string]*groupRun{}, t0: 1<<63 - 1,
		shapeMemo: map[string]bool{}, errs: map[string]int{}, lat: newReservoir(100000)}
}

func (s *surfaceRun) group(source string) *groupRun {
	g := s.groups[source]
	if g == nil {
		g = &groupRun{surface: s, source: source, first: 1<<63 - 1, second: 1<<63 - 1, firstRefusalEnd: 1<<63 - 1}
		s.groups[source] = g
		s.sd.Sources = append(s.sd.Sources, source)
	}
	return g
}

// groupOf returns r's group, of this surface or the other (nil: neither).
// With create it makes groups of this surface as records name them (first
// pass); the second pass only looks them up, the other surface's too.
func (s *surfaceRun) groupOf(r *Record, create bool) *groupRun {
	if int(r.label) < len(s.seen) && s.seen[r.label] {
		return s.byLabel[r.label]
	}
	if int(r.label) >= len(s.seen) {
		n := max(int(r.label)+1, 2*len(s.seen))
		s.seen, s.byLabel = slices.Grow(s.seen, n-len(s.seen))[:n], slices.Grow(s.byLabel, n-len(s.byLabel))[:n]
	}
	var g *groupRun
	switch sf := r.Surface(); {
	case sf == s.name && create:
		g = s.group(r.Source())
	case sf == s.name:
		g = s.groups[r.Source()]
	case s.other != nil && sf == s.other.surface.name && r.Source() == s.other.source:
		g = s.other
	}
	s.seen[r.label], s.byLabel[r.label] = true, g
	return g
}

// count takes a record of group g in any order (first pass); seq is its
// place in the input.
func (s *surfaceRun) count(g *groupRun, r *Record, seq int) {
	g.n++
	s.t0 = min(s.t0, r.Start)
	if r.Start < g.first {
		g.first, g.second = r.Start, g.first
	} else if r.Start < g.second {
		g.second = r.Start
	}
	s.sd.Requests++
	s.lat.add(r.End - r.Start)
	switch {
	case refused(r):
		g.refusals++
		g.answered++
		g.firstRefusalEnd = min(g.firstRefusalEnd, r.End)
		s.sd.Refused++
		s.shapeN++
		ok, known := r.shapeOK()
		if !known { // a record made in memory: judge its body
			var seen bool
			if ok, seen = s.shapeMemo[string(r.Body())]; !seen {
				ok = shapeOK(s.name, r.Body())
				if len(s.shapeMemo) < 1024 {
					s.shapeMemo[string(r.Body())] = ok
				}
			}
		}
		if !ok {
			s.shapeBad++
		}
	case admitted(r):
		g.answered++
		s.sd.Admitted++
	default:
		s.sd.Faults++
		if r.Code == 0 {
			s.errs[errKind(r.Err())]++
		}
	}
	if isContractStream(r.Stream()) {
		for i, row := range ContractRows {
			if row.Surface == s.name && row.Stream == r.Stream() {
				s.contract = append(s.contract, contractHit{row: i, source: g.source, seq: seq, rec: *r})
			}
		}
	}
}

// choosePrimary picks the group the limit probes came from (the most
// refusals, then the most requests) and sets every group's model up for
// the second pass.
func (s *surfaceRun) choosePrimary(other *surfaceRun) {
	clear(s.seen) // the second pass looks the other surface's group up too
	if len(s.groups) == 0 {
		return
	}
	sort.Strings(s.sd.Sources)
	for _, src := range s.sd.Sources {
		g := s.groups[src]
		if s.primary == nil || g.refusals > s.primary.refusals || (g.refusals == s.primary.refusals && g.n > s.primary.n) {
			s.primary = g
		}
	}
	for _, src := range s.sd.Sources {
		g := s.groups[src]
		g.model = newGroupModel(s.L, s.W, func(j *judged) { s.judged(g, j) })
	}
	s.fit = newFamilyFit(s.L, s.W, s.primary.answered)
	s.other = other.groups[s.primary.source]
}

// locked reports whether the primary group's window surely held more than
// L requests when a request r was counted, from the server's own refusals:
// some refused request of the primary came back before r was sent (so at
// least L+1 requests were counted by then), and at most one of its
// requests was sent early enough to have aged out of r's window since.
func (s *surfaceRun) locked(r *Record) bool {
	p := s.primary
	return p.firstRefusalEnd <= r.Start && r.End-int64(s.W) < p.second
}

// addOther takes a request of the other surface from the primary's source.
func (s *surfaceRun) addOther(r *Record) {
	if m := s.primary.model; m.head == len(m.pending) {
		// The primary's next request is sent at r.Start or later.
		s.trimOther(r.Start)
	}
	if sure(r) {
		s.otherSure = append(s.otherSure, span{r.Start, r.End})
	}
}

// trimOther forgets the other surface's requests no primary request sent
// at t or later can count: those sent a window or more before.
func (s *surfaceRun) trimOther(t int64) {
	k := 0
	for k < len(s.otherSure) && s.otherSure[k].start <= t-int64(s.W) {
		k++
	}
	s.otherSure = s.otherSure[k:]
}

// definiteOther counts the other surface's sure requests from the
// primary's source definitely in r's window.
func (s *surfaceRun) definiteOther(r *Record) int {
	n := 0
	for _, o := range s.otherSure {
		if o.end <= r.Start && o.start > r.End-int64(s.W) {
			n++
		}
	}
	return n
}

// judged takes a request of group g with the model's judgement, in send
// order within the group (second pass).
func (s *surfaceRun) judged(g *groupRun, j *judged) {
	if !j.judged {
		return
	}
	r := &j.Record
	switch j.Required {
	case Require200:
		s.sd.Required200++
	case Require429:
		s.sd.Required429++
	default:
		s.sd.Indet++
	}
	if g != s.primary {
		if j.FalseThrottle {
			s.isoBadN++
			if len(g.isoBad) < 2 {
				g.isoBad = append(g.isoBad, fmt.Sprintf("%s refused at %s with at most %d in its own window", g.source, at(r, s.t0), j.Definite+j.Ambiguous))
			}
		}
		if admitted(r) && s.locked(r) {
			s.isoProven++
		}
		return
	}
	// The primary group: the other surface's requests before this one's
	// window are of no more use.
	s.trimOther(r.Start)
	s.judgedN++
	if refused(r) {
		s.obs, s.anyRefused = max(s.obs, j.observed), true
	}
	L, stream := s.L, r.Stream()
	switch j.Required {
	case Require429:
		s.required429++
	case Indeterminate:
		s.indet++
	}
	// onset: the first episode, up to the first refusal's response.
	if r.Start <= g.firstRefusalEnd && stream != "spoof" {
		switch {
		case j.Leak:
			s.onsetLeaks++
		case j.FalseThrottle:
			s.onsetFalse++
		case j.Required == Indeterminate:
			s.onsetIndet++
		}
	}
	// rolling: leaks and false throttles of the limit probes
	if stream != "spoof" {
		if j.Leak {
			s.sd.Leaks++
			if len(s.leaks) < 2 {
				s.leaks = append(s.leaks, fmt.Sprintf("%s admitted with %d others surely in its window", at(r, s.t0), j.Definite))
			}
		}
		if j.FalseThrottle {
			s.sd.FalseThrottles++
			if len(s.falses) < 2 {
				s.falses = append(s.falses, fmt.Sprintf("%s refused with at most %d others in its window", at(r, s.t0), j.Definite+j.Ambiguous))
			}
		}
	}
	// rejected-count: requests that only one reading of refusals explains
	if refused(r) && 1+int(j.PossibleAdmitted) <= L && !j.FalseThrottle {
		s.countsProof++ // a limiter that forgot refusals had to admit it
	}
	if j.Leak && 1+int(j.DefiniteAdmitted) <= L {
		s.forgetsProof++ // admitted although the refusals alone filled the window
	}
	// spoof: forged forwarding headers while the address was over its limit
	if stream == "spoof" {
		s.spoofN++
		switch {
		case !admitted(r):
			if j.Required == Require429 || s.locked(r) {
				s.spoofProven++
			}
		case j.Required == Require429 || s.locked(r):
			s.spoofLeaks++
		}
	}
	// independence: refusals explained only by the other surface's traffic
	if s.other != nil && j.FalseThrottle && 1+int(j.Definite)+s.definiteOther(r) >= L+1 {
		s.explained++
	}
}

// verdict ends the second pass and judges the surface.
func (s *surfaceRun) verdict() (SurfaceVerdict, SurfaceDetail) {
	for _, src := range s.sd.Sources {
		s.groups[src].model.flush()
	}
	L, W, sd, primary := s.L, s.W, s.sd, s.primary
	sv := SurfaceVerdict{Surface: s.name, ExpectedLimit: L, Model: FamilyUnknown, Verdict: Pass}
	m := s.lat.metrics()
	sd.Latency = m
	for k, n := range s.errs {
		sd.Errors = append(sd.Errors, ErrorCount{Kind: k, N: n})
	}
	slices.SortFunc(sd.Errors, func(a, b ErrorCount) int { return cmp.Or(b.N-a.N, strings.Compare(a.Kind, b.Kind)) })
	var extras []string
	for _, src := range s.sd.Sources {
		for _, e := range s.groups[src].extras {
			if !slices.Contains(extras, e) && len(extras) < 3 {
				extras = append(extras, e)
			}
		}
	}
	// observed limit, family and refusal counting, from the primary group
	obs, anyRefused := s.obs, s.anyRefused
	if anyRefused {
		sv.ObservedLimit = &obs
	}
	sd.Fit = s.fit.result()
	sd.Primary = primary.source
	required429 := s.required429
	switch {
	case !anyRefused && required429 == 0:
		sv.Model = FamilyUnknown
	case !anyRefused:
		sv.Model = FamilyNone
	default:
		sv.Model = sd.Fit.Best.Family
		if sv.Model == FamilyNone {
			sv.Model = FamilyUnknown
		}
	}

	checks := map[string]Check{}
	add := func(name, verdict, format string, args ...any) {
		checks[name] = Check{Name: name, Verdict: verdict, Detail: fmt.Sprintf(format, args...)}
	}
	// onset fails only on what is proven: an admission past L, a refusal
	// below L, or no refusal although the window provably exceeded L.
	switch {
	case !anyRefused && required429 == 0:
		add("onset", Skip, "no window from %s held more than %d requests, so no 429 was due", primary.source, L)
	case !anyRefused:
		add("onset", Fail, "no 429 at all from %s although %d requests provably exceeded %d in one window: no limit enforced", primary.source, required429, L)
	case s.onsetLeaks > 0:
		add("onset", Fail, "from %s %d requests were admitted past %d in one window before the first 429 (observed_limit %d)", primary.source, s.onsetLeaks, L, obs)
	case s.onsetFalse > 0:
		add("onset", Fail, "from %s 429s began before %d requests could have been in one window (observed_limit %d)", primary.source, L, obs)
	case obs == L:
		add("onset", Pass, "from %s the first 429 came after exactly %d admitted in one window (observed_limit %d)", primary.source, L, obs)
	default:
		add("onset", Pass, "from %s observed_limit %d, within the timing uncertainty: %d requests of the onset could be counted in either window; none provably broke %d", primary.source, obs, s.onsetIndet, L)
	}
	ew := fmt.Sprintf("effective window %v (documented %v)", sd.Fit.EffectiveWindow.Round(time.Millisecond), W)
	if sd.Leaks+sd.FalseThrottles == 0 {
		add("rolling", Pass, "%d requests from %s: 0 leaks, 0 false throttles (%d indeterminate); %s", s.judgedN, primary.source, s.indet, ew)
	} else {
		add("rolling", Fail, "%d leaks (%s), %d false throttles (%s) against %d per %v; %s",
			sd.Leaks, strings.Join(s.leaks, "; "), sd.FalseThrottles, strings.Join(s.falses, "; "), L, W, ew)
	}
	switch {
	case s.forgetsProof > 0:
		no := false
		sv.RejectedCount = &no
		add("rejected-count", Fail, "%d requests were admitted while refused requests filled the window: refusals do not count (the contract says they do); best fit %s", s.forgetsProof, sd.Fit.Best)
	case s.countsProof > 0:
		yes := true
		sv.RejectedCount = &yes
		add("rejected-count", Pass, "%d refusals are explained only by counting refused requests, as documented; best fit %s", s.countsProof, sd.Fit.Best)
	default:
		add("rejected-count", Skip, "no request proves either way whether refusals count (timing too uncertain, or the plan did not flood); best fit %s", sd.Fit.Best)
	}
	hdrs := ""
	if len(extras) > 0 {
		hdrs = "; the target also sent " + strings.Join(extras, ", ")
	}
	want := map[string]string{REST: `{"error":{"code":"rate_limited"}}`, MCP: "JSON-RPC error -32603"}[s.name]
	switch {
	case s.shapeN == 0:
		add("shape", Skip, "no 429 to inspect")
	case s.shapeBad == 0:
		add("shape", Pass, "all %d refusals carry %s%s", s.shapeN, want, hdrs)
	default:
		add("shape", Fail, "%d of %d refusals lack %s%s", s.shapeBad, s.shapeN, want, hdrs)
	}
	// isolation: another address is refused though its own window provably
	// allowed it (fail), or admitted while the primary address was provably
	// over its limit (pass).
	if len(s.sd.Sources) < 2 {
		add("isolation", Skip, "one source address only (%s): isolation needs a second (--sources)", primary.source)
	} else {
		var isoBad []string
		for _, src := range s.sd.Sources {
			for _, b := range s.groups[src].isoBad {
				if len(isoBad) < 2 {
					isoBad = append(isoBad, b)
				}
			}
		}
		switch {
		case s.isoBadN > 0:
			add("isolation", Fail, "another address shares the budget of %s: %s", primary.source, strings.Join(isoBad, "; "))
		case s.isoProven == 0:
			add("isolation", Skip, "no request from another address went out while %s was provably over its limit (timing too uncertain)", primary.source)
		default:
			add("isolation", Pass, "%d requests from other addresses were admitted while %s was provably over its limit", s.isoProven, primary.source)
		}
	}
	switch {
	case s.spoofN == 0:
		add("spoof", Skip, "no probe with forged forwarding headers")
	case s.spoofLeaks > 0:
		add("spoof", Fail, "%d of %d probes with forged X-Forwarded-For, Forwarded or X-Real-IP were admitted while %s was provably over its limit: the target trusts forwarding headers", s.spoofLeaks, s.spoofN, primary.source)
	case s.spoofProven == 0:
		add("spoof", Skip, "no forged-header probe went out while %s was provably over its limit (timing too uncertain)", primary.source)
	default:
		add("spoof", Pass, "%d probes with forged X-Forwarded-For, Forwarded or X-Real-IP were refused like their real address", s.spoofProven)
	}
	switch {
	case s.other == nil:
		add("independence", Skip, "the other surface was not exercised from %s", primary.source)
	case s.explained > 0:
		add("independence", Fail, "%d refusals on %s from %s are explained only by counting the other surface's requests: the surfaces share a counter", s.explained, s.name, primary.source)
	default:
		add("independence", Pass, "traffic on the other surface from %s did not count toward this one", primary.source)
	}
	// contract, in the table's order, then by source, then by send time
	slices.SortStableFunc(s.contract, func(a, b contractHit) int {
		return cmp.Or(a.row-b.row, strings.Compare(a.source, b.source), cmp.Compare(a.rec.Start, b.rec.Start), a.seq-b.seq)
	})
	var rows, bad, unanswered []string
	for _, h := range s.contract {
		row, r := ContractRows[h.row], &h.rec
		rows = append(rows, row.Stream)
		if r.Code == 0 { // no answer: proves nothing about the row
			unanswered = append(unanswered, fmt.Sprintf("%s (%s)", row.Stream, errKind(r.Err())))
			continue
		}
		if p := checkRow(row, r); p != "" {
			bad = append(bad, fmt.Sprintf("%s (%s): %s", row.Stream, row.What, p))
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

	selected := s.selected
	if selected == nil {
		selected = CheckNames
	}
	for _, name := range CheckNames {
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

// fanOut runs each over the source's records and hands them, in batches,
// to one goroutine per surface, which calls take with its place in the
// stream. It returns once every worker is done.
func fanOut(each func(func(*Record)) error, workers []*surfaceRun, take func(s *surfaceRun, r *Record, seq int)) error {
	type batch struct {
		recs []Record
		seq  int
		left atomic.Int32
	}
	const size = 4096
	free := make(chan *batch, 8)
	for range cap(free) {
		free <- &batch{recs: make([]Record, 0, size)}
	}
	chans := make([]chan *batch, len(workers))
	var wg sync.WaitGroup
	for i, s := range workers {
		chans[i] = make(chan *batch, cap(free))
		wg.Go(func() {
			for b := range chans[i] {
				for k := range b.recs {
					take(s, &b.recs[k], b.seq+k)
				}
				if b.left.Add(-1) == 0 {
					free <- b
				}
			}
		})
	}
	b, seq := <-free, 0
	send := func() {
		b.seq = seq
		seq += len(b.recs)
		b.left.Store(int32(len(workers)))
		for _, c := range chans {
			c <- b
		}
		b = <-free
		b.recs = b.recs[:0]
	}
	err := each(func(r *Record) {
		if b.recs = append(b.recs, *r); len(b.recs) == size {
			send()
		}
	})
	if len(b.recs) > 0 {
		send()
	}
	for _, c := range chans {
		close(c)
	}
	wg.Wait()
	return err
}
