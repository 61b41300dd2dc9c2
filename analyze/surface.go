package analyze

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
)

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
func (g *groupRun) add(r *archive.Record) {
	s := g.surface
	if g == s.primary && !s.forged(r) {
		s.originOf(r)
	}
	g.model.add(r)
	if refused(r) {
		g.addExtras(r)
	}
}

// addExtras notes the Retry-After and RateLimit values a refusal carried:
// the first six distinct, enough for the surface to report its first three.
func (g *groupRun) addExtras(r *archive.Record) {
	_, retryAfter, rateLimit := g.surface.tab.Header(r)
	if retryAfter != "" && !slices.Contains(g.extras, "Retry-After: "+retryAfter) && len(g.extras) < 6 {
		g.extras = append(g.extras, "Retry-After: "+retryAfter)
	}
	if rateLimit != "" && !slices.Contains(g.extras, "RateLimit: "+rateLimit) && len(g.extras) < 6 {
		g.extras = append(g.extras, "RateLimit: "+rateLimit)
	}
}

// surfaceRun gathers one surface's evidence over the three passes.
type surfaceRun struct {
	name     string
	tab      *archive.Tables // the records' labels and answers
	L        int
	W        time.Duration
	selected []string // the checks reported (nil: all)
	revision string   // the MCP revision spoken, when known
	groups   map[string]*groupRun
	byLabel  []*groupRun // by label index; nil: not seen yet, or not a group
	seen     []bool      // by label index: looked up
	kinds    []uint8     // by label index: what judges its stream (see kindOf)
	t0       int64
	sd       SurfaceDetail
	// first pass
	shapeN, shapeBad int
	shapeMemo        map[string]bool // of the first bodies of refusals made in memory
	errs             map[string]int
	lat              reservoir
	contract         []contractHit
	limitAnswers     answerKinds // what the limit probes got back
	// second pass
	primary     *groupRun
	other       *groupRun // the other surface's group from the primary's source
	otherSure   []span    // its surely counted requests sent within a window of the primary's
	otherBuf    []span    // the array otherSure lies in, from its start
	obs         int
	anyRefused  bool
	judgedN     int
	required429 int
	indet       int
	// The greatest number of requests surely counted in one window of a
	// primary request: what the run proved the target held.
	mostSure int
	// The most admitted requests surely in one window of a refusal: the
	// least the target is proven to admit per window.
	maxDefAdm                          int
	onsetLeaks, onsetFalse, onsetIndet int
	leaks, falses                      []string
	// For rejected-count, judged at the end against the limit the target
	// showed: per distinct (Definite, DefiniteAdmitted) of a leak, and
	// (Possible, PossibleAdmitted) of a refusal, how many.
	leakCounts, refusalCounts map[[2]int32]int
	spoofs                    []spoofProbe
	isoBadN, isoProven        int
	// independence: refusals the other surface's traffic explains, by
	// index in the primary group (up to maxExplained; the rest counted).
	explained     []int32
	explainedMore int
	// boundaries a fixed window of the primary could start at, from the
	// data (its first request; each admission after a refusal)
	origins     []int64
	lastRefused bool
	// third pass
	fit      *familyFit
	fitIndex int32
}

// maxExplained bounds the independence check's candidates kept.
const maxExplained = 10000

// maxOrigins bounds the fixed-window starts taken from the data.
const maxOrigins = 32

// span is a request's send and response.
type span struct{ start, end int64 }

// spoofProbe is a judged request of verify's spoof pairs: a forged-header
// probe or the plain one sent beside it.
type spoofProbe struct {
	start, end         int64
	header             string // the forged header; "" for a plain probe
	admitted, refused  bool
	definite, possible int32
}

// contractHit is a contract probe, kept (they are few) to report in order.
type contractHit struct {
	row    int
	source string
	seq    int
	rec    archive.Record
}

// answerKinds counts what came back to the limit probes of a surface.
type answerKinds struct {
	answered, ok, refused, missing, nonJSON int
}

func newSurfaceRun(name string, cfg Config, tab *archive.Tables) *surfaceRun {
	s := &surfaceRun{name: name, tab: tab, L: limitOf(cfg, name), W: cfg.Window, selected: cfg.Checks, groups: map[string]*groupRun{}, t0: 1<<63 - 1,
		shapeMemo: map[string]bool{}, errs: map[string]int{}, lat: newReservoir(100000),
		leakCounts: map[[2]int32]int{}, refusalCounts: map[[2]int32]int{}}
	if name == "mcp" {
		s.revision = cfg.MCPRevision
	}
	return s
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
// pass); the later passes only look them up, the other surface's too.
func (s *surfaceRun) groupOf(r *archive.Record, create bool) *groupRun {
	id := int(r.LabelID())
	if id < len(s.seen) && s.seen[id] {
		return s.byLabel[id]
	}
	if id >= len(s.seen) {
		n := max(id+1, 2*len(s.seen))
		s.seen, s.byLabel = slices.Grow(s.seen, n-len(s.seen))[:n], slices.Grow(s.byLabel, n-len(s.byLabel))[:n]
	}
	var g *groupRun
	switch l := s.tab.Labels(r); {
	case l.Surface == s.name && create:
		g = s.group(l.Source)
	case l.Surface == s.name:
		g = s.groups[l.Source]
	case s.other != nil && l.Surface == s.other.surface.name && l.Source == s.other.source:
		g = s.other
	}
	s.seen[id], s.byLabel[id] = true, g
	return g
}

// count takes a record of group g in any order (first pass); seq is its
// place in the input.
func (s *surfaceRun) count(g *groupRun, r *archive.Record, seq int) {
	g.n++
	s.t0 = min(s.t0, r.Start)
	if r.Start < g.first {
		g.first, g.second = r.Start, g.first
	} else if r.Start < g.second {
		g.second = r.Start
	}
	s.sd.Requests++
	s.lat.add(r.End - r.Start)
	kind := s.kindOf(r)
	limitProbe := kind&kindLimits != 0
	switch {
	case refused(r):
		g.refusals++
		g.answered++
		g.firstRefusalEnd = min(g.firstRefusalEnd, r.End)
		s.sd.Refused++
		s.shapeN++
		ok, known := r.Judged()
		if !known { // a record made in memory: judge its body
			body := s.tab.Body(r)
			var seen bool
			if ok, seen = s.shapeMemo[string(body)]; !seen {
				ok = shapeOK(s.name, body)
				if len(s.shapeMemo) < 1024 {
					s.shapeMemo[string(body)] = ok
				}
			}
		}
		if !ok {
			s.shapeBad++
		}
	case admitted(r):
		g.answered++
		s.sd.Admitted++
	case r.Code == 0 || r.Code >= 500:
		s.sd.Faults++
		if r.Code == 0 {
			s.errs[archive.ErrKind(s.tab.Err(r))]++
		}
	default:
		s.sd.OtherAnswers++
	}
	if limitProbe && r.Code != 0 {
		k := &s.limitAnswers
		k.answered++
		json, typed := r.JSON()
		switch {
		case typed && !json && r.Code != 429:
			k.nonJSON++
		case refused(r):
			k.refused++
		case admitted(r):
			k.ok++
		case r.Code == 404 || r.Code == 405 || r.Code == 501:
			k.missing++
		}
	}
	if kind&kindContract != 0 {
		stream := s.tab.Labels(r).Stream
		for i, row := range ContractRows {
			if row.Surface == s.name && row.Stream == stream {
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
		if src == archive.OtherSources && len(s.sd.Sources) > 1 {
			continue // many addresses folded together: never the limit's
		}
		if s.primary == nil || g.refusals > s.primary.refusals || (g.refusals == s.primary.refusals && g.n > s.primary.n) {
			s.primary = g
		}
	}
	for _, src := range s.sd.Sources {
		g := s.groups[src]
		g.model = newGroupModel(s.L, s.W, s.forged, func(j *judged) { s.judged(g, j) })
	}
	s.other = other.groups[s.primary.source]
}

// forged reports whether r carries a forged forwarding header (see
// Group.Uncertain).
func (s *surfaceRun) forged(r *archive.Record) bool { return s.kindOf(r)&kindForged != 0 }

// What judges a label's stream (see JudgedBy), as kindOf caches it.
const (
	kindKnown        uint8 = 1 << iota // looked up
	kindLimits                         // JudgedBy is "limits"
	kindContract                       // a failure-table probe (isContractStream)
	kindForged                         // forged forwarding headers (isForged)
	kindSpoofControl                   // the plain probe beside the forged ones
)

// kindOf returns what judges the stream of r's label, looking each label
// up once: every pass asks of every record, and the lookups compare
// strings.
func (s *surfaceRun) kindOf(r *archive.Record) uint8 {
	id := int(r.LabelID())
	if id >= len(s.kinds) {
		s.kinds = slices.Grow(s.kinds, id+1-len(s.kinds))[:id+1]
	}
	if k := s.kinds[id]; k != 0 {
		return k
	}
	stream := s.tab.Labels(r).Stream
	k := kindKnown
	if JudgedBy(stream) == "limits" {
		k |= kindLimits
	}
	if isContractStream(stream) {
		k |= kindContract
	}
	if isForged(stream) {
		k |= kindForged
	}
	if stream == archive.StreamSpoofControl {
		k |= kindSpoofControl
	}
	s.kinds[id] = k
	return k
}

// originOf takes the primary's next request in send order and notes where
// a fixed window could have started: at its first request (a limiter that
// opens a key's window at its first request), and where an admission
// follows a refusal (a new window, if the limiter has fixed ones), each at
// both ends of the request's interval.
func (s *surfaceRun) originOf(r *archive.Record) {
	switch {
	case !admitted(r) && !refused(r):
		return
	case len(s.origins) == 0, admitted(r) && s.lastRefused && len(s.origins) < maxOrigins:
		s.origins = append(s.origins, r.Start, r.End)
	}
	s.lastRefused = refused(r)
}

// locked reports whether the primary group's window surely held more than
// L requests when a request r was counted, from the server's own refusals:
// some refused request of the primary came back before r was sent (so at
// least L+1 requests were counted by then), and at most one of its
// requests was sent early enough to have aged out of r's window since.
func (s *surfaceRun) locked(r *archive.Record) bool {
	p := s.primary
	return p.firstRefusalEnd <= r.Start && r.End-int64(s.W) < p.second
}

// addOther takes a request of the other surface from the primary's source.
func (s *surfaceRun) addOther(r *archive.Record) {
	if m := s.primary.model; m.head == len(m.pending) {
		// The primary's next request is sent at r.Start or later.
		s.trimOther(r.Start)
	}
	if sure(r) {
		if n := len(s.otherSure); n == cap(s.otherSure) {
			// Full: move what is held to the front of its array when the
			// trimmed take most of it, else to one twice as long, rather
			// than let append make a new array every window.
			if 2*n > cap(s.otherBuf) {
				s.otherBuf = make([]span, 0, 2*n+64)
			}
			s.otherSure = s.otherBuf[:copy(s.otherBuf[:n], s.otherSure)]
		}
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
func (s *surfaceRun) definiteOther(r *archive.Record) int {
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
	s.mostSure = max(s.mostSure, 1+int(j.Definite))
	if refused(r) {
		s.obs, s.anyRefused = max(s.obs, j.observed), true
		s.maxDefAdm = max(s.maxDefAdm, int(j.DefiniteAdmitted))
	}
	switch j.Required {
	case Require429:
		s.required429++
	case Indeterminate:
		s.indet++
	}
	// A forged-header probe is judged by the spoof check alone; the plain
	// probe beside it is a limit probe like any other.
	kind := s.kindOf(r)
	spoof := kind&kindForged != 0
	// onset: the first episode, up to the first refusal's response.
	if r.Start <= g.firstRefusalEnd && !spoof {
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
	if !spoof {
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
	// rejected-count: what each reading of refusals says of the request,
	// judged once the limit the target showed is known
	if admitted(r) && !spoof {
		tally(s.leakCounts, [2]int32{j.Definite, j.DefiniteAdmitted})
	}
	if refused(r) && !spoof {
		tally(s.refusalCounts, [2]int32{j.Definite + j.Ambiguous, j.PossibleAdmitted})
	}
	if (spoof || kind&kindSpoofControl != 0) && len(s.spoofs) < 1000 {
		stream := s.tab.Labels(r).Stream
		s.spoofs = append(s.spoofs, spoofProbe{start: r.Start, end: r.End, header: forgedHeaders[stream], admitted: admitted(r), refused: refused(r),
			definite: j.Definite, possible: j.Definite + j.Ambiguous})
	}
	// independence: refusals explained by the other surface's traffic;
	// the third pass asks whether a limiter of this surface alone
	// explains them too. Within a window of the address's first request,
	// what the target counted before the run is unknown and could explain
	// a refusal as well: those prove nothing.
	if s.other != nil && j.FalseThrottle && r.Start >= g.first+int64(s.W) && 1+int(j.Definite)+s.definiteOther(r) >= s.L+1 {
		if len(s.explained) < maxExplained {
			s.explained = append(s.explained, j.Index)
		} else {
			s.explainedMore++
		}
	}
}

// tally counts one more of k, while the map holds fewer than maxExplained
// keys (their number follows the requests in a window, not the run).
func tally(m map[[2]int32]int, k [2]int32) {
	if _, ok := m[k]; ok || len(m) < maxExplained {
		m[k]++
	}
}

// endModels ends the second pass and sets the third up: the fit of the
// primary at the documented limit and at the one the target showed.
func (s *surfaceRun) endModels() {
	for _, src := range s.sd.Sources {
		s.groups[src].model.flush()
	}
	if s.primary == nil {
		return
	}
	limits := []int{s.L}
	if s.anyRefused && s.obs > 0 && s.obs != s.L {
		limits = append(limits, s.obs)
	}
	s.fit = newFamilyFit(limits, s.W, s.primary.answered, s.origins)
	s.fit.watchFor(s.explained)
}

// fitAdd takes the primary's next request in send order (third pass).
func (s *surfaceRun) fitAdd(r *archive.Record) {
	if !s.forged(r) {
		s.fit.add(r, s.fitIndex)
	}
	s.fitIndex++
}

// effectiveLimit is the limit the target proved it admits when that is
// above the documented one (replicas each counting alone behind a load
// balancer, say): the most admitted requests surely in the window of one
// of its refusals. An admission above the documented limit then proves
// nothing about a cause, only that the limit is not the documented one.
func (s *surfaceRun) effectiveLimit() int { return max(s.L, s.maxDefAdm) }

// absent says, when the limit probes of the surface found no API there,
// what they got instead (empty when the API answered).
func (s *surfaceRun) absent(meta *archive.Meta) string {
	k := s.limitAnswers
	if k.answered == 0 || k.ok > 0 || k.refused > 0 || k.missing+k.nonJSON == 0 {
		return ""
	}
	what := fmt.Sprintf("%d of %d answers were 404, 405, 501 or not JSON", k.missing+k.nonJSON, k.answered)
	if smp := s.sample(meta, func(smp *archive.Sample) bool {
		return JudgedBy(smp.Stream) == "limits" && (smp.Code < 200 || smp.Code > 299) && smp.Code != 429
	}); smp != "" {
		what = smp
	}
	return fmt.Sprintf("the API is not there: %s", what)
}

// sample describes the first sample of this surface that want takes:
// "/mcp answers 501 text/html "<html>…"".
func (s *surfaceRun) sample(meta *archive.Meta, want func(*archive.Sample) bool) string {
	for i := range meta.Samples {
		smp := &meta.Samples[i]
		if smp.Surface != s.name || !want(smp) {
			continue
		}
		ct := smp.ContentType
		if ct == "" {
			ct = "no Content-Type"
		}
		return fmt.Sprintf("%s answers %d %s %s", smp.Path, smp.Code, ct, quoteBody(smp.Body))
	}
	return ""
}

// quoteBody quotes the first bytes of a body for a message: printable
// ASCII as is, everything else escaped.
func quoteBody(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, "\\x%02x", c)
		}
	}
	if len(b) == archive.MaxSample {
		sb.WriteString("…")
	}
	sb.WriteByte('"')
	return sb.String()
}

// unanswered says, when the target answered none of the surface's
// requests, why (empty when it answered some).
func (s *surfaceRun) unanswered() string {
	sd := s.sd
	if sd.Requests == 0 || sd.Admitted+sd.Refused+sd.OtherAnswers > 0 {
		return ""
	}
	local := 0
	var kinds []string
	for k, n := range s.errs {
		if strings.Contains(k, "cannot assign requested address") || strings.Contains(k, "bind:") {
			local += n
		}
		kinds = append(kinds, fmt.Sprintf("%d× %s", n, k))
	}
	sort.Strings(kinds)
	if local == sd.Requests {
		return fmt.Sprintf("every one of the %d requests failed on this machine before it was sent (%s): a --sources address this machine does not have", sd.Requests, strings.Join(kinds, "; "))
	}
	transport := 0
	for _, n := range s.errs {
		transport += n
	}
	fives := sd.Faults - transport
	parts := kinds
	if fives > 0 {
		parts = append(parts, fmt.Sprintf("%d× 5xx", fives))
	}
	return fmt.Sprintf("the target answered none of the %d requests (%s)", sd.Requests, strings.Join(parts, "; "))
}
