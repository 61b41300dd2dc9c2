package analyze

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
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

var (
	yes = true
	no  = false
)

// FitFamily replays each candidate limiter (limit L, window w) over the send
// times of g's answered requests and counts mismatches per time bin of w/100,
// which does not care in what order concurrent requests reached the server.
// The fewest mismatches win; ties go to the simplest family.
func FitFamily(g Group, limit int, w time.Duration) Fit {
	// The server counted each request somewhere between its send and its
	// response: replay on both ends and keep, per candidate, the better.
	// Send times fit when the delay is on the way in, response times when
	// requests queued at the server.
	var starts, ends []int64
	var obs []bool
	for _, r := range g.Records {
		if admitted(r) || refused(r) {
			starts, ends, obs = append(starts, r.Start), append(ends, r.End), append(obs, admitted(r))
		}
	}
	if len(starts) == 0 {
		return Fit{Best: Candidate{Family: FamilyUnknown, Window: w}}
	}
	endTs, endObs := sortedBy(ends, obs)
	fs, fe := fitOn(starts, obs, limit, w), fitOn(endTs, endObs, limit, w)
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

// sortedBy returns ts sorted, reordering obs alongside (a copy).
func sortedBy(ts []int64, obs []bool) ([]int64, []bool) {
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
func fitOn(ts []int64, obs []bool, limit int, w time.Duration) Fit {
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
	r := &replay{ts: ts, bins: bins, adm: make([]int, nbins), ring: make([]int64, 0, limit)}
	score := func() int {
		m := 0
		for i := range r.adm {
			m += abs(r.adm[i] - obsBins[i])
		}
		clear(r.adm)
		return m
	}
	// Scans are bounded so that a flood of a million results fits in about
	// the time it takes to decode them.
	phases := 50
	if len(ts) > 20000 {
		phases = 10
	}
	var cands []Candidate
	for i := range ts {
		r.admit(i)
	}
	cands = append(cands, Candidate{Family: FamilyNone, Window: w, Mismatches: score()})
	for _, cr := range []*bool{&yes, &no} {
		r.slidingLog(limit, int64(w), *cr)
		cands = append(cands, Candidate{Family: FamilySlidingLog, CountsRefused: cr, Window: w, Mismatches: score()})
	}
	r.tokenBucket(limit, int64(w))
	cands = append(cands, Candidate{Family: FamilyTokenBucket, CountsRefused: &no, Window: w, Mismatches: score()})
	bestFixed := Candidate{Family: FamilyFixedWindow, Window: w, Mismatches: math.MaxInt}
	for p := range phases {
		ph := int64(w) * int64(p) / int64(phases)
		r.fixedWindow(limit, int64(w), t0-ph)
		if m := score(); m < bestFixed.Mismatches {
			bestFixed.Mismatches, bestFixed.Phase = m, time.Duration(ph)
		}
	}
	cands = append(cands, bestFixed)
	for _, cr := range []*bool{&yes, &no} {
		best := Candidate{Family: FamilySlidingWindow, CountsRefused: cr, Window: w, Mismatches: math.MaxInt}
		for p := range phases {
			ph := int64(w) * int64(p) / int64(phases)
			r.slidingCounter(limit, int64(w), t0-ph, *cr)
			if m := score(); m < best.Mismatches {
				best.Mismatches, best.Phase = m, time.Duration(ph)
			}
		}
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

// replay replays candidate limiters over requests at times ts (sorted),
// counting each one's admissions per time bin in adm.
type replay struct {
	ts   []int64
	bins []int32 // the time bin of each request
	adm  []int
	ring []int64
}

func (r *replay) admit(i int) { r.adm[r.bins[i]]++ }

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
func (r *replay) slidingLog(limit int, W int64, countRefused bool) {
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
func (r *replay) tokenBucket(limit int, W int64) {
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
func (r *replay) fixedWindow(limit int, W, origin int64) {
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
func (r *replay) slidingCounter(limit int, W, origin int64, countRefused bool) {
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

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
