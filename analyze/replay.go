package analyze

import (
	"math"
	"slices"
	"time"
)

// This file holds the replay: every candidate limiter run at once over a
// group's requests in time order, scored per time bin, with the window and
// phase scans.

type replay struct {
	limit        int
	w            int64
	phases       int
	origins      []int64 // fixed-window starts taken from the data
	scan         []int   // effective-window lengths, percent of w, nearest first
	forgetScan   []int   // the same, coarser, for logs forgetting refusals
	started      bool
	t0, bin, cur int64
	obs          int // observed admissions in the current bin
	none         score
	counting     countingLogs   // at each window of scan (the documented first)
	forgetting   []slidingLog   // at the documented window, then at each of forgetScan
	buckets      []tokenBucket  // refilled L per W, then more slowly (see refillScan), then in docRefill
	docRefill    int64          // a documented token bucket's refill, replayed besides the scan's (0: none)
	windows      []phaseWindows // a fixed window and two counters at each phase
	recent       window         // the requests of the last w, for the replicas (at most recentCap)
	recentCap    int
	reps         []replicas // k = 2, 3, 4
	// kept holds every request replayed, for refine: set for a run short
	// enough to keep (the finest phase grid), nil otherwise.
	kept []replayed
}

// replayed is a request replayed: its time, and whether the server admitted it.
type replayed struct {
	t  int64
	ok bool
}

// score is a candidate's admissions in the current bin, its mismatches
// over the bins closed, and whether it admitted the last request.
type score struct {
	mis  int
	adm  int32 // a bin's, far below 2³¹
	last bool
}

func (s *score) close(obs int) {
	s.mis += abs(int(s.adm) - obs)
	s.adm = 0
}

func (s *score) admit(ok bool) {
	s.last = ok
	if ok {
		s.adm++
	}
}

func newReplay(limit int, w time.Duration, n int, origins []int64) *replay {
	// Scans are bounded so that a flood of a million results fits in about
	// the time it takes to decode them. A run of verify's plan (about a
	// thousand answered requests a surface) gets a phase every W/200: a
	// counter's boundary inside the onset burst (0.03 W) is then placed
	// within a sixth of the burst, where W/50 missed it by enough for a
	// token bucket to fit better. Within a sixth of the burst is still
	// some forty requests, enough for a token bucket of a scanned refill to
	// beat the counter that produced the run: such a run's requests are
	// kept, and refine replays fixed windows and counters at ten phases a
	// grid step around the best grid phase.
	phases := 50
	switch {
	case n <= 5000:
		phases = finestPhases
	case n > 20000:
		phases = 10
	}
	r := &replay{limit: limit, w: int64(w), phases: phases, origins: origins, scan: windowScan(n), forgetScan: forgetScan(n)}
	if phases == finestPhases {
		r.kept = make([]replayed, 0, n)
	}
	return r
}

// finestPhases is the phase grid of a short run, the one refine refines.
const finestPhases = 200

// refineSteps is how many phases refine replays in each grid step either
// side of the best grid phase: a boundary every W/2000 (3 ms of verify's
// 6 s window), a few requests of the onset burst (240 in 0.03 W, one every
// 0.75 ms) where the grid's W/200 is some forty.
const refineSteps = 10

// start sets the candidates up at the first request's time t.
func (r *replay) start(t int64) {
	r.started, r.t0, r.bin = true, t, max(r.w/100, 1)
	W := r.w
	r.counting.ring = newLogRing(r.limit)
	for _, k := range r.scan {
		r.counting.logs = append(r.counting.logs, windowScore{W: W * int64(k) / 100})
	}
	r.forgetting = append(r.forgetting, newSlidingLog(r.limit, W))
	for _, k := range r.forgetScan {
		r.forgetting = append(r.forgetting, newSlidingLog(r.limit, W*int64(k)/100))
	}
	for k := 2; k <= maxReplicas; k++ {
		r.reps = append(r.reps, newReplicas(k, r.limit))
		r.recentCap = max(r.recentCap, r.reps[len(r.reps)-1].certain())
	}
	for _, k := range refillScan(r.limit) {
		r.buckets = append(r.buckets, tokenBucket{limit: r.limit, W: W * k, tokens: float64(r.limit), at: t})
	}
	if d := r.docRefill; d > 0 && !slices.ContainsFunc(r.buckets, func(b tokenBucket) bool { return b.W == d }) {
		r.buckets = append(r.buckets, tokenBucket{limit: r.limit, W: d, tokens: float64(r.limit), at: t})
	}
	origins := make([]int64, 0, r.phases+len(r.origins))
	for p := range r.phases {
		origins = append(origins, t-W*int64(p)/int64(r.phases))
	}
	origins = append(origins, r.origins...)
	for _, o := range origins {
		r.windows = append(r.windows, phaseWindows{at: newWindowAt(o)})
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
	if r.kept != nil {
		r.kept = append(r.kept, replayed{t, ok})
	}
	r.none.admit(true)
	r.counting.add(t)
	for i := range r.forgetting {
		r.forgetting[i].add(t)
	}
	for i := range r.buckets {
		r.buckets[i].add(t)
	}
	for i := range r.windows {
		r.windows[i].add(t, r.w, r.limit)
	}
	n := r.recent.add(t, r.w, r.recentCap)
	for i := range r.reps {
		r.reps[i].add(n)
	}
}

// slots is how many decisions decisions appends: one per candidate that
// can be named (the window scan is not).
func (r *replay) slots() int {
	return 3 + len(r.buckets) + 3*len(r.windows) + len(r.reps)
}

// decisions appends whether each candidate admitted the last request, in
// the order fit lists them (see Candidate.slot).
func (r *replay) decisions(d []bool) []bool {
	d = append(d, r.none.last, r.counting.logs[0].last, r.forgetting[0].last)
	for i := range r.buckets {
		d = append(d, r.buckets[i].last)
	}
	for i := range r.windows {
		d = append(d, r.windows[i].fixed.last)
	}
	for i := range r.windows {
		d = append(d, r.windows[i].counting.last)
	}
	for i := range r.windows {
		d = append(d, r.windows[i].forgetting.last)
	}
	for i := range r.reps {
		d = append(d, r.reps[i].last >= 0.5)
	}
	return d
}

func (r *replay) closeBin() {
	r.none.close(r.obs)
	for i := range r.counting.logs {
		r.counting.logs[i].close(r.obs)
	}
	for i := range r.forgetting {
		r.forgetting[i].close(r.obs)
	}
	for i := range r.buckets {
		r.buckets[i].close(r.obs)
	}
	for i := range r.windows {
		r.windows[i].close(r.obs)
	}
	for i := range r.reps {
		r.reps[i].close(r.obs)
	}
	r.obs = 0
}

// fit closes the last bin and names each family's best candidate.
func (r *replay) fit() Fit {
	r.closeBin()
	w := time.Duration(r.w)
	cand := func(family string, cr *bool, mis, slot int) Candidate {
		return Candidate{Family: family, CountsRefused: cr, Limit: r.limit, Window: w, Mismatches: mis, slot: slot}
	}
	cands := []Candidate{cand(familyNone, nil, r.none.mis, 0)}
	cands = append(cands, cand(familySlidingLog, boolPtr(true), r.counting.logs[0].mis, 1),
		cand(familySlidingLog, boolPtr(false), r.forgetting[0].mis, 2))
	nb := len(r.buckets)
	bucket := cand(familyTokenBucket, boolPtr(false), math.MaxInt, 0)
	bucket.phases = [2]int{3, 3 + nb}
	for i, b := range r.buckets {
		// the documented refill wins a tie: nothing tells it from the other
		if b.mis < bucket.Mismatches || b.mis == bucket.Mismatches && b.W == r.docRefill {
			bucket.Mismatches, bucket.Refill, bucket.slot = b.mis, time.Duration(b.W), 3+i
		}
	}
	cands = append(cands, bucket)
	phase := func(origin int64) time.Duration { // how long before the first request a window starts
		return time.Duration(((r.t0-origin)%r.w + r.w) % r.w)
	}
	// The windows' three kinds, each its best phase: a fixed window, then
	// counters counting refusals and not (slots in that order, a phase
	// each).
	n := len(r.windows)
	first := 3 + nb // the first fixed window's slot
	kinds := [3]Candidate{cand(familyFixedWindow, nil, math.MaxInt, 0),
		cand(familySlidingWindow, boolPtr(true), math.MaxInt, 0), cand(familySlidingWindow, boolPtr(false), math.MaxInt, 0)}
	var grids [3]int64 // each kind's best phase of the grid (the origins from the data aside)
	for k := range kinds {
		best := &kinds[k]
		best.phases = [2]int{first + k*n, first + (k+1)*n}
		g := 0
		for p := range r.windows {
			w := &r.windows[p]
			if w.kind(k).mis < best.Mismatches {
				best.Mismatches, best.Phase, best.slot = w.kind(k).mis, phase(w.at.origin), first+k*n+p
			}
			if p < r.phases && w.kind(k).mis < r.windows[g].kind(k).mis {
				g = p
			}
		}
		grids[k] = r.windows[g].at.origin
	}
	// A phase refine found between the best grid phase's neighbours that
	// fits better: no decisions are kept for it (slot −1); the grid's
	// phases around it stand for it (see phases).
	if origins, mis, ok := r.refine(grids); ok {
		for k := range kinds {
			if mis[k] < kinds[k].Mismatches {
				kinds[k].Mismatches, kinds[k].Phase, kinds[k].slot = mis[k], phase(origins[k]), -1
			}
		}
	}
	cands = append(cands, kinds[:]...)
	slot := first + 3*n
	for i, rp := range r.reps {
		c := cand(familySlidingLog, boolPtr(true), int(math.Round(rp.mis)), slot+i)
		c.Replicas, c.chance = rp.k, rp.chance()
		cands = append(cands, c)
	}
	fit := Fit{Candidates: cands}
	// The effective window: the sliding-log window length (counting
	// refusals, as documented) that fits best, scanned from half to twice
	// the documented one; on a tie the one nearest the documented.
	fit.effM = math.MaxInt
	for i, l := range r.counting.logs {
		if l.mis < fit.effM {
			fit.effM, fit.EffectiveWindow = l.mis, time.Duration(r.w*int64(r.scan[i])/100)
		}
	}
	fit.Scan = []Candidate{
		r.scanBest(func(i int) int { return r.counting.logs[i].mis }, r.scan, true),
		r.scanBest(func(i int) int { return r.forgetting[1+i].mis }, r.forgetScan, false),
	}
	return fit
}

// refine replays windows at phases between the grid phases either side
// of each kind's best grid phase (grids: their origins; the kinds of
// phaseWindows.kind), refineSteps a grid step, in one pass over the
// requests kept, and returns each kind's best origin and its mismatches;
// false when none was replayed. The grid places a window's boundary
// within W/200 of any time, but in a burst that is dozens of requests: a
// sliding-window counter whose boundary cuts the onset burst a few dozen
// requests from where the target's did gives capacity back at another
// pace, and a token bucket of some refill scanned beside it could fit the
// run better than the truth's own family.
func (r *replay) refine(grids [3]int64) (origins [3]int64, mis [3]int, ok bool) {
	if len(r.kept) == 0 {
		return origins, mis, false
	}
	var ws []phaseWindows
	at := map[int64]int{} // ws's index of an origin: kinds whose grids meet share it
	var of [3][]int       // each kind's origins, as indexes in ws
	for k, grid := range grids {
		for j := -refineSteps + 1; j < refineSteps; j++ {
			if j == 0 {
				continue // the grid phase itself, replayed already
			}
			o := grid + r.w*int64(j)/int64(r.phases*refineSteps)
			i, seen := at[o]
			if !seen {
				i, at[o] = len(ws), len(ws)
				ws = append(ws, phaseWindows{at: newWindowAt(o)})
			}
			of[k] = append(of[k], i)
		}
	}
	cur, obs := int64(0), 0
	closeAll := func() {
		for i := range ws {
			ws[i].close(obs)
		}
	}
	for _, q := range r.kept {
		if b := (q.t - r.t0) / r.bin; b != cur {
			closeAll()
			cur, obs = b, 0
		}
		if q.ok {
			obs++
		}
		for i := range ws {
			ws[i].add(q.t, r.w, r.limit)
		}
	}
	closeAll()
	for k := range grids {
		mis[k] = math.MaxInt
		for _, i := range of[k] {
			if m := ws[i].kind(k).mis; m < mis[k] {
				origins[k], mis[k] = ws[i].at.origin, m
			}
		}
	}
	return origins, mis, true
}

// scanBest is the best of the sliding logs of a window scan (lengths in
// percent of w, nearest first; mis(i) is the mismatches of the log at
// pct[i]), as a candidate of its window length.
func (r *replay) scanBest(mis func(i int) int, pct []int, countRefused bool) Candidate {
	c := Candidate{Family: familySlidingLog, CountsRefused: boolPtr(countRefused), Limit: r.limit, Window: time.Duration(r.w), Mismatches: math.MaxInt, slot: -1}
	for i := range pct {
		if m := mis(i); m < c.Mismatches {
			c.Mismatches, c.Window = m, time.Duration(r.w*int64(pct[i])/100)
		}
	}
	return c
}

// windowScan lists window lengths in percent of the documented one, nearest
// first, so that the first best is the nearest: the documented one (100)
// first, whose log is also the candidate counting refusals.
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

// forgetScan lists the window lengths, in percent of the documented one,
// at which a sliding log forgetting refusals is replayed: the documented
// one aside (a candidate of its own), from half to twice it, coarser than
// the effective-window scan (a rival of a cause needs no finer).
func forgetScan(n int) []int {
	step := 5
	if n > 20000 {
		step = 25
	}
	var ks []int
	for k := 50; k <= 200; k += step {
		if k != 100 {
			ks = append(ks, k)
		}
	}
	return ks
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
