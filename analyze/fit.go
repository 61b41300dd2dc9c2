package analyze

import (
	"fmt"
	"math"
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
// observed outcomes obs.
func fitOn(ts []int64, obs []bool, limit int, w time.Duration) Fit {
	t0 := ts[0]
	bin := max(int64(w)/100, 1)
	nbins := int((ts[len(ts)-1]-t0)/bin) + 1
	obsBins := make([]int, nbins)
	for i, a := range obs {
		if a {
			obsBins[(ts[i]-t0)/bin]++
		}
	}
	cand := make([]int, nbins)
	score := func(adm []bool) int {
		clear(cand)
		for i, a := range adm {
			if a {
				cand[(ts[i]-t0)/bin]++
			}
		}
		m := 0
		for i := range cand {
			m += abs(cand[i] - obsBins[i])
		}
		return m
	}
	// Scans are bounded so that a flood of a million results fits in about
	// the time it takes to decode them.
	phases := 50
	if len(ts) > 20000 {
		phases = 10
	}
	var cands []Candidate
	all := make([]bool, len(ts))
	for i := range all {
		all[i] = true
	}
	cands = append(cands, Candidate{Family: FamilyNone, Window: w, Mismatches: score(all)})
	for _, cr := range []*bool{&yes, &no} {
		cands = append(cands, Candidate{Family: FamilySlidingLog, CountsRefused: cr, Window: w,
			Mismatches: score(slidingLog(ts, limit, int64(w), *cr))})
	}
	cands = append(cands, Candidate{Family: FamilyTokenBucket, CountsRefused: &no, Window: w, Mismatches: score(tokenBucket(ts, limit, int64(w)))})
	bestFixed := Candidate{Family: FamilyFixedWindow, Window: w, Mismatches: math.MaxInt}
	for p := range phases {
		ph := int64(w) * int64(p) / int64(phases)
		if m := score(fixedWindow(ts, limit, int64(w), t0-ph)); m < bestFixed.Mismatches {
			bestFixed.Mismatches, bestFixed.Phase = m, time.Duration(ph)
		}
	}
	cands = append(cands, bestFixed)
	for _, cr := range []*bool{&yes, &no} {
		best := Candidate{Family: FamilySlidingWindow, CountsRefused: cr, Window: w, Mismatches: math.MaxInt}
		for p := range phases {
			ph := int64(w) * int64(p) / int64(phases)
			if m := score(slidingCounter(ts, limit, int64(w), t0-ph, *cr)); m < best.Mismatches {
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
		if m := score(slidingLog(ts, limit, wk, true)); m < fit.effM {
			fit.effM, fit.EffectiveWindow = m, time.Duration(wk)
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
func slidingLog(ts []int64, limit int, W int64, countRefused bool) []bool {
	out := make([]bool, len(ts))
	var ring []int64 // grows up to limit
	head := 0
	for i, t := range ts {
		ok := len(ring) < limit || ring[head] <= t-W
		if ok || countRefused {
			if len(ring) < limit {
				ring = append(ring, t)
			} else {
				ring[head] = t
				head = (head + 1) % limit
			}
		}
		out[i] = ok
	}
	return out
}

// tokenBucket holds L tokens refilled at L per W; refusals cost nothing.
func tokenBucket(ts []int64, limit int, W int64) []bool {
	out := make([]bool, len(ts))
	tokens, last := float64(limit), ts[0]
	for i, t := range ts {
		tokens = math.Min(float64(limit), tokens+float64(t-last)*float64(limit)/float64(W))
		last = t
		if tokens >= 1 {
			tokens--
			out[i] = true
		}
	}
	return out
}

// fixedWindow admits L per window aligned at origin.
func fixedWindow(ts []int64, limit int, W, origin int64) []bool {
	out := make([]bool, len(ts))
	idx, n := int64(math.MinInt64), 0
	for i, t := range ts {
		if k := floorDiv(t-origin, W); k != idx {
			idx, n = k, 0
		}
		if n < limit {
			n++
			out[i] = true
		}
	}
	return out
}

// slidingCounter estimates the rolling count as the previous fixed window's
// count weighted by its overlap plus the current window's count.
func slidingCounter(ts []int64, limit int, W, origin int64, countRefused bool) []bool {
	out := make([]bool, len(ts))
	idx, cur, prev := int64(math.MinInt64), 0, 0
	for i, t := range ts {
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
		out[i] = ok
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
