package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
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

// Analyze judges the input against cfg.
func Analyze(in *Input, cfg Config) *Report {
	rep := &Report{Verdict: Verdict{Schema: 1, Verdict: Pass, Target: cfg.Target, WindowMS: cfg.Window.Milliseconds(), Run: cfg.Run}}
	rep.Warnings = append(rep.Warnings, in.Truncated...)
	notes, warnings := mergeNotes(in, cfg.Window)
	rep.Notes = notes
	rep.Warnings = append(rep.Warnings, warnings...)
	bySurface := map[string]map[string]*Group{}
	// Find each label's group, count, then fill the groups in send order.
	byLabel := map[uint32]*Group{}
	groupOf := func(r *Record) *Group {
		g, ok := byLabel[r.label]
		if !ok {
			if sf := r.Surface(); sf == REST || sf == MCP {
				if bySurface[sf] == nil {
					bySurface[sf] = map[string]*Group{}
				}
				if g = bySurface[sf][r.Source()]; g == nil {
					g = &Group{Surface: sf, Source: r.Source()}
					bySurface[sf][r.Source()] = g
				}
			}
			byLabel[r.label] = g
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
		g.Records = make([]*Record, 0, n)
	}
	for i := range in.Records {
		if g := byLabel[in.Records[i].label]; g != nil {
			g.Records = append(g.Records, &in.Records[i])
		}
	}
	// The surfaces are judged side by side (they only read the records).
	surfaces := []string{REST, MCP}
	svs, sds := make([]SurfaceVerdict, len(surfaces)), make([]SurfaceDetail, len(surfaces))
	var wg sync.WaitGroup
	for i, sf := range surfaces {
		if bySurface[sf] == nil {
			continue
		}
		wg.Go(func() {
			other := bySurface[map[string]string{REST: MCP, MCP: REST}[sf]]
			svs[i], sds[i] = analyzeSurface(sf, bySurface[sf], other, cfg)
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

func analyzeSurface(sf string, groups, other map[string]*Group, cfg Config) (SurfaceVerdict, SurfaceDetail) {
	L, W := limitOf(cfg, sf), cfg.Window
	sv := SurfaceVerdict{Surface: sf, ExpectedLimit: L, Model: FamilyUnknown, Verdict: Pass}
	var sd SurfaceDetail
	tach := tachymeter.New(&tachymeter.Config{Size: 100000, HBins: 10})
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
	locked := lockedOut(primary, W)
	var isoBad []string // the first two
	isoBadN, isoProven := 0, 0
	var shapeBad, shapeN int
	shapeMemo := map[string]bool{} // bodies are interned: few distinct ones
	var extras []string
	errs := map[string]int{}
	for _, src := range srcs {
		g := groups[src]
		js := Model(*g, L, W)
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
			switch {
			case refused(r):
				sd.Refused++
				shapeN++
				ok, seen := shapeMemo[string(r.Body())]
				if !seen {
					ok = shapeOK(sf, r.Body())
					shapeMemo[string(r.Body())] = ok
				}
				if !ok {
					shapeBad++
				}
				_, retryAfter, rateLimit := r.Header()
				if retryAfter != "" && !slices.Contains(extras, "Retry-After: "+retryAfter) && len(extras) < 3 {
					extras = append(extras, "Retry-After: "+retryAfter)
				}
				if rateLimit != "" && !slices.Contains(extras, "RateLimit: "+rateLimit) && len(extras) < 3 {
					extras = append(extras, "RateLimit: "+rateLimit)
				}
			case admitted(r):
				sd.Admitted++
			default:
				sd.Faults++
				if r.Code == 0 {
					errs[errKind(r.Err())]++
				}
			}
		}
		for _, j := range js {
			switch j.Required {
			case Require200:
				sd.Required200++
			case Require429:
				sd.Required429++
			default:
				sd.Indet++
			}
		}
	}
	m := tach.Calc()
	sd.Latency = m
	for k, n := range errs {
		sd.Errors = append(sd.Errors, ErrorCount{Kind: k, N: n})
	}
	slices.SortFunc(sd.Errors, func(a, b ErrorCount) int { return cmp.Or(b.N-a.N, strings.Compare(a.Kind, b.Kind)) })
	// observed limit, family and refusal counting, from the primary group
	obs, anyRefused := ObservedLimit(*primary, W)
	if anyRefused {
		sv.ObservedLimit = &obs
	}
	sd.Fit = FitFamily(*primary, L, W)
	sd.Primary = primary.Source
	required429 := 0
	for _, j := range pj {
		if j.Required == Require429 {
			required429++
		}
	}
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
		if r.Start > firstRefusalEnd || r.Stream() == "spoof" {
			continue
		}
		switch {
		case j.Leak:
			onsetLeaks++
		case j.FalseThrottle:
			onsetFalse++
		case j.Required == Indeterminate:
			onsetIndet++
		}
	}
	switch {
	case !anyRefused && required429 == 0:
		add("onset", Skip, "no window from %s held more than %d requests, so no 429 was due", primary.Source, L)
	case !anyRefused:
		add("onset", Fail, "no 429 at all from %s although %d requests provably exceeded %d in one window: no limit enforced", primary.Source, required429, L)
	case onsetLeaks > 0:
		add("onset", Fail, "from %s %d requests were admitted past %d in one window before the first 429 (observed_limit %d)", primary.Source, onsetLeaks, L, obs)
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
		if r.Stream() == "spoof" {
			continue
		}
		if j.Leak {
			sd.Leaks++
			if len(leaks) < 2 {
				leaks = append(leaks, fmt.Sprintf("%s admitted with %d others surely in its window", at(r, t0), j.Definite))
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
		if j.Required == Indeterminate {
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
		no := false
		sv.RejectedCount = &no
		add("rejected-count", Fail, "%d requests were admitted while refused requests filled the window: refusals do not count (the contract says they do); best fit %s", forgetsProof, sd.Fit.Best)
	case countsProof > 0:
		yes := true
		sv.RejectedCount = &yes
		add("rejected-count", Pass, "%d refusals are explained only by counting refused requests, as documented; best fit %s", countsProof, sd.Fit.Best)
	default:
		add("rejected-count", Skip, "no request proves either way whether refusals count (timing too uncertain, or the plan did not flood); best fit %s", sd.Fit.Best)
	}
	// shape
	hdrs := ""
	if len(extras) > 0 {
		hdrs = "; the target also sent " + strings.Join(extras, ", ")
	}
	want := map[string]string{REST: `{"error":{"code":"rate_limited"}}`, MCP: "JSON-RPC error -32603"}[sf]
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
		if r.Stream() != "spoof" {
			continue
		}
		spoofN++
		if !admitted(r) {
			if j.Required == Require429 || locked(r) {
				spoofProven++
			}
			continue
		}
		if j.Required == Require429 || locked(r) {
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
			if 1+int(j.Definite)+definiteIn(og, r, W) >= L+1 {
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
	for _, row := range ContractRows {
		if row.Surface != sf {
			continue
		}
		for _, src := range srcs {
			for _, r := range groups[src].Records {
				if r.Stream() != row.Stream {
					continue
				}
				rows = append(rows, row.Stream)
				if r.Code == 0 { // no answer: proves nothing about the row
					unanswered = append(unanswered, fmt.Sprintf("%s (%s)", row.Stream, errKind(r.Err())))
					continue
				}
				if p := checkRow(row, r); p != "" {
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

// lockedOut returns a function reporting whether g's window surely held
// more than L requests when a request r was counted, from the server's own
// refusals: some refused request of g came back before r was sent (so at
// least L+1 requests were counted by then), and at most one of g's
// requests was sent early enough to have aged out of r's window since.
func lockedOut(g *Group, w time.Duration) func(r *Record) bool {
	firstRefusalEnd := int64(1<<63 - 1)
	starts := make([]int64, 0, len(g.Records))
	for _, i := range g.Records {
		if refused(i) {
			firstRefusalEnd = min(firstRefusalEnd, i.End)
		}
		starts = append(starts, i.Start)
	}
	slices.Sort(starts)
	return func(r *Record) bool {
		return firstRefusalEnd <= r.Start && le(starts, r.End-int64(w)) <= 1
	}
}

// definiteIn counts the sure requests of g definitely in r's window.
func definiteIn(g *Group, r *Record, w time.Duration) int {
	n := 0
	for _, i := range g.Records {
		if sure(i) && i.End <= r.Start && i.Start > r.End-int64(w) {
			n++
		}
	}
	return n
}
