package analyze

import (
	"time"

	"github.com/connectbyjbrh/ratecheck/decode"
)

// Outcome is what the uncertainty-interval model requires of a request.
type Outcome uint8

// Required outcomes.
const (
	indeterminate Outcome = iota // either answer is consistent with the limit
	require200                   // the window provably held at most L: must be admitted
	require429                   // the window provably held more than L: must be refused
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
	Records         []*decode.Record
	// Uncertain, when set, names requests that may or may not have been
	// counted even when answered: probes with a forged forwarding header
	// are counted by the address's own limiter only if the target ignores
	// the header. They are never definite, and no observed limit or fit
	// rests on them.
	Uncertain func(*decode.Record) bool
}

// admitted reports whether a record was admitted: only a 2xx is. Other
// answers (404, 422, …) are neither admissions nor refusals: whether they
// count toward a limit is not documented.
func admitted(r *decode.Record) bool { return r.Admitted() }

// refused reports whether the record was refused by the limiter: a 429.
func refused(r *decode.Record) bool { return r.Refused() }

// sure reports whether the server surely counted the record: it was
// admitted or refused. Transport errors and 5xx may or may not have been
// counted, and other answers may or may not count.
func sure(r *decode.Record) bool { return admitted(r) || refused(r) }

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

// Model evaluates the uncertainty interval of every request of g against a
// limit of L per window w, refused requests counted as documented. It runs
// in O(n log n) and holds one window of requests (plus the longest
// latency) at a time: Analyze runs it as the records stream past.
//
// Request i was counted at some τ_i in [s_i, r_i]. For request j, i is
// definitely in its window when r_i ≤ s_j and s_i > r_j − w; definitely out
// when r_i ≤ s_j − w or s_i ≥ r_j; otherwise ambiguous. Requests that may
// not have been counted at all (transport errors, 5xx) are never definite.
func Model(g Group, limit int, w time.Duration) []Judgement {
	out := make([]Judgement, 0, len(g.Records))
	m := newGroupModel(limit, w, g.Uncertain, func(j *judged) {
		if j.judged {
			out = append(out, j.Judgement)
		}
	})
	for _, r := range g.Records {
		m.add(r)
	}
	m.flush()
	return out
}

// ObservedLimit returns the most admitted requests of g all sent within one
// window before a refused request's response came back, over every refusal
// of g, and false when nothing was refused.
func ObservedLimit(g Group, w time.Duration) (int, bool) {
	best, any := 0, false
	m := newGroupModel(1, w, g.Uncertain, func(j *judged) {
		if j.judged && refused(&j.Record) {
			best, any = max(best, j.observed), true
		}
	})
	for _, r := range g.Records {
		m.add(r)
	}
	m.flush()
	return best, any
}
