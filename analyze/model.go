package analyze

import (
	"slices"
	"sort"
	"time"
)

// Outcome is what the uncertainty-interval model requires of a request.
type Outcome uint8

// Required outcomes.
const (
	Indeterminate Outcome = iota // either answer is consistent with the limit
	Require200                   // the window provably held at most L: must be admitted
	Require429                   // the window provably held more than L: must be refused
)

// Judgement is the model's view of one request: 24 bytes, as a million
// of them are kept.
type Judgement struct {
	// Index is the request's index in its group.
	Index int32
	// Definite and Ambiguous are the other requests surely and possibly in
	// the server's window when it counted this one.
	Definite, Ambiguous int32
	// DefiniteAdmitted and PossibleAdmitted count only admitted requests:
	// what a limiter that forgets refusals would see.
	DefiniteAdmitted, PossibleAdmitted int32
	Required                           Outcome
	// Leak is an admission that the window provably forbade; FalseThrottle a
	// refusal that it provably allowed.
	Leak, FalseThrottle bool
}

// Group is the requests of one surface from one source, in send order.
type Group struct {
	Surface, Source string
	Records         []*Record
}

// admitted reports whether a record passed the limiter: any answer but 429,
// 5xx or a transport error.
func admitted(r *Record) bool { return r.Code != 0 && r.Code != 429 && r.Code < 500 }

// refused reports whether the record was refused by the limiter.
func refused(r *Record) bool { return r.Code == 429 }

// sure reports whether the server surely counted the record: it answered
// from the surface. Transport errors and 5xx may or may not have been counted.
func sure(r *Record) bool { return r.Code != 0 && r.Code < 500 }

// window counts, for a request j, the requests of a set that were surely
// and possibly counted in the server's window when j was counted.
type window struct {
	W                  int64
	sureS, sureR       []int64 // sorted sends and responses of surely counted requests
	allS, allR         []int64 // the same over every request that may have been counted
	long               []*Record
	contains, sureOnly func(*Record) bool
	at                 [4]int // where the last answer of each count was, for upTo
}

// newWindow indexes the records of g that count: those for which
// maybe(r) holds, and of those, surely those for which certain(r) holds.
func newWindow(g Group, w time.Duration, maybe, certain func(*Record) bool) *window {
	n := len(g.Records)
	x := &window{W: int64(w), contains: maybe, sureOnly: certain,
		sureS: make([]int64, 0, n), sureR: make([]int64, 0, n), allS: make([]int64, 0, n), allR: make([]int64, 0, n)}
	for _, r := range g.Records {
		if !maybe(r) {
			continue
		}
		x.allS, x.allR = append(x.allS, r.Start), append(x.allR, r.End)
		if certain(r) {
			x.sureS, x.sureR = append(x.sureS, r.Start), append(x.sureR, r.End)
			if r.End-r.Start > x.W/2 {
				x.long = append(x.long, r)
			}
		}
	}
	for _, a := range [][]int64{x.sureS, x.sureR, x.allS, x.allR} {
		if !slices.IsSorted(a) {
			slices.Sort(a)
		}
	}
	return x
}

// upTo returns #{k : a[k] ≤ v} of a sorted a. It searches out from *at,
// its previous answer, and leaves the new one there: a group's requests
// come in send order, so each count moves little from one to the next,
// and the model runs in about linear time.
func upTo(a []int64, v int64, at *int) int {
	n := len(a)
	lo, hi := 0, min(*at, n) // the answer is in [lo, hi]
	if hi < n && a[hi] <= v {
		lo, hi = hi+1, n // gallop right
		for step := 1; lo+step-1 < n; step *= 2 {
			if p := lo + step - 1; a[p] > v {
				hi = p
				break
			} else {
				lo = p + 1
			}
		}
	} else {
		for step := 1; hi-step >= 0; step *= 2 { // gallop left
			if p := hi - step; a[p] <= v {
				lo = p + 1
				break
			} else {
				hi = p
			}
		}
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] <= v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	*at = lo
	return lo
}

func le(a []int64, x int64) int { return sort.Search(len(a), func(i int) bool { return a[i] > x }) }

// definite counts the sure requests other than rj with r_i ≤ s_j and
// s_i > r_j − W: #{r_i ≤ s_j} − #{s_i ≤ r_j − W} + #{s_i ≤ r_j − W ∧ r_i > s_j},
// the last term only possible for requests slower than W − lat_j.
func (x *window) definite(rj *Record) int {
	s, r := rj.Start, rj.End
	n := upTo(x.sureR, s, &x.at[0]) - upTo(x.sureS, r-x.W, &x.at[1])
	for _, li := range x.long {
		if li != rj && li.Start <= r-x.W && li.End > s {
			n++
		}
	}
	if x.sureOnly(rj) && x.contains(rj) {
		lat := r - s
		if lat >= x.W && lat > 0 {
			n-- // j itself sits in the last two terms when it took a whole window
		}
		if lat == 0 {
			n-- // and in the first when it took no time
		}
	}
	return n
}

// possible counts the requests other than rj not definitely out of its
// window: #{i ≠ j : r_i > s_j − W ∧ s_i < r_j}.
func (x *window) possible(rj *Record) int {
	n := upTo(x.allS, rj.End-1, &x.at[2]) - upTo(x.allR, rj.Start-x.W, &x.at[3])
	if x.contains(rj) && rj.End > rj.Start {
		n--
	}
	return n
}

// Model evaluates the uncertainty interval of every request of g against a
// limit of L per window w, refused requests counted as documented. It runs
// in O(n log n).
//
// Request i was counted at some τ_i in [s_i, r_i]. For request j, i is
// definitely in its window when r_i ≤ s_j and s_i > r_j − w; definitely out
// when r_i ≤ s_j − w or s_i ≥ r_j; otherwise ambiguous. Requests that may
// not have been counted at all (transport errors, 5xx) are never definite.
func Model(g Group, limit int, w time.Duration) []Judgement {
	all := newWindow(g, w, func(*Record) bool { return true }, sure)
	adm := newWindow(g, w, func(r *Record) bool { return !refused(r) }, admitted)
	out := make([]Judgement, 0, len(g.Records))
	for j, rj := range g.Records {
		if !admitted(rj) && !refused(rj) {
			continue
		}
		definite, possible := all.definite(rj), all.possible(rj)
		jd := Judgement{Index: int32(j), Definite: int32(definite), Ambiguous: int32(possible - definite),
			DefiniteAdmitted: int32(adm.definite(rj)), PossibleAdmitted: int32(adm.possible(rj))}
		switch {
		case 1+definite >= limit+1:
			jd.Required = Require429
			jd.Leak = admitted(rj)
		case 1+possible <= limit:
			jd.Required = Require200
			jd.FalseThrottle = refused(rj)
		}
		out = append(out, jd)
	}
	return out
}

// ObservedLimit returns the most admitted requests of g all sent within one
// window before a refused request's response came back, over every refusal
// of g, and false when nothing was refused.
func ObservedLimit(g Group, w time.Duration) (int, bool) {
	var adm []int64
	for _, r := range g.Records {
		if admitted(r) {
			adm = append(adm, r.Start)
		}
	}
	sort.Slice(adm, func(i, j int) bool { return adm[i] < adm[j] })
	best, any := 0, false
	for _, r := range g.Records {
		if !refused(r) {
			continue
		}
		any = true
		// admitted i with s_i in (r_j − W, r_j)
		hi := sort.Search(len(adm), func(i int) bool { return adm[i] >= r.End })
		lo := sort.Search(len(adm), func(i int) bool { return adm[i] > r.End-int64(w) })
		best = max(best, hi-lo)
	}
	return best, any
}
