package analyze

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// groupRun is one group's counts (first pass) and model (second pass).
type groupRun struct {
	surface         *surfaceRun
	source          string
	index           int // its place among the surface's groups, in the order they were seen
	n, refusals     int
	answered        int
	first, second   int64 // the two earliest sends
	secondBurstEnd  int64 // the last send of verify's second burst (0: none)
	onset           bool  // it sent verify's onset burst (method.StreamOnset): the plan's limit address
	firstRefusalEnd int64
	// slowestRefusal is the longest a refusal took to come back: how long
	// the target took to decide, at most, where it decided fast; and
	// refusalBins the fastest and the slowest per refusalBin of sends
	// (see decidedBy and heldApartEnds).
	slowestRefusal int64
	// heldApartEnds holds, for the primary, the bins of responses (up to
	// unorderedBins of them) of the refusals that took orderedShare of
	// the window longer than the fastest of the run (second pass): see
	// surfaceRun.unordered.
	heldApartEnds map[int64]bool
	refusalBins   map[int64]latencySpan
	slowest       latencySpan // of every refusal (see decidedBy, heldApartEnds)
	refusalBin    int64
	// held counts, per heldBin of response time, the admissions that came
	// back more than heldAfter later than the slowest refusal took (second
	// pass): see heldTogether.
	held  map[int64]int
	model *groupModel
	// admLat and refLat sample how long its admissions and its refusals
	// took to come back (see timingNote).
	admLat, refLat reservoir
}

// A stall of the host holds every request in flight and lets them all go
// as it ends: heldMin admissions of a group held longer than any refusal
// by more than heldAfter and back within three heldBins of each other are
// a stall's, and the limiter may have decided them as it ended, at their
// responses. A delaying limiter's admissions (nginx's delay) are released
// one at a time at its rate instead: heldMin within 6 ms takes a rate
// over 500 a second.
const (
	heldBin   = 2 * int64(time.Millisecond)
	heldAfter = 20 * int64(time.Millisecond)
	heldMin   = 4
	// maxHeldBins bounds the bins a group keeps, so that analyze's memory
	// stays the rate's and the window's, not the run's length: against a
	// service slower than its limiter's refusals every admission is held,
	// and a long run keeps the stalls of its first 65 536 bins.
	maxHeldBins = 1 << 16
)

// refusalBinShare is the share of the window of a bin of sends in which
// the slowest refusal is kept (see decidedBy): the plan's refusals come
// at least every 0.02 W from the flood on, and a stall holds every
// request sent within its span.
const refusalBinShare = 0.01

// latencySpan is the fastest, the slowest and the next slowest (0 with
// one) of some latencies.
type latencySpan struct{ lo, high, next int64 }

// with is s with latency d too.
func (s latencySpan) with(d int64) latencySpan {
	s.lo = min(s.lo, d)
	if d > s.high {
		s.high, s.next = d, s.high
	} else {
		s.next = max(s.next, d)
	}
	return s
}

// addRefusal notes how long refusal r took, by when it was sent.
func (g *groupRun) addRefusal(r *decode.Record, w time.Duration) {
	d := r.End - r.Start
	if g.refusalBins == nil {
		g.refusalBins, g.refusalBin = map[int64]latencySpan{}, max(int64(refusalBinShare*float64(w)), 1)
		g.slowest = latencySpan{d, d, 0}
	} else {
		g.slowest = g.slowest.with(d)
	}
	k := r.Start / g.refusalBin
	if v, ok := g.refusalBins[k]; ok {
		g.refusalBins[k] = v.with(d)
	} else if len(g.refusalBins) < maxHeldBins {
		g.refusalBins[k] = latencySpan{d, d, 0}
	}
}

// decidedBy is how long after its send a request sent at start was
// decided at the latest, where the target decided fast: as long as the
// next-to-slowest refusal sent within five bins (0.05 W) of it took (a
// stall then took them as long), or, with none sent that near, the
// next-to-slowest of all (the one refusal, where there was one). One
// refusal a busy host held for a share of the window no longer loosens
// the bound of every request: against nginx's delay, the admissions it
// held half a window were replayed up to that refusal's latency after
// their sends, and a bucket refilling one every 25 ms then fitted no
// better than a log on responses. Nor does one refusal held on its own
// (a heavy tail's, overtaken by the refusals sent after it) loosen its
// neighbours': on the busy host, one refusal of MCP's flood that took
// 31.5 ms where those around it took 0.1 to 10 had every admission of
// nginx's bucket replayed 31.5 ms after its send, behind the refusals
// sent after it: in 18 runs of 1 000 the bucket was left open against a
// counter on responses. A stall holds every request in flight, refusals
// around it as well, so two refusals as slow still bound it.
func (g *groupRun) decidedBy(start int64) int64 {
	k := start / g.refusalBin
	var top latencySpan
	found := false
	for j := k - 5; j <= k+5; j++ {
		if v, ok := g.refusalBins[j]; ok {
			top = top.with(v.high)
			if v.next > 0 {
				top = top.with(v.next)
			}
			found = true
		}
	}
	if !found {
		top = g.slowest
	}
	if top.next > 0 {
		return top.next
	}
	return top.high
}

// heldApart notes refusal r (second pass) where it took more than by
// longer than the fastest refusal of the run (see orderedShare).
func (g *groupRun) heldApart(r *decode.Record, by int64) {
	if len(g.heldApartEnds) < unorderedBins && r.End-r.Start-g.slowest.lo > by {
		if g.heldApartEnds == nil {
			g.heldApartEnds = map[int64]bool{}
		}
		g.heldApartEnds[r.End/g.refusalBin] = true
	}
}

// heldTogether reports whether a response at end came back with a stall's
// (see heldMin).
func (g *groupRun) heldTogether(end int64) bool {
	k := end / heldBin
	return g.held[k-1]+g.held[k]+g.held[k+1] >= heldMin
}

// add takes the group's next request in send order (second pass).
func (g *groupRun) add(r *decode.Record) {
	s := g.surface
	if g == s.primary && refused(r) {
		g.heldApart(r, int64(orderedShare*float64(s.W)))
	}
	if (g == s.primary || g == s.second) && g.refusals > 0 && admitted(r) && r.End-r.Start > g.slowestRefusal+heldAfter {
		if g.held == nil {
			g.held = map[int64]int{}
		}
		if k := r.End / heldBin; g.held[k] > 0 || len(g.held) < maxHeldBins {
			g.held[k]++
		}
	}
	switch {
	case g == s.primary && !s.forged(r):
		s.origins.of(r)
	case g == s.second:
		s.secondOrigins.of(r)
	}
	g.model.add(r)
}

// surfaceRun runs one surface's model over the three passes, and hands the
// records to its checks (see checkRun), which gather their own evidence.
type surfaceRun struct {
	name     string
	tab      *decode.Tables // the records' labels and answers
	L        int
	W        time.Duration
	runW     time.Duration      // the run's window (Config.Window), W where the surface has none of its own
	selected []string           // the checks reported (nil: all)
	charts   bool               // keep the window chart's points (Config.Charts)
	revision string             // the MCP revision spoken, when known
	refusals map[string]Refusal // a contract's limits' refusals (Config.Refusals)
	key      string             // what its limit counts by, when not the client address (Config.Keys)
	routes   []string           // its limit's routes, when several share its budget (Config.Routes)
	counts   string             // whether refusals count: "true", "false" or "" (not said) (Config.RefusalsCount)
	family   Family             // the limiter its contract documents, when not a sliding log (Config.Families)
	// unreached, for a stacked limit (Config.Stacked), says why the run
	// judges nothing of it (see unreachedBy); "" for any other surface.
	unreached string
	// onsetOnly, for a stacked limit the run probed (its stream from an
	// address of its own, method.StreamStacked), says why its checks but
	// onset, shape and headers are left open (see onsetOnlyBy).
	onsetOnly string
	// sentBefore is when an earlier run last sent from the run's
	// addresses, within a window of its start (Unix ns; 0: none known)
	sentBefore int64
	groups     map[string]*groupRun
	byLabel    []*groupRun // by label index; nil: not seen yet, or not a group
	seen       []bool      // by label index: looked up
	kinds      []uint8     // by label index: what judges its stream (see kindOf)
	t0         int64
	sd         SurfaceDetail
	// the checks in report order, and those of them each pass calls
	checks           []surfaceCheck
	counters         []counter
	primaryObservers []primaryObserver
	groupObservers   []groupObserver
	otherObservers   []otherObserver
	fitWatchers      []fitWatcher
	fresh            *freshStart // whether the primary's budget was whole at the start
	// first pass
	errs         map[string]int
	lat          reservoir
	limitAnswers answerKinds // what the limit probes got back
	otherAnswers answerKinds // what the surface's other probes got back
	// second pass
	primary     *groupRun
	others      []*groupRun // the other surfaces' groups from the primary's source
	obs         int
	anyRefused  bool
	required429 int // of the primary
	// The most admitted requests surely in one window of a refusal: the
	// least the target is proven to admit per window.
	maxDefAdm int
	// what the model proved of the primary's admissions (see LeakProof)
	leaks leakProof
	// boundaries a fixed window of the primary could start at, from the
	// data (its first request; each admission after a refusal)
	origins origins
	// second is the group of another address with the most answered
	// requests, at least L (verify's isolation address, whose burst and
	// rebound carry no refusals), fitted beside the primary: a family
	// must explain both (nil: none).
	second        *groupRun
	secondOrigins origins
	// the primary's requests as its model judged them, for the window
	// chart (Config.Charts; nil: not asked)
	window *WindowSeries
	// third pass
	fit, secondFit *familyFit
}

// maxOrigins bounds the fixed-window starts taken from the data.
const maxOrigins = 32

// answerKinds counts what came back to the limit probes of a surface, or
// to its other probes.
type answerKinds struct {
	answered, ok, refused, missing, nonJSON int
}

func newSurfaceRun(name string, cfg Config, tab *decode.Tables) *surfaceRun {
	s := &surfaceRun{name: name, tab: tab, L: limitOf(cfg, name), W: cfg.Window, runW: cfg.Window, selected: cfg.Checks, charts: cfg.Charts, groups: map[string]*groupRun{}, t0: 1<<63 - 1,
		errs: map[string]int{}, lat: newReservoir(100000), refusals: cfg.Refusals, key: cfg.Keys[name], routes: cfg.Routes[name], counts: "true", family: cfg.Families[name]}
	if c, ok := cfg.RefusalsCount[name]; ok {
		s.counts = c
	}
	if w, ok := cfg.Windows[name]; ok && w > 0 {
		s.W = w // its own, as many times the run's as the contract says
	}
	if name == "mcp" {
		s.revision = cfg.MCPRevision
	}
	if !cfg.SentBefore.IsZero() {
		s.sentBefore = cfg.SentBefore.UnixNano()
	}
	s.newChecks()
	return s
}

func (s *surfaceRun) group(source string) *groupRun {
	g := s.groups[source]
	if g == nil {
		g = &groupRun{surface: s, source: source, index: len(s.groups), first: 1<<63 - 1, second: 1<<63 - 1, firstRefusalEnd: 1<<63 - 1,
			admLat: newReservoir(timingSample), refLat: newReservoir(timingSample)}
		s.groups[source] = g
		s.sd.Sources = append(s.sd.Sources, source)
	}
	return g
}

// groupOf returns r's group, of this surface or of another surface from
// the primary's source (nil: neither). With create it makes groups of this
// surface as records name them (first pass); the later passes only look
// them up, the other surfaces' too.
func (s *surfaceRun) groupOf(r *decode.Record, create bool) *groupRun {
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
	default:
		for _, o := range s.others {
			if l.Surface == o.surface.name && l.Source == o.source {
				g = o
			}
		}
	}
	s.seen[id], s.byLabel[id] = true, g
	return g
}

// count takes a record of group g in any order (first pass); seq is its
// place in the input.
func (s *surfaceRun) count(g *groupRun, r *decode.Record, seq int) {
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
	if kind&kindSecondBurst != 0 {
		g.secondBurstEnd = max(g.secondBurstEnd, r.Start)
	}
	if kind&kindOnset != 0 {
		g.onset = true
	}
	switch {
	case refused(r):
		g.refusals++
		g.answered++
		g.firstRefusalEnd = min(g.firstRefusalEnd, r.End)
		g.slowestRefusal = max(g.slowestRefusal, r.End-r.Start)
		g.addRefusal(r, s.W)
		g.refLat.add(r.End - r.Start)
		s.sd.Refused++
	case admitted(r):
		g.answered++
		g.admLat.add(r.End - r.Start)
		s.sd.Admitted++
	case r.Code == 0 || r.Code >= 500:
		s.sd.Faults++
		if r.Code == 0 {
			s.errs[archive.ErrKind(s.tab.Err(r))]++
		}
	default:
		s.sd.OtherAnswers++
	}
	if r.Code != 0 {
		k := &s.limitAnswers
		if !limitProbe {
			k = &s.otherAnswers
		}
		k.answered++
		json, typed := r.JSON()
		switch {
		case typed && !json && !refused(r):
			k.nonJSON++
		case refused(r):
			k.refused++
		case admitted(r):
			k.ok++
		case r.Code == 404 || r.Code == 405 || r.Code == 501:
			k.missing++
		case json && !limitProbe: // the API's own error (a 400, a 422): it is there
			k.ok++
		}
	}
	for _, c := range s.counters {
		c.count(s, g, r, kind, seq)
	}
}

// choosePrimary picks the group the limit probes came from (the most
// refusals, then the most requests) and sets every group's model up for
// the second pass.
func (s *surfaceRun) choosePrimary(all []*surfaceRun) {
	clear(s.seen) // the second pass looks the other surfaces' groups up too
	if len(s.groups) == 0 {
		return
	}
	sort.Strings(s.sd.Sources)
	// A run of verify's plan says which address it probes the limit from:
	// the one that sent the onset burst. Another address that shares its
	// budget (a limit counted otherwise than the contract says) can be
	// refused more often, and is still not the one the plan probes.
	planned := false
	for _, g := range s.groups {
		planned = planned || g.onset
	}
	for _, src := range s.sd.Sources {
		g := s.groups[src]
		if src == decode.OtherSources && len(s.sd.Sources) > 1 || planned && !g.onset {
			continue // many addresses folded together, or not the plan's: never the limit's
		}
		if s.primary == nil || g.refusals > s.primary.refusals || (g.refusals == s.primary.refusals && g.n > s.primary.n) {
			s.primary = g
		}
	}
	if s.charts {
		s.window = &WindowSeries{}
	}
	for _, src := range s.sd.Sources {
		g := s.groups[src]
		g.model = newGroupModel(s.L, s.W, s.forged, func(j *judged) { s.judged(g, j) })
		if g != s.primary && src != decode.OtherSources && g.answered >= s.L && (s.second == nil || g.answered > s.second.answered) {
			s.second = g
		}
	}
	for _, o := range all {
		if g := o.groups[s.primary.source]; o != s && g != nil {
			s.others = append(s.others, g)
		}
	}
}

// forged reports whether r carries a forged forwarding header (see
// Group.Uncertain).
func (s *surfaceRun) forged(r *decode.Record) bool { return s.kindOf(r)&kindForged != 0 }

// What judges a label's stream (see method.JudgedBy), as kindOf caches it.
const (
	kindKnown        uint8 = 1 << iota // looked up
	kindLimits                         // JudgedBy is "limits"
	kindContract                       // a failure-table probe (method.IsContractStream)
	kindForged                         // forged forwarding headers (method.IsForged)
	kindSpoofControl                   // the plain probe beside the forged ones
	kindSecondBurst                    // verify's second burst (method.StreamSecond)
	kindOnset                          // verify's onset burst (method.StreamOnset)
)

// kindOf returns what judges the stream of r's label, looking each label
// up once: every pass asks of every record, and the lookups compare
// strings.
func (s *surfaceRun) kindOf(r *decode.Record) uint8 {
	id := int(r.LabelID())
	if id >= len(s.kinds) {
		s.kinds = slices.Grow(s.kinds, id+1-len(s.kinds))[:id+1]
	}
	if k := s.kinds[id]; k != 0 {
		return k
	}
	stream := s.tab.Labels(r).Stream
	k := kindKnown
	if method.JudgedBy(stream) == "limits" {
		k |= kindLimits
	}
	if method.IsContractStream(stream) {
		k |= kindContract
	}
	if method.IsForged(stream) {
		k |= kindForged
	}
	if stream == method.StreamSpoofControl {
		k |= kindSpoofControl
	}
	if stream == method.StreamSecond {
		k |= kindSecondBurst
	}
	if stream == method.StreamOnset {
		k |= kindOnset
	}
	s.kinds[id] = k
	return k
}

// origins are the boundaries a fixed window of one group could start at,
// from the data, at both ends of each request's interval.
type origins struct {
	at          []int64
	lastRefused bool
}

// of takes the group's next request in send order and notes where a fixed
// window could have started: at its first request (a limiter that opens a
// key's window at its first request), and where an admission follows a
// refusal (a new window, if the limiter has fixed ones), each at both ends
// of the request's interval.
func (o *origins) of(r *decode.Record) {
	switch {
	case !admitted(r) && !refused(r):
		return
	case len(o.at) == 0, admitted(r) && o.lastRefused && len(o.at) < maxOrigins:
		o.at = append(o.at, r.Start, r.End)
	}
	o.lastRefused = refused(r)
}

// addOther takes a request of the other surface from the primary's source.
func (s *surfaceRun) addOther(r *decode.Record) {
	for _, o := range s.otherObservers {
		o.other(s, r)
	}
}

// judged takes a request of group g with the model's judgement, in send
// order within the group (second pass), and hands it to the observers.
func (s *surfaceRun) judged(g *groupRun, j *judged) {
	if !j.judged {
		return
	}
	if g == s.primary && s.window != nil {
		s.window.add(j)
	}
	r := &j.Record
	switch j.Required {
	case require200:
		s.sd.Required200++
	case require429:
		s.sd.Required429++
	default:
		s.sd.Indet++
	}
	if g != s.primary {
		for _, o := range s.groupObservers {
			o.judgedOther(s, g, j)
		}
		return
	}
	p := sighting{judged: j, g: g, stream: s.tab.Labels(r).Stream}
	p.forged = s.kindOf(r)&kindForged != 0
	s.countPrimary(p)
	for _, o := range s.primaryObservers {
		o.judgedPrimary(s, p)
	}
}

// countPrimary counts what the shared model and the surface's detail take
// from a judged request of the primary: the observed limit, the least the
// target admits, the requests that had to be refused, and the leaks and
// false throttles of the limit probes (a forged-header probe is judged by
// the spoof check alone; the plain probe beside it is a limit probe like
// any other).
func (s *surfaceRun) countPrimary(p sighting) {
	if refused(&p.Record) {
		s.obs, s.anyRefused = max(s.obs, p.observed), true
		s.maxDefAdm = max(s.maxDefAdm, int(p.DefiniteAdmitted))
	}
	if p.Required == require429 {
		s.required429++
	}
	if admitted(&p.Record) && !p.forged {
		s.leaks.All = max(s.leaks.All, 1+int(p.Definite))
		s.leaks.Admitted = max(s.leaks.Admitted, 1+int(p.DefiniteAdmitted))
	}
	if !p.forged {
		if p.Leak {
			s.sd.Leaks++
		}
		if p.FalseThrottle {
			s.sd.FalseThrottles++
		}
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
	s.fit = newFamilyFit(limits, s.W, s.primary.answered, s.origins.at)
	s.fit.refill(s.family.Refill)
	s.fit.leaks = s.leaks
	if s.primary.refusals > 0 {
		s.fit.decidedWithin, s.fit.heldTogether = s.primary.decidedBy, s.primary.heldTogether
	}
	if g := s.second; g != nil {
		s.secondFit = newFamilyFit(limits, s.W, g.answered, s.secondOrigins.at)
		s.secondFit.refill(s.family.Refill)
		if g.refusals > 0 {
			s.secondFit.decidedWithin, s.secondFit.heldTogether = g.decidedBy, g.heldTogether
		}
	}
	for _, w := range s.fitWatchers {
		w.watchFit(s.fit)
	}
}

// fitRun replays one fit in the third pass: the requests of its group, in
// send order.
type fitRun struct {
	s     *surfaceRun
	group *groupRun
	fit   *familyFit
	index int32
}

// fitRuns are the surface's fits to replay: its limit address's, and its
// second address's when it has one.
func (s *surfaceRun) fitRuns() []*fitRun {
	var runs []*fitRun
	if s.fit != nil {
		runs = append(runs, &fitRun{s: s, group: s.primary, fit: s.fit})
	}
	if s.secondFit != nil {
		runs = append(runs, &fitRun{s: s, group: s.second, fit: s.secondFit})
	}
	return runs
}

// take replays r, a request of the fit's group (see fitOf). Forged-header
// probes are fitted like any other: a limiter keyed on the address counts
// them, and only a header proved trusted (the spoof check's failure) says
// otherwise, which costs a fit no more mismatches than the forged probes
// admitted.
func (f *fitRun) take(r *decode.Record) {
	f.fit.add(r, f.index)
	f.index++
}

// fitOf returns the route of the third pass: which of fits replays a
// record (-1: none), by its group as the second pass looked it up (every
// record of the source), from a table by label index.
func fitOf(fits []*fitRun) func(*decode.Record) int {
	n := 0
	for _, f := range fits {
		n = max(n, len(f.s.byLabel))
	}
	of := make([]int8, n)
	for id := range of {
		of[id] = -1
	}
	for i, f := range fits {
		for id, g := range f.s.byLabel {
			if g == f.group && f.s.seen[id] {
				of[id] = int8(i)
			}
		}
	}
	return func(r *decode.Record) int {
		if id := int(r.LabelID()); id < len(of) {
			return int(of[id])
		}
		return -1
	}
}

// effectiveLimit is the limit the target proved it admits when that is
// above the documented one (replicas each counting alone behind a load
// balancer, say): the most admitted requests surely in the window of one
// of its refusals. An admission above the documented limit then proves
// nothing about a cause, only that the limit is not the documented one.
func (s *surfaceRun) effectiveLimit() int { return max(s.L, s.maxDefAdm) }

// primaryAdmitted is how many of the primary's requests were admitted.
func (s *surfaceRun) primaryAdmitted() int { return s.primary.answered - s.primary.refusals }

// absent says, when the limit probes of the surface found no API there,
// what they got instead (empty when the API answered). When none of them
// was answered (a server too slow for the burst, or a listen backlog too
// short for it: every one timed out), the surface's other probes say it
// instead: their answers too must all be 404, 405, 501 or not JSON.
func (s *surfaceRun) absent(meta *decode.Meta) string {
	k, limits := s.limitAnswers, true
	if k.answered == 0 {
		k, limits = s.otherAnswers, false
	}
	if k.answered == 0 || k.ok > 0 || k.refused > 0 || k.missing+k.nonJSON == 0 {
		return ""
	}
	what := fmt.Sprintf("%d of %d answers were 404, 405, 501 or not JSON", k.missing+k.nonJSON, k.answered)
	if smp := s.sample(meta, func(smp *decode.Sample) bool {
		return (method.JudgedBy(smp.Stream) == "limits") == limits && (smp.Code < 200 || smp.Code > 299) && smp.Code != 429
	}); smp != "" {
		what = smp
	}
	return fmt.Sprintf("the API is not there: %s", what)
}

// sample describes the first sample of this surface that want takes:
// "/mcp answers 501 text/html "<html>…"".
func (s *surfaceRun) sample(meta *decode.Meta, want func(*decode.Sample) bool) string {
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

// refusalCode is the status of the surface's refusals, as a message
// names them: "429", or the contract's limit's.
func (s *surfaceRun) refusalCode() string {
	return strconv.Itoa(int(refusalStatus(s.refusals, s.name)))
}

// refusedOtherwise is, for a surface that refused nothing, what a limit
// probe from its primary got instead when some answer was neither an
// admission nor a refusal (a limit refusing with another status than its
// contract's): "not with 503: /v1/orders answers 429 …" and how to say so
// in a contract; "" when none was.
func (s *surfaceRun) refusedOtherwise(meta *decode.Meta, primary string) string {
	smp := s.sample(meta, func(smp *decode.Sample) bool {
		return smp.Source == primary && method.JudgedBy(smp.Stream) == "limits" && smp.Code != 0 && (smp.Code < 200 || smp.Code > 299)
	})
	if smp == "" {
		return ""
	}
	return fmt.Sprintf("not with %s: %s (if the API refuses so, a contract saying refused: {status: …} verifies it)", s.refusalCode(), smp)
}

// quoteBody quotes the first bytes of a body for a message as a person
// reads them: printable text as is (UTF-8 included), each run of white
// space (a newline, a tab) as one space, and only what cannot be printed
// escaped (\xNN).
func quoteBody(b []byte) string {
	var sb strings.Builder
	sb.WriteByte('"')
	cut, space := len(b) == decode.MaxSample, false
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&sb, "\\x%02x", b[0])
		case unicode.IsSpace(r):
			if !space {
				sb.WriteByte(' ')
			}
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case unicode.IsPrint(r):
			sb.WriteRune(r)
		default:
			for _, c := range b[:n] {
				fmt.Fprintf(&sb, "\\x%02x", c)
			}
		}
		space = unicode.IsSpace(r)
		b = b[n:]
	}
	if cut {
		sb.WriteString("…")
	}
	sb.WriteByte('"')
	return sb.String()
}

// unanswered says, when the target answered none of the surface's
// requests or only with 5xx, why (empty when it answered some otherwise).
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
	if fives > 0 { // a 5xx is an answer, but a failure
		return fmt.Sprintf("none of the %d requests got an answer other than a failure (%s)", sd.Requests, strings.Join(parts, "; "))
	}
	return fmt.Sprintf("the target answered none of the %d requests (%s)", sd.Requests, strings.Join(parts, "; "))
}
