package analyze

import (
	"container/heap"
	"fmt"
	"math"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// Limiter families the fit can name, simplest first (the tie order).
const (
	FamilyNone          = "none"
	FamilySlidingLog    = "sliding-log"
	FamilyTokenBucket   = "token-bucket"
	FamilyFixedWindow   = "fixed-window"
	FamilySlidingWindow = "sliding-window-counter"
	FamilyUnknown       = "unknown"
)

// Candidate is one limiter replayed over the observed send times.
type Candidate struct {
	Family string
	// CountsRefused says whether refused requests count (nil: not applicable).
	CountsRefused *bool
	// Window is the candidate's window length.
	Window time.Duration
	// Phase is the offset of fixed windows from the first request.
	Phase time.Duration
	// Mismatches is Σ over bins of W/100 of |admitted by the candidate −
	// admitted observed|.
	Mismatches int
}

func (c Candidate) String() string {
	s := c.Family
	if c.CountsRefused != nil {
		if *c.CountsRefused {
			s += " counting refusals"
		} else {
			s += " not counting refusals"
		}
	}
	return fmt.Sprintf("%s (window %v, %d mismatches)", s, c.Window.Round(time.Millisecond), c.Mismatches)
}

// Fit is the result of fitting every family to a group.
type Fit struct {
	Best       Candidate
	Candidates []Candidate // the best of each family and variant
	// EffectiveWindow is the sliding-log window length that fits best.
	EffectiveWindow time.Duration
	effM            int
}

// boolPtr returns a new *bool: every candidate gets its own, so that no
// caller can change another's by writing through it.
func boolPtr(b bool) *bool { return &b }

// FitFamily replays each candidate limiter (limit L, window w) over the send
// times of g's answered requests and counts mismatches per time bin of w/100,
// which does not care in what order concurrent requests reached the server.
// The fewest mismatches win; ties go to the simplest family.
func FitFamily(g Group, limit int, w time.Duration) Fit {
	n := 0
	for _, r := range g.Records {
		if admitted(r) || refused(r) {
			n++
		}
	}
	f := newFamilyFit(limit, w, n)
	for i, r := range g.Records {
		f.add(r, int32(i))
	}
	return f.result()
}

// familyFit fits the candidates to a group's answered requests as they
// stream past in send order. The server counted each request somewhere
// between its send and its response: the candidates are replayed on both
// ends, and each keeps the better. Send times fit when the delay is on the
// way in, response times when requests queued at the server.
type familyFit struct {
	starts, ends *replay
	byEnd        endHeap // answered requests not yet replayed on their responses
}

// newFamilyFit fits n answered requests (the count sets how finely phases
// and windows are scanned).
func newFamilyFit(limit int, w time.Duration, n int) *familyFit {
	return &familyFit{starts: newReplay(limit, w, n), ends: newReplay(limit, w, n)}
}

// add takes a group's next request in send order; index is its place.
func (f *familyFit) add(r *archive.Record, index int32) {
	// A response at or before this send can go: every later request is
	// sent, so answered, no earlier; ties go in send order.
	for len(f.byEnd) > 0 && f.byEnd[0].end <= r.Start {
		e := heap.Pop(&f.byEnd).(endItem)
		f.ends.add(e.end, e.ok)
	}
	if !admitted(r) && !refused(r) {
		return
	}
	f.starts.add(r.Start, admitted(r))
	heap.Push(&f.byEnd, endItem{end: r.End, index: index, ok: admitted(r)})
}

// result replays what is left and returns the fit.
func (f *familyFit) result() Fit {
	for len(f.byEnd) > 0 {
		e := heap.Pop(&f.byEnd).(endItem)
		f.ends.add(e.end, e.ok)
	}
	if !f.starts.started {
		return Fit{Best: Candidate{Family: FamilyUnknown, Window: time.Duration(f.starts.w)}}
	}
	fs, fe := f.starts.fit(), f.ends.fit()
	fit := Fit{Candidates: make([]Candidate, len(fs.Candidates))}
	for i := range fs.Candidates {
		fit.Candidates[i] = fs.Candidates[i]
		if fe.Candidates[i].Mismatches < fs.Candidates[i].Mismatches {
			fit.Candidates[i] = fe.Candidates[i]
		}
	}
	fit.Best = fit.Candidates[0]
	for _, c := range fit.Candidates[1:] {
		if c.Mismatches < fit.Best.Mismatches {
			fit.Best = c
		}
	}
	fit.EffectiveWindow, fit.effM = fs.EffectiveWindow, fs.effM
	if fe.effM < fs.effM {
		fit.EffectiveWindow, fit.effM = fe.EffectiveWindow, fe.effM
	}
	return fit
}

// endItem is an answered request waiting to be replayed on its response.
type endItem struct {
	end   int64
	index int32
	ok    bool
}

// endHeap orders answered requests by response, then send order.
type endHeap []endItem

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	return h[i].end < h[j].end || h[i].end == h[j].end && h[i].index < h[j].index
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(endItem)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// replay runs every candidate limiter over requests in time order at
// once, each scoring Σ over time bins of w/100 of |admitted by it −
// admitted observed|; bins start at the first request.
type replay struct {
	limit        int
	w            int64
	phases       int
	scan         []int // effective-window lengths, percent of w, nearest first
	started      bool
	t0, bin, cur int64
	obs          int // observed admissions in the current bin
	none         score
	logs         []slidingLog // counting refusals, not; then the window scan
	bucket       tokenBucket
	fixed        []fixedWindow
	counters     []slidingCounter // counting refusals (phases), then not
}

// score is a candidate's admissions in the current bin and its mismatches
// over the bins closed.
type score struct{ adm, mis int }

func (s *score) close(obs int) {
	s.mis += abs(s.adm - obs)
	s.adm = 0
}

func newReplay(limit int, w time.Duration, n int) *replay {
	// Scans are bounded so that a flood of a million results fits in about
	// the time it takes to decode them.
	phases := 50
	if n > 20000 {
		phases = 10
	}
	return &replay{limit: limit, w: int64(w), phases: phases, scan: windowScan(n)}
}

// start sets the candidates up at the first request's time t.
func (r *replay) start(t int64) {
	r.started, r.t0, r.bin = true, t, max(r.w/100, 1)
	W := r.w
	r.logs = append(r.logs, newSlidingLog(r.limit, W, true), newSlidingLog(r.limit, W, false))
	for _, k := range r.scan {
		r.logs = append(r.logs, newSlidingLog(r.limit, W*int64(k)/100, true))
	}
	r.bucket = tokenBucket{limit: r.limit, W: W, tokens: float64(r.limit), last: t}
	for p := range r.phases {
		r.fixed = append(r.fixed, fixedWindow{limit: r.limit, W: W, origin: t - W*int64(p)/int64(r.phases), idx: math.MinInt64})
	}
	for _, cr := range []bool{true, false} {
		for p := range r.phases {
			r.counters = append(r.counters, slidingCounter{limit: r.limit, W: W, origin: t - W*int64(p)/int64(r.phases), countRefused: cr, idx: math.MinInt64})
		}
	}
}

// add replays one request at time t, admitted or not by the server.
func (r *replay) add(t int64, ok bool) {
	if !r.started {
		r.start(t)
	}
	if b := (t - r.t0) / r.bin; b != r.cur {
		r.closeBin()
		r.cur = b
	}
	if ok {
		r.obs++
	}
	r.none.adm++
	for i := range r.logs {
		r.logs[i].add(t)
	}
	r.bucket.add(t)
	for i := range r.fixed {
		r.fixed[i].add(t)
	}
	for i := range r.counters {
		r.counters[i].add(t)
	}
}

func (r *replay) closeBin() {
	r.none.close(r.obs)
	for i := range r.logs {
		r.logs[i].close(r.obs)
	}
	r.bucket.close(r.obs)
	for i := range r.fixed {
		r.fixed[i].close(r.obs)
	}
	for i := range r.counters {
		r.counters[i].close(r.obs)
	}
	r.obs = 0
}

// fit closes the last bin and names each family's best candidate.
func (r *replay) fit() Fit {
	r.closeBin()
	w := time.Duration(r.w)
	cands := []Candidate{{Family: FamilyNone, Window: w, Mismatches: r.none.mis}}
	for i, cr := range []bool{true, false} {
		cands = append(cands, Candidate{Family: FamilySlidingLog, CountsRefused: boolPtr(cr), Window: w, Mismatches: r.logs[i].mis})
	}
	cands = append(cands, Candidate{Family: FamilyTokenBucket, CountsRefused: boolPtr(false), Window: w, Mismatches: r.bucket.mis})
	bestPhase := func(family string, cr *bool, mis func(p int) int) Candidate {
		best := Candidate{Family: family, CountsRefused: cr, Window: w, Mismatches: math.MaxInt}
		for p := range r.phases {
			if m := mis(p); m < best.Mismatches {
				best.Mismatches, best.Phase = m, time.Duration(r.w*int64(p)/int64(r.phases))
			}
		}
		return best
	}
	cands = append(cands, bestPhase(FamilyFixedWindow, nil, func(p int) int { return r.fixed[p].mis }))
	for i, cr := range []bool{true, false} {
		cands = append(cands, bestPhase(FamilySlidingWindow, boolPtr(cr), func(p int) int { return r.counters[i*r.phases+p].mis }))
	}
	fit := Fit{Candidates: cands}
	// The effective window: the sliding-log window length (counting
	// refusals, as documented) that fits best, scanned from half to twice
	// the documented one; on a tie the one nearest the documented.
	fit.effM = math.MaxInt
	for i, l := range r.logs[2:] {
		if l.mis < fit.effM {
			fit.effM, fit.EffectiveWindow = l.mis, time.Duration(r.w*int64(r.scan[i])/100)
		}
	}
	return fit
}

// windowScan lists window lengths in percent of the documented one, nearest
// first, so that the first best is the nearest.
func windowScan(n int) []int {
	step := 1
	if n > 20000 {
		step = 5
	}
	ks := []int{100}
	for d := step; d <= 100; d += step {
		if 100-d >= 50 {
			ks = append(ks, 100-d)
		}
		ks = append(ks, 100+d)
	}
	return ks
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// slidingLog admits a request when fewer than L counted requests arrived in
// (t − W, t): the L-th newest counted arrival decides.
type slidingLog struct {
	score
	W            int64
	countRefused bool
	ring         []int64 // grows up to limit
	head         int
}

func newSlidingLog(limit int, W int64, countRefused bool) slidingLog {
	return slidingLog{W: W, countRefused: countRefused, ring: make([]int64, 0, limit)}
}

func (l *slidingLog) add(t int64) {
	limit := cap(l.ring)
	ok := len(l.ring) < limit || l.ring[l.head] <= t-l.W
	if ok || l.countRefused {
		if len(l.ring) < limit {
			l.ring = append(l.ring, t)
		} else {
			l.ring[l.head] = t
			l.head = (l.head + 1) % limit
		}
	}
	if ok {
		l.adm++
	}
}

// tokenBucket holds L tokens refilled at L per W; refusals cost nothing.
type tokenBucket struct {
	score
	limit  int
	W      int64
	tokens float64
	last   int64
}

func (b *tokenBucket) add(t int64) {
	b.tokens = math.Min(float64(b.limit), b.tokens+float64(t-b.last)*float64(b.limit)/float64(b.W))
	b.last = t
	if b.tokens >= 1 {
		b.tokens--
		b.adm++
	}
}

// fixedWindow admits L per window aligned at origin.
type fixedWindow struct {
	score
	limit          int
	W, origin, idx int64
	n              int
}

func (f *fixedWindow) add(t int64) {
	if k := floorDiv(t-f.origin, f.W); k != f.idx {
		f.idx, f.n = k, 0
	}
	if f.n < f.limit {
		f.n++
		f.adm++
	}
}

// slidingCounter estimates the rolling count as the previous fixed window's
// count weighted by its overlap plus the current window's count.
type slidingCounter struct {
	score
	limit          int
	W, origin, idx int64
	countRefused   bool
	cur, prev      int
}

func (c *slidingCounter) add(t int64) {
	if k := floorDiv(t-c.origin, c.W); k != c.idx {
		if k == c.idx+1 {
			c.prev = c.cur
		} else {
			c.prev = 0
		}
		c.idx, c.cur = k, 0
	}
	frac := float64(t-c.origin-c.idx*c.W) / float64(c.W)
	est := float64(c.prev)*(1-frac) + float64(c.cur)
	ok := est+1 <= float64(c.limit)
	if ok || c.countRefused {
		c.cur++
	}
	if ok {
		c.adm++
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
