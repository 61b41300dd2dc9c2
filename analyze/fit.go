package analyze

import (
	"fmt"
	"math"
	"time"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/heap"
	"github.com/connectbyjbrh/ratecheck/internal/human"
)

// This file holds the fit: the limiter families, a candidate and the fit's
// result, and the replay of a group's answered requests on their sends,
// their responses and a mix of both, of which each candidate keeps the
// best.

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

	// orders is its mismatches replayed in each order the fit replays
	// (sends, responses, the mix; see better), for a comparison order by
	// order (see outdone).
	orders [3]int
	// once, for a token bucket, is its mismatches in each order at the
	// one refill whose worst order fits best: the bucket with its refill
	// chosen once for every order, as a limiter with nothing to choose is
	// (see outdone); onced says it was replayed so (a token bucket of
	// the fit).
	once  [3]int
	onced bool

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
	// documented is the token bucket of a documented refill at the
	// documented limit (see familyFit.refill), whatever its score; its
	// Family is empty where none was documented.
	documented Candidate
	effM       int
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
	// byEnd holds the answered requests not yet replayed on their
	// responses, by response (Key), then send order (Tie, the index);
	// each carries whether it was admitted (Val).
	byEnd heap.Heap[bool]
	// watch holds the requests whose candidates' decisions are kept (by
	// index), and decided those decisions: per watched request, one per
	// decision slot of every replay on send times.
	watch   map[int32]bool
	decided map[int32][]bool
	// leaks is what the model proved of the admissions (see LeakProof).
	leaks leakProof
	// decidedWithin, when set, is the longest the refusals sent around a
	// request took to come back (see groupRun.decidedBy). The replay on
	// responses stands for requests that queued before the limiter
	// counted them; such a queue holds refusals as long. Where refusals
	// come back at once and admissions late, the limiter decided on
	// arrival and the admissions were held after it (nginx's delay, the
	// service behind it): a request is then replayed no later than
	// decidedWithin after its send, not at its response, which would let
	// a family fit a stream the limiter itself smoothed.
	decidedWithin func(start int64) int64
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
	for f.byEnd.Len() > 0 && f.byEnd.Min().Key <= r.Start {
		f.replayEnd(f.byEnd.Pop())
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
	if f.decidedWithin != nil && (f.heldTogether == nil || !f.heldTogether(end)) {
		end = min(end, r.Start+f.decidedWithin(r.Start))
	}
	if f.watch[index] {
		var d []bool
		for _, rp := range f.starts {
			d = rp.decisions(d)
		}
		f.decided[index] = d
	}
	f.byEnd.Push(heap.Item[bool]{Key: end, Tie: int64(index), Val: admitted(r)})
}

// replayEnd replays a request of byEnd on its response (a refusal in the
// mixes too).
func (f *familyFit) replayEnd(e heap.Item[bool]) {
	for _, rp := range f.ends {
		rp.add(e.Key, e.Val)
	}
	if !e.Val {
		for _, rp := range f.mixes {
			rp.add(e.Key, false)
		}
	}
}

// result replays what is left and returns the fit.
func (f *familyFit) result() Fit {
	for f.byEnd.Len() > 0 {
		f.replayEnd(f.byEnd.Pop())
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
			if c.Family == familyTokenBucket {
				c.once, c.onced = f.bucketOnce(k), true
			}
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
	fit.choose(f.leaks, f.starts[0].limit, time.Duration(f.starts[0].w))
	fit.documented = f.documentedBucket()
	return fit
}

// bucketOnce is the token buckets' mismatches of limit k in each order
// (sends, responses, the mix) at the one refill whose worst order fits
// best.
func (f *familyFit) bucketOnce(k int) [3]int {
	once := [3]int{math.MaxInt, math.MaxInt, math.MaxInt}
	for i := range f.starts[k].buckets {
		o := [3]int{f.starts[k].buckets[i].mis, f.ends[k].buckets[i].mis, f.mixes[k].buckets[i].mis}
		if max(o[0], o[1], o[2]) < max(once[0], once[1], once[2]) {
			once = o
		}
	}
	return once
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
	orders := [3]int{s.Mismatches, e.Mismatches, m.Mismatches}
	c, worst := s, max(s.Mismatches, e.Mismatches)
	if e.Mismatches < c.Mismatches {
		c = e
	}
	if m.Mismatches < c.Mismatches {
		c = m
	}
	c.TimingSpread = max(worst-c.Mismatches, 0)
	c.orders = orders
	return c
}

// replay runs every candidate limiter over requests in time order at
// once, each scoring Σ over time bins of w/100 of |admitted by it −
