package jitter

import (
	"cmp"
	"maps"
	"slices"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// This file holds how a fleet's attempts are grouped by client and request,
// and how a client that polls one request has its chains read back as the
// requests it was asked to make.

// fleetAttempt is one attempt, in a client's request.
type fleetAttempt struct {
	rec *decode.Record
	tag *archive.FleetTag
}

// fleetRun is a fleet's results grouped by client and request.
type fleetRun struct {
	requests map[int]map[int][]fleetAttempt // client → request → attempts in order
	clients  []int                          // every client, ascending
	fleet    []int                          // the fleet proper: not the failure-table probes
	// split: chains of one request read as that many requests of at most
	// the cap (see splitPolled), and the clients they were of
	split, splitClients int
}

// splitPolled reads, for client programs (Config.Requests set), a chain
// of attempts of one request past the attempt cap as consecutive requests
// of at most the cap, when that explains exactly the requests the client
// was asked to make and did not otherwise: a client that polls one
// request sends the same bytes for its next request after giving up on
// one, which the server cannot tell from a retry. Only chains of
// retryable failures (429, 5xx, no answer) are split: an answer inside
// one is a retried answer.
func (f *fleetRun) splitPolled(cfg Config) {
	if cfg.Requests <= 0 || cfg.Attempts <= 0 {
		return
	}
	for _, c := range f.clients {
		reqs := f.requests[c]
		ids := slices.Sorted(maps.Keys(reqs))
		extra := 0
		for _, id := range ids {
			if as := reqs[id]; len(as) > cfg.Attempts && allRetryable(as[:len(as)-1]) {
				extra += (len(as) - 1) / cfg.Attempts
			}
		}
		if extra == 0 || len(ids)+extra != cfg.Requests {
			continue
		}
		out := map[int][]fleetAttempt{}
		for _, id := range ids {
			as := reqs[id]
			if len(as) <= cfg.Attempts || !allRetryable(as[:len(as)-1]) {
				out[len(out)+1] = as
				continue
			}
			f.split++
			for len(as) > 0 {
				n := min(cfg.Attempts, len(as))
				chunk := make([]fleetAttempt, n)
				for i := range chunk {
					t := *as[i].tag
					t.Request, t.Attempt = len(out)+1, i+1
					chunk[i] = fleetAttempt{as[i].rec, &t}
				}
				out[len(out)+1], as = chunk, as[n:]
			}
		}
		f.requests[c] = out
		f.splitClients++
	}
}

// allRetryable reports whether every attempt met a retryable failure.
func allRetryable(as []fleetAttempt) bool {
	for _, a := range as {
		if !method.Retryable(a.rec.Code) {
			return false
		}
	}
	return true
}

// groupFleet groups the fleet results of in (phase 1).
func groupFleet(in *decode.Input) *fleetRun {
	f := &fleetRun{requests: map[int]map[int][]fleetAttempt{}}
	for i := range in.Records {
		r := &in.Records[i]
		tag := in.Tables().Labels(r).Fleet
		if tag == nil {
			continue
		}
		c := f.requests[tag.Client]
		if c == nil {
			c = map[int][]fleetAttempt{}
			f.requests[tag.Client] = c
		}
		c[tag.Request] = append(c[tag.Request], fleetAttempt{r, tag})
	}
	for c, reqs := range f.requests {
		f.clients = append(f.clients, c)
		for _, as := range reqs {
			slices.SortFunc(as, func(a, b fleetAttempt) int { return cmp.Compare(a.tag.Attempt, b.tag.Attempt) })
		}
	}
	slices.Sort(f.clients)
	for _, c := range f.clients {
		if as := f.requests[c][1]; len(as) > 0 && in.Tables().Labels(as[0].rec).Stream == method.StreamFleet {
			f.fleet = append(f.fleet, c)
		}
	}
	return f
}
