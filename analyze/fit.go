package analyze

import (
	"fmt"
	"math"
	"time"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/human"
)

// Limiter families the fit can name, simplest first (the tie order).
const (
	familyNone          = "none"
	familySlidingLog    = "sliding-log"
	familyTokenBucket   = "token-bucket"
	familyFixedWindow   = "fixed-window"
	familySlidingWindow = "sliding-window-counter"
	familyUnknown       = "unknown"
)

// Candidate is one limiter replayed over the observed send times.
type Candidate struct {
	Family string
	// CountsRefused says whether refused requests count (nil: not applicable).
	CountsRefused *bool
	// Limit is the candidate's limit: the documented one or the observed.
	Limit int
	// Window is the candidate's window length.
	Window time.Duration
	// Phase is how long before the first request a fixed window starts
	// (modulo the window).
	Phase time.Duration
	// Refill, for a token bucket, is how long it takes to refill Limit
	// tokens: Window as documented, longer for a bucket that refills more
	// slowly (nginx's rate=1r/m burst=239 refills 240 in 240 minutes).
	Refill time.Duration
	// Replicas, when 2 or more, is how many limiters of Limit (each a
	// sliding log counting refusals) stand behind an assignment the client
	// cannot predict (a balancer interleaving every client's requests); 0
	// for one limiter.
	Replicas int
	// Mismatches is Σ over bins of W/100 of |admitted by the candidate −
	// admitted observed|, replayed at whichever end of the requests'
	// intervals fits it better; TimingSpread is how many more it has
	// replayed at the other end: how much of its score the run's timing
	// alone can move.
	Mismatches, TimingSpread int

	// chance, for replicas, is how much of its score the assignment's
	// chance alone is expected to reach (see replicas.close): a score
	// that low is what replicas predict, not a misfit.
	chance int
	slot   int    // its place among a replay's decisions (see replay.decided)
	phases [2]int // the slots of every variant replayed, for a family scanned over phases or refills
	ruled  bool   // ruled out by the leaks the model proved (see LeakProof)
}

// worst is the candidate's mismatches at the end of the requests'
// intervals that fits it worse.
func (c Candidate) worst() int { return c.Mismatches + c.TimingSpread }

// fewest is the fewest mismatches the run's timing could have given the
// candidate: its score less half its timing spread. The order the target
// saw lies within the requests' intervals, not at either end, so a
// candidate's score there may be below its best at the ends; on a starved
// host (latencies of a third of the window) a sliding log's score moved
// by dozens between its ends while a fixed window's, its phase fitted at
// each, hardly moved, and the log that made the run lost to it by a few
// mismatches at every end. Half the spread kept every such run undecided
// in simulation; the whole spread did too, but left a fixed window or a
// token bucket undecided in half the runs of a loaded host.
func (c Candidate) fewest() int { return c.Mismatches - c.TimingSpread/2 }

// key tells the candidates of one family and replica count apart from
// the others (what the alternatives are named by).
func (c Candidate) key() string { return fmt.Sprintf("%s×%d", c.Family, max(c.Replicas, 1)) }

// counts says whether the candidate counts refused requests: a fixed
// window never sees them, a token bucket spends nothing on them.
func (c Candidate) counts() bool { return c.CountsRefused != nil && *c.CountsRefused }

func (c Candidate) String() string {
	s := c.Family
	if c.Replicas > 1 {
		s = fmt.Sprintf("%d replicas of %s", c.Replicas, s)
	}
	if c.Family == familyTokenBucket && c.Refill > c.Window {
		s += fmt.Sprintf(" refilled one per %v", (c.Refill / time.Duration(max(c.Limit, 1))).Round(time.Millisecond))
	}
	if c.CountsRefused != nil {
		if *c.CountsRefused {
			s += " counting refusals"
		} else {
			s += " not counting refusals"
		}
	}
	return fmt.Sprintf("%s (%d per %v, %s)", s, c.Limit, c.Window.Round(time.Millisecond), human.Count(c.Mismatches, "mismatch", "mismatches"))
}

// Fit is the result of fitting every family to a group.
type Fit struct {
	Best Candidate
	// Alternatives are the best candidates of the other families (and
	// replica counts) that the run's timing could have made fit as well
	// as Best: their fewest mismatches (see Candidate.fewest) are at most
	// Best's at the end of the intervals that fits it worse. The run
	// cannot tell them apart.
	Alternatives []Candidate
	// Decided says Best won by a margin the run's timing cannot produce:
	// no alternative.
	Decided bool
	// Candidates are the best of each family, variant and limit.
	Candidates []Candidate
	// Scan holds the sliding logs at other window lengths (half to twice
	// the documented, the best of each variant and limit): not families
	// to name, but rivals of a cause (a longer window explains refusals
	// as well as counting them).
	Scan []Candidate
	// EffectiveWindow is the sliding-log window length that fits best.
	EffectiveWindow time.Duration
	effM            int
	// own holds Best and the Alternatives of the limit address's fit
	// alone when a second address's narrowed them (see narrow): what a
	// follow-up still asks the limit address to tell apart.
	own []Candidate
}

// open returns the candidates the limit address alone could not tell
// apart: Best and the Alternatives, or those narrowing left out too.
func (fit Fit) open() []Candidate {
	if len(fit.own) > 0 {
		return fit.own
	}
	return append([]Candidate{fit.Best}, fit.Alternatives...)
}

// boolPtr returns a new *bool: every candidate gets its own, so that no
// caller can change another's by writing through it.
func boolPtr(b bool) *bool { return &b }

// fitFamily replays each candidate limiter (limit L, window w) over the send
// times of g's answered requests and counts mismatches per time bin of w/100,
// which does not care in what order concurrent requests reached the server.
// The fewest mismatches win; ties go to the simplest family.
func fitFamily(g Group, limit int, w time.Duration) Fit {
	n := 0
	for _, r := range g.Records {
		if admitted(r) || refused(r) {
			n++
		}
	}
	f := newFamilyFit([]int{limit}, w, n, nil)
	for i, r := range g.Records {
		f.add(r, int32(i))
	}
	return f.result()
}

// familyFit fits the candidates to a group's answered requests as they
// stream past in send order. The server counted each request somewhere
// between its send and its response: the candidates are replayed on both
// ends, and each keeps the better. Send times fit when the delay is on the
// way in, response times when requests queued at the server. Candidates
// are replayed at every limit given (the documented one, and the one the
// target showed), with fixed windows starting on a grid of phases and at
// every origin given (boundaries taken from the data).
type familyFit struct {
	starts, ends []*replay // one per limit
	// mixes replay admissions on send times and refusals on response
	// times (one per limit): the order a limiter saw when the host held
	// refusals before it and not the admissions sent behind them (see
	// better).
	mixes []*replay
	byEnd endHeap // answered requests not yet replayed on their responses
	// watch holds the requests whose candidates' decisions are kept (by
	// index), and decided those decisions: per watched request, one per
	// decision slot of every replay on send times.
	watch   map[int32]bool
	decided map[int32][]bool
	// leaks is what the model proved of the admissions (see LeakProof).
	leaks leakProof
	// decidedWithin, when set, is the longest any refusal took to come
	// back. The replay on responses stands for requests that queued before
	// the limiter counted them; such a queue holds refusals as long. Where
	// refusals come back at once and admissions late, the limiter decided
	// on arrival and the admissions were held after it (nginx's delay, the
	// service behind it): a request is then replayed no later than
	// decidedWithin after its send, not at its response, which would let
	// a family fit a stream the limiter itself smoothed.
	decidedWithin int64
	// heldTogether, when set, reports whether a response at the given
	// time came back with a stall's: such a request is replayed at its
	// response, as decided when the stall let it go (the limiter decides
	// nothing while the host is stalled), whatever decidedWithin says.
	heldTogether func(end int64) bool
}

// leakProof is what the uncertainty-interval model proved of a group's
// admissions at the documented window: the most requests surely in the
// window of one admission, itself included, counting refused requests
// (All) and counting only admitted ones (Admitted). A sliding log of L
// counting refusals cannot admit with All > L, nor one forgetting them
// with Admitted > L: such a log is ruled out, whatever its score.
type leakProof struct{ All, Admitted int }

// newFamilyFit fits n answered requests (the count sets how finely phases
// and windows are scanned) at each limit, with fixed windows also starting
// at each of origins (absolute times).
func newFamilyFit(limits []int, w time.Duration, n int, origins []int64) *familyFit {
	f := &familyFit{}
	for _, l := range limits {
		f.starts = append(f.starts, newReplay(l, w, n, origins))
		f.ends = append(f.ends, newReplay(l, w, n, origins))
		f.mixes = append(f.mixes, newReplay(l, w, n, origins))
	}
	return f
}

// watchFor keeps the candidates' decisions on the requests of indexes,
// besides those asked for before.
func (f *familyFit) watchFor(indexes []int32) {
	if len(indexes) == 0 {
		return
	}
	if f.watch == nil {
		f.watch, f.decided = map[int32]bool{}, map[int32][]bool{}
	}
	for _, i := range indexes {
		f.watch[i] = true
	}
}

// add takes a group's next request in send order; index is its place.
func (f *familyFit) add(r *decode.Record, index int32) {
	// A response at or before this send can go: every later request is
	// sent, so answered, no earlier; ties go in send order.
	for len(f.byEnd) > 0 && f.byEnd[0].end <= r.Start {
		f.replayEnd(f.byEnd.pop())
	}
	if !admitted(r) && !refused(r) {
		return
	}
	for _, rp := range f.starts {
		rp.add(r.Start, admitted(r))
	}
	if admitted(r) {
		for _, rp := range f.mixes {
			rp.add(r.Start, true)
		}
	}
	end := r.End
	if f.decidedWithin > 0 && (f.heldTogether == nil || !f.heldTogether(end)) {
		end = min(end, r.Start+f.decidedWithin)
	}
	if f.watch[index] {
		var d []bool
		for _, rp := range f.starts {
			d = rp.decisions(d)
		}
		f.decided[index] = d
	}
	f.byEnd.push(endItem{end: end, index: index, ok: admitted(r)})
}

// replayEnd replays a request on its response (a refusal in the mixes
// too).
func (f *familyFit) replayEnd(e endItem) {
	for _, rp := range f.ends {
		rp.add(e.end, e.ok)
	}
	if !e.ok {
		for _, rp := range f.mixes {
			rp.add(e.end, false)
		}
	}
}

// result replays what is left and returns the fit.
func (f *familyFit) result() Fit {
	for len(f.byEnd) > 0 {
		f.replayEnd(f.byEnd.pop())
	}
	if len(f.starts) == 0 || !f.starts[0].started {
		w := time.Duration(0)
		if len(f.starts) > 0 {
			w = time.Duration(f.starts[0].w)
		}
		return Fit{Best: Candidate{Family: familyUnknown, Window: w}}
	}
	fit := Fit{effM: math.MaxInt}
	base := 0
	for k := range f.starts {
		fs, fe, fm := f.starts[k].fit(), f.ends[k].fit(), f.mixes[k].fit()
		for i := range fs.Candidates {
			c := better(fs.Candidates[i], fe.Candidates[i], fm.Candidates[i])
			if c.slot >= 0 {
				c.slot += base
			}
			if c.phases[1] > 0 {
				c.phases[0], c.phases[1] = c.phases[0]+base, c.phases[1]+base
			}
			fit.Candidates = append(fit.Candidates, c)
		}
		for i := range fs.Scan {
			fit.Scan = append(fit.Scan, better(fs.Scan[i], fe.Scan[i], fm.Scan[i]))
		}
		base += f.starts[k].slots()
		if k == 0 { // the effective window, at the documented limit
			fit.EffectiveWindow, fit.effM = fs.EffectiveWindow, fs.effM
			for _, o := range []Fit{fe, fm} {
				if o.effM < fit.effM {
					fit.EffectiveWindow, fit.effM = o.EffectiveWindow, o.effM
				}
			}
		}
	}
	fit.choose(f.leaks, f.starts[0].limit)
	return fit
}

// better is the candidate replayed on send times (s), on response times
// (e) or mixed (m: admissions on send times, refusals on response times),
// whichever fits best, with how much worse the worse of the two ends does
// (its timing spread). The mix places each request within its interval,
// as the ends do: where a host held some requests before the limiter and
// not others (a stalled client's refusals reached nginx after the
// admissions sent behind them), neither end orders them as the limiter
// saw them, and the mix places the admissions as early and the refusals
// as late as their intervals allow. It lowers a candidate's score where
// it fits, and never widens the spread the ends measure.
func better(s, e, m Candidate) Candidate {
	c, worst := s, max(s.Mismatches, e.Mismatches)
	if e.Mismatches < c.Mismatches {
		c = e
	}
	if m.Mismatches < c.Mismatches {
		c = m
	}
	c.TimingSpread = max(worst-c.Mismatches, 0)
	return c
}

// ruledOut reports whether the leaks proved rule c out: a sliding log of
// one limiter that admitted with more than its limit surely in its window.
func (p leakProof) ruledOut(c Candidate) bool {
	if c.Family != familySlidingLog || c.Replicas > 1 {
		return false
	}
	if c.counts() {
		return p.All > c.Limit
	}
	return p.Admitted > c.Limit
}

// choose names the best candidate the leaks do not rule out (the fewest
// mismatches; on a tie the simplest family (rank), at any limit, then
// the documented limit, replayed first) and the alternatives the run's
// timing cannot tell from it. At a limit other than the documented one
// (the observed limit: the most admitted surely in one window) only a
// sliding log is named: it is the one limiter that admits at most its
// limit in every window, so the only one whose limit the observed limit
// is. A token bucket of C admits up to 2C in a window, a fixed window
// 2L across a boundary, a counter more than L where the previous
// window's requests came late: replayed at the observed limit they stand
// for no limiter the target could be, and with a limit fitted to the run
// (and dozens of phases besides) a counter could fit one flood of
// refusals better, by a request or two, than the token bucket that
// produced it.
func (fit *Fit) choose(leaks leakProof, documented int) {
	var open []Candidate
	for i, c := range fit.Candidates {
		switch {
		case leaks.ruledOut(c):
			fit.Candidates[i].ruled = true
		case c.Limit == documented || c.Family == familySlidingLog && c.Replicas <= 1:
			open = append(open, c)
		}
	}
	fit.Best = open[0] // "none" is never ruled out
	for _, c := range open[1:] {
		if c.Mismatches < fit.Best.Mismatches || c.Mismatches == fit.Best.Mismatches && c.rank() < fit.Best.rank() {
			fit.Best = c
		}
	}
	// A sliding log at another window length (the scan, at the documented
	// limit) is the same family with a wrong window. Where it beats every
	// family at the documented window by more than the run's timing can
	// move (its worst against their best), the family is a sliding log,
	// not the fixed window or counter whose phases came nearest to it;
	// where it comes as close as Best (a fixed window's phase and a log's
	// length can mimic each other over one run), it is an alternative.
	for _, c := range fit.Scan {
		switch {
		case c.Limit != documented || c.Mismatches == math.MaxInt:
		case c.worst()+oneMisplaced < fit.Best.Mismatches:
			open = append(open, c)
			fit.Best = c
		case c.fewest() <= fit.Best.worst()+oneMisplaced:
			open = append(open, c)
		}
	}
	seen := map[string]bool{fit.Best.key(): true}
	for _, c := range open {
		if c.fewest() <= fit.Best.worst()+oneMisplaced && !seen[c.key()] && c.Family != familyNone {
			seen[c.key()] = true
			fit.Alternatives = append(fit.Alternatives, c)
		}
	}
	fit.Decided = len(fit.Alternatives) == 0
}

// oneMisplaced is what one admission replayed in the bin next to the
// target's costs a candidate: 2 mismatches, one where it is missing and
// one where it is extra. A request sent at a bin's edge costs that with
// any jitter at all, and so does a server whose clock is coarser than a
// bin (nginx reads its clock once per event-loop turn), so no family is
// named by a margin of one misplaced admission: a rival within it is an
// alternative. (The causes' rivals need no such allowance: a rival
// decides the very request a cause rests on, whatever its score.)
const oneMisplaced = 2

// rank is how simple the candidate's family is, the tie order of the fit:
// none, sliding log, token bucket, fixed window, sliding-window counter,
// then replicas (several limiters are less simple than one), whatever the
// limit it was replayed at.
func (c Candidate) rank() int {
	if c.Replicas > 1 {
		return 5
	}
	switch c.Family {
	case familyNone:
		return 0
	case familySlidingLog:
		return 1
	case familyTokenBucket:
		return 2
	case familyFixedWindow:
		return 3
	}
	return 4
}

// rivals reports whether the run's timing could have made b fit as well
// as a or better: b's fewest mismatches, less what chance alone gives
// replicas, are at most a's worst.
func rivals(a, b Candidate) bool { return b.least() <= a.worst() }

// least is the fewest mismatches the candidate could have had: its
// score, less what chance alone gives replicas.
func (c Candidate) least() int { return c.Mismatches - c.chance }

// bestOf returns the candidate of fit (families and window scan, none
// and those ruled out aside) that want takes with the fewest mismatches,
// and false when want takes none.
func (fit Fit) bestOf(want func(Candidate) bool) (Candidate, bool) {
	return fit.fewest(want, func(c Candidate) int { return c.Mismatches })
}

// closestOf is bestOf ranked by least: the candidate want takes that
// comes closest to rivalling another.
func (fit Fit) closestOf(want func(Candidate) bool) (Candidate, bool) {
	return fit.fewest(want, Candidate.least)
}

// fewest returns the candidate of fit (none and those ruled out aside)
// that want takes with the lowest score.
func (fit Fit) fewest(want func(Candidate) bool, score func(Candidate) int) (Candidate, bool) {
	var best Candidate
	found := false
	for _, cs := range [][]Candidate{fit.Candidates, fit.Scan} {
		for _, c := range cs {
			if c.Family == familyNone || c.ruled || !want(c) {
				continue
			}
			if !found || score(c) < score(best) {
				best, found = c, true
			}
		}
	}
	return best, found
}

// explainsRun reports whether c explains a run of admitted admissions:
// it misplaces at most one admission in ten (mismatches count each
// admission misplaced once where it is missing and once where it is
// extra, so the bound is a fifth of them). A target that admitted
// nothing is explained by no limiter.
func explainsRun(c Candidate, admitted int) bool {
	return admitted > 0 && 5*c.Mismatches <= admitted
}

// explainsWithout returns a candidate of fit other than "none" that,
// replayed on send times, decided the watched request of index as the
// target did (admitted: ok), and false when none did. Every family's best
// is asked, whatever its score (a check names a cause only when no
// limiter the fit considers explains the evidence); a fixed window or
// counter the run's timing could have made fit as well as the best, in
// every phase it was replayed at (a boundary elsewhere explains as
// well), and such a token bucket at every refill (a slower one explains
// as well); replicas, whose decision is a probability (more likely admitted
// than not), only when the timing could have made them fit as well as
// the best. A check that asks of a refusal whether something other than
// its cause explains it, or the spoof check of a forged probe's
// admission, asks this.
func (f *familyFit) explainsWithout(fit Fit, index int32, ok bool) (Candidate, bool) {
	d := f.decided[index]
	decides := func(slot int) bool { return slot >= 0 && slot < len(d) && d[slot] == ok }
	for _, c := range fit.Candidates {
		if c.Family == familyNone || c.ruled || c.Replicas > 1 && !rivals(fit.Best, c) {
			continue
		}
		if decides(c.slot) {
			return c, true
		}
		if c.phases[1] > 0 && rivals(fit.Best, c) {
			for s := c.phases[0]; s < c.phases[1]; s++ {
				if decides(s) {
					c.slot = s
					return c, true
				}
			}
		}
	}
	return Candidate{}, false
}

// endItem is an answered request waiting to be replayed on its response.
type endItem struct {
	end   int64
	index int32
	ok    bool
}

// endHeap orders answered requests by response, then send order: a binary
// heap kept as container/heap keeps one (the same sifts, so the same order
// on ties), without its interface, through which every request pushed and
// popped was an allocation.
type endHeap []endItem

func (h endHeap) less(i, j int) bool {
	return h[i].end < h[j].end || h[i].end == h[j].end && h[i].index < h[j].index
}

func (h *endHeap) push(x endItem) {
	*h = append(*h, x)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2 // parent
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *endHeap) pop() endItem {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n || j < 0 {
			break
		}
		if j2 := j + 1; j2 < n && q.less(j2, j) {
			j = j2
		}
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	x := q[n]
	*h = q[:n]
	return x
}

// replay runs every candidate limiter over requests in time order at
// once, each scoring Σ over time bins of w/100 of |admitted by it −
// admitted observed|; bins start at the first request.
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
	logs         []slidingLog  // counting refusals, not; then the window scan; then the forgetting scan
	buckets      []tokenBucket // refilled L per W, then more slowly (see refillScan)
	fixed        []fixedWindow
	counters     []slidingCounter // counting refusals (phases), then not
	recent       window           // the requests of the last w, for the replicas (at most recentCap)
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
	adm, mis int
	last     bool
}

func (s *score) close(obs int) {
	s.mis += abs(s.adm - obs)
	s.adm = 0
}

func (s *score) misses() int { return s.mis }

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
	r.logs = append(r.logs, newSlidingLog(r.limit, W, true), newSlidingLog(r.limit, W, false))
	for _, k := range r.scan {
		r.logs = append(r.logs, newSlidingLog(r.limit, W*int64(k)/100, true))
	}
	for _, k := range r.forgetScan {
		r.logs = append(r.logs, newSlidingLog(r.limit, W*int64(k)/100, false))
	}
	for k := 2; k <= maxReplicas; k++ {
		r.reps = append(r.reps, newReplicas(k, r.limit))
		r.recentCap = max(r.recentCap, r.reps[len(r.reps)-1].certain())
	}
	for _, k := range refillScan(r.limit) {
		r.buckets = append(r.buckets, tokenBucket{limit: r.limit, W: W * k, tokens: float64(r.limit), at: t})
	}
	origins := make([]int64, 0, r.phases+len(r.origins))
	for p := range r.phases {
		origins = append(origins, t-W*int64(p)/int64(r.phases))
	}
	origins = append(origins, r.origins...)
	for _, o := range origins {
		r.fixed = append(r.fixed, fixedWindow{limit: r.limit, W: W, origin: o, idx: math.MinInt64})
	}
	for _, cr := range []bool{true, false} {
		for _, o := range origins {
			r.counters = append(r.counters, slidingCounter{limit: r.limit, W: W, origin: o, countRefused: cr, idx: math.MinInt64})
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
	if r.kept != nil {
		r.kept = append(r.kept, replayed{t, ok})
	}
	r.none.admit(true)
	for i := range r.logs {
		r.logs[i].add(t)
	}
	for i := range r.buckets {
		r.buckets[i].add(t)
	}
	for i := range r.fixed {
		r.fixed[i].add(t)
	}
	for i := range r.counters {
		r.counters[i].add(t)
	}
	n := r.recent.add(t, r.w, r.recentCap)
	for i := range r.reps {
		r.reps[i].add(n)
	}
}

// slots is how many decisions decisions appends: one per candidate that
// can be named (the window scan is not).
func (r *replay) slots() int {
	return 3 + len(r.buckets) + len(r.fixed) + len(r.counters) + len(r.reps)
}

// decisions appends whether each candidate admitted the last request, in
// the order fit lists them (see Candidate.slot).
func (r *replay) decisions(d []bool) []bool {
	d = append(d, r.none.last, r.logs[0].last, r.logs[1].last)
	for i := range r.buckets {
		d = append(d, r.buckets[i].last)
	}
	for i := range r.fixed {
		d = append(d, r.fixed[i].last)
	}
	for i := range r.counters {
		d = append(d, r.counters[i].last)
	}
	for i := range r.reps {
		d = append(d, r.reps[i].last >= 0.5)
	}
	return d
}

func (r *replay) closeBin() {
	r.none.close(r.obs)
	for i := range r.logs {
		r.logs[i].close(r.obs)
	}
	for i := range r.buckets {
		r.buckets[i].close(r.obs)
	}
	for i := range r.fixed {
		r.fixed[i].close(r.obs)
	}
	for i := range r.counters {
		r.counters[i].close(r.obs)
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
	for i, cr := range []bool{true, false} {
		cands = append(cands, cand(familySlidingLog, boolPtr(cr), r.logs[i].mis, 1+i))
	}
	nb := len(r.buckets)
	bucket := cand(familyTokenBucket, boolPtr(false), math.MaxInt, 0)
	bucket.phases = [2]int{3, 3 + nb}
	for i, b := range r.buckets {
		if b.mis < bucket.Mismatches {
			bucket.Mismatches, bucket.Refill, bucket.slot = b.mis, time.Duration(b.W), 3+i
		}
	}
	cands = append(cands, bucket)
	phase := func(origin int64) time.Duration { // how long before the first request a window starts
		return time.Duration(((r.t0-origin)%r.w + r.w) % r.w)
	}
	n := len(r.fixed)
	first := 3 + nb // the first fixed window's slot
	best := cand(familyFixedWindow, nil, math.MaxInt, 0)
	best.phases = [2]int{first, first + n}
	// refined is best, or a phase refine found between the best grid
	// phase's neighbours that fits better: no decisions are kept for it
	// (slot −1); the grid's phases around it stand for it (see phases).
	refined := func(best Candidate, grid int64, mk func(origin int64) windowed) Candidate {
		if o, mis, ok := r.refine(grid, mk); ok && mis < best.Mismatches {
			best.Mismatches, best.Phase, best.slot = mis, phase(o), -1
		}
		return best
	}
	gridBest := func(mis func(p int) int, origin func(p int) int64) int64 {
		g := 0
		for p := 1; p < r.phases; p++ {
			if mis(p) < mis(g) {
				g = p
			}
		}
		return origin(g)
	}
	for p, f := range r.fixed {
		if f.mis < best.Mismatches {
			best.Mismatches, best.Phase, best.slot = f.mis, phase(f.origin), first+p
		}
	}
	if r.kept != nil {
		grid := gridBest(func(p int) int { return r.fixed[p].mis }, func(p int) int64 { return r.fixed[p].origin })
		best = refined(best, grid, func(o int64) windowed {
			return &fixedWindow{limit: r.limit, W: r.w, origin: o, idx: math.MinInt64}
		})
	}
	cands = append(cands, best)
	for i, cr := range []bool{true, false} {
		best := cand(familySlidingWindow, boolPtr(cr), math.MaxInt, 0)
		best.phases = [2]int{first + n + i*n, first + n + (i+1)*n}
		cs := r.counters[i*n : (i+1)*n]
		for p, c := range cs {
			if c.mis < best.Mismatches {
				best.Mismatches, best.Phase, best.slot = c.mis, phase(c.origin), first+n+i*n+p
			}
		}
		if r.kept != nil {
			grid := gridBest(func(p int) int { return cs[p].mis }, func(p int) int64 { return cs[p].origin })
			best = refined(best, grid, func(o int64) windowed {
				return &slidingCounter{limit: r.limit, W: r.w, origin: o, countRefused: cr, idx: math.MinInt64}
			})
		}
		cands = append(cands, best)
	}
	slot := first + n + len(r.counters)
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
	scan := r.logs[2 : 2+len(r.scan)]
	for i, l := range scan {
		if l.mis < fit.effM {
			fit.effM, fit.EffectiveWindow = l.mis, time.Duration(r.w*int64(r.scan[i])/100)
		}
	}
	fit.Scan = []Candidate{r.scanBest(scan, r.scan, true), r.scanBest(r.logs[2+len(r.scan):], r.forgetScan, false)}
	return fit
}

// windowed is a limiter of windows (fixed, or a sliding-window counter)
// replayed by refine.
type windowed interface {
	add(t int64)
	close(obs int)
	misses() int
}

// refine replays the requests kept through windows (made by mk) at phases
// between the grid phases either side of grid (the best grid phase's
// origin), refineSteps a grid step, and returns the origin of the best and
// its mismatches; false when none was replayed. The grid places a window's
// boundary within W/200 of any time, but in a burst that is dozens of
// requests: a sliding-window counter whose boundary cuts the onset burst
// a few dozen requests from where the target's did gives capacity back at
// another pace, and a token bucket of some refill scanned beside it could
// fit the run better than the truth's own family.
func (r *replay) refine(grid int64, mk func(origin int64) windowed) (int64, int, bool) {
	if len(r.kept) == 0 {
		return 0, 0, false
	}
	bestO, bestM := int64(0), math.MaxInt
	for j := -refineSteps + 1; j < refineSteps; j++ {
		if j == 0 {
			continue // the grid phase itself, replayed already
		}
		o := grid + r.w*int64(j)/int64(r.phases*refineSteps)
		wd, cur, obs := mk(o), int64(0), 0
		for _, k := range r.kept {
			if b := (k.t - r.t0) / r.bin; b != cur {
				wd.close(obs)
				cur, obs = b, 0
			}
			if k.ok {
				obs++
			}
			wd.add(k.t)
		}
		wd.close(obs)
		if m := wd.misses(); m < bestM {
			bestO, bestM = o, m
		}
	}
	return bestO, bestM, true
}

// scanBest is the best of the sliding logs of a window scan (lengths in
// percent of w, nearest first), as a candidate of its window length.
func (r *replay) scanBest(logs []slidingLog, pct []int, countRefused bool) Candidate {
	c := Candidate{Family: familySlidingLog, CountsRefused: boolPtr(countRefused), Limit: r.limit, Window: time.Duration(r.w), Mismatches: math.MaxInt, slot: -1}
	for i, l := range logs {
		if l.mis < c.Mismatches {
			c.Mismatches, c.Window = l.mis, time.Duration(r.w*int64(pct[i])/100)
		}
	}
	return c
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
			if l.head++; l.head == limit { // (head+1) % limit, without a division
				l.head = 0
			}
		}
	}
	l.admit(ok)
}

// maxReplicas is the most replicas behind a balancer the fit considers.
const maxReplicas = 4

// replicas is k limiters of L, each a sliding log counting refusals,
// behind an assignment the client cannot predict: each request goes to
// one of them at random, alike and independently (a balancer
// interleaving every client's requests looks so to one client). Its
// score is exact and needs no seed: a replica counts every request
// assigned to it, admitted or not, so the count a request meets is
// Binomial(n, 1/k) over the n others of the last window whatever was
// decided before, and the request is admitted with probability
// P(Binomial(n, 1/k) ≤ L − 1). Its admissions per bin are the expected
// ones (a sum of those probabilities), with their variance (the sum of
// p(1 − p)), and a bin costs what the observed admissions lie beyond one
// standard deviation of the expected: what the assignment's chance alone
// produces costs nothing, as what the timing allows costs a candidate
// nothing. This is what the candidate predicts, not the luckiest of
// some seeded assignments, which would fit noise and favour replicas
// over one limiter. (Replicas forgetting refusals have no such closed
// form, and are not replayed.)
type replicas struct {
	k, limit       int
	cdf            []float64 // P(Binomial(n, 1/k) ≤ L − 1) for n = L, L+1, …
	tail           bool      // cdf reached 0: every n past it is 0 too
	adm, vari, mis float64
	// chanceMean and chanceVar are the mean and variance of mis were the
	// run drawn from these replicas (see close).
	chanceMean, chanceVar float64
	last                  float64 // the probability the last request was admitted
}

func newReplicas(k, limit int) replicas { return replicas{k: k, limit: limit} }

// admitP is P(Binomial(n, 1/k) ≤ L − 1), the table grown as needed:
// F(n+1) = F(n) − p·P(Binomial(n, p) = L − 1).
func (r *replicas) admitP(n int) float64 {
	m := r.limit - 1
	if n <= m {
		return 1
	}
	p := 1 / float64(r.k)
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	for len(r.cdf) < n-m && !r.tail {
		j := m + len(r.cdf) // F(j) known: 1 for j = m, else the last in cdf
		f := 1.0
		if len(r.cdf) > 0 {
			f = r.cdf[len(r.cdf)-1]
		}
		pmf := math.Exp(lg(j) - lg(m) - lg(j-m) + float64(m)*math.Log(p) + float64(j-m)*math.Log1p(-p))
		f = max(f-p*pmf, 0)
		r.cdf = append(r.cdf, f)
		r.tail = f < 1e-12
	}
	if i := n - m - 1; i < len(r.cdf) {
		return r.cdf[i]
	}
	return 0
}

// certain is the fewest others in a window for which a request is
// refused for sure (P(Binomial(n, 1/k) ≤ L − 1) below 1e-12): past it, how
// many more does not matter, so the fit keeps no more of a window.
func (r *replicas) certain() int {
	n := r.limit
	for r.admitP(n) > 0 {
		n++
	}
	return n
}

// add replays a request that met n others in the last window.
func (r *replicas) add(n int) {
	r.last = r.admitP(n)
	r.adm += r.last
	r.vari += r.last * (1 - r.last)
}

// close ends a bin of obs observed admissions. What it costs, the
// observed admissions beyond one standard deviation σ of the expected,
// is itself a chance quantity were the run drawn from these replicas:
// taking the bin's admissions as normal, its mean is σ·E[(|Z| − 1)⁺] =
// 0.1666 σ and its variance σ²·(E[((|Z| − 1)⁺)²] − 0.1666²) = 0.1229 σ².
func (r *replicas) close(obs int) {
	sd := math.Sqrt(r.vari)
	r.mis += max(math.Abs(r.adm-float64(obs))-sd, 0)
	r.chanceMean += 0.1666 * sd
	r.chanceVar += 0.1229 * r.vari
	r.adm, r.vari = 0, 0
}

// chance is the score these replicas reach by chance alone in all but
// one run in forty: the mean of mis and two standard deviations.
func (r *replicas) chance() int {
	return int(math.Ceil(r.chanceMean + 2*math.Sqrt(r.chanceVar)))
}

// window counts the requests of the last w before each, in time order.
type window struct {
	ts   []int64
	head int
}

// add takes a request at t and returns how many others came in (t − w, t],
// or most when more did (0: no bound): a window of a flood holds at most
// most of its requests.
func (q *window) add(t, w int64, most int) int {
	for q.head < len(q.ts) && q.ts[q.head] <= t-w {
		q.head++
	}
	if most > 0 && len(q.ts)-q.head > most {
		q.head = len(q.ts) - most
	}
	if q.head > 1024 && 2*q.head > len(q.ts) { // move what is held to the front
		q.ts = q.ts[:copy(q.ts, q.ts[q.head:])]
		q.head = 0
	}
	n := len(q.ts) - q.head
	q.ts = append(q.ts, t)
	return n
}

// refillScan lists how many windows the token buckets take to refill
// their L tokens: the documented one (1), then 2, 4, 8, … below L, and L
// (one token per window).
func refillScan(limit int) []int64 {
	ks := []int64{1}
	for k := int64(2); k < int64(limit); k *= 2 {
		ks = append(ks, k)
	}
	if limit > 1 {
		ks = append(ks, int64(limit))
	}
	return ks
}

// tokenBucket holds L tokens refilled at L per W; refusals cost nothing.
type tokenBucket struct {
	score
	limit  int
	W      int64
	tokens float64
	at     int64 // the last request's time
}

func (b *tokenBucket) add(t int64) {
	b.tokens = math.Min(float64(b.limit), b.tokens+float64(t-b.at)*float64(b.limit)/float64(b.W))
	b.at = t
	ok := b.tokens >= 1
	if ok {
		b.tokens--
	}
	b.admit(ok)
}

// windowSpan is the span of t − origin the current window idx covers,
// [lo, hi), so that a request in it needs no division to find its window:
// a replay runs dozens of fixed and sliding windows on every request.
type windowSpan struct {
	lo, hi int64
	ok     bool // lo and hi are set (idx·W did not overflow)
}

// in reports whether d, a time less origin, is in the span.
func (s *windowSpan) in(d int64) bool { return s.ok && d >= s.lo && d < s.hi }

// set makes the span window idx's, of length W.
func (s *windowSpan) set(idx, W int64) {
	s.lo = idx * W
	s.hi = s.lo + W
	s.ok = s.lo/W == idx && s.hi > s.lo
}

// fixedWindow admits L per window aligned at origin.
type fixedWindow struct {
	score
	limit          int
	W, origin, idx int64
	n              int
	span           windowSpan
}

func (f *fixedWindow) add(t int64) {
	if d := t - f.origin; !f.span.in(d) {
		if k := floorDiv(d, f.W); k != f.idx {
			f.idx, f.n = k, 0
		}
		f.span.set(f.idx, f.W)
	}
	ok := f.n < f.limit
	if ok {
		f.n++
	}
	f.admit(ok)
}

// slidingCounter estimates the rolling count as the previous fixed window's
// count weighted by its overlap plus the current window's count.
type slidingCounter struct {
	score
	limit          int
	W, origin, idx int64
	countRefused   bool
	cur, prev      int
	span           windowSpan
}

func (c *slidingCounter) add(t int64) {
	if d := t - c.origin; !c.span.in(d) {
		if k := floorDiv(d, c.W); k != c.idx {
			if k == c.idx+1 {
				c.prev = c.cur
			} else {
				c.prev = 0
			}
			c.idx, c.cur = k, 0
		}
		c.span.set(c.idx, c.W)
	}
	var ok bool
	switch {
	// The estimate lies between cur and prev+cur, in floating point too
	// (rounding is monotonic, and the counts are exact): where both
	// bounds decide alike, the division is not needed.
	case c.cur+1 > c.limit:
		ok = false
	case c.prev+c.cur+1 <= c.limit:
		ok = true
	default:
		frac := float64(t-c.origin-c.idx*c.W) / float64(c.W)
		est := float64(c.prev)*(1-frac) + float64(c.cur)
		ok = est+1 <= float64(c.limit)
	}
	if ok || c.countRefused {
		c.cur++
	}
	c.admit(ok)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
