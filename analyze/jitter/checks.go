package jitter

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// This file holds the checks of a fleet in report order, the evidence they
// weigh, and the checks of the run's premises: every client made its
// requests, the target kept time, and every first attempt was refused
// together.

// fleetCheckDef is one check of a fleet: its name, the evidence it needs
// (said when it is missing) and its judge, which returns no verdict when
// the check does not apply to the run.
type fleetCheckDef struct {
	name, needs string
	judge       func(e *fleetEvidence) (verdict, detail string)
}

// fleetEvidence is what a fleet's checks weigh.
type fleetEvidence struct {
	in         *decode.Input
	f          *fleetRun
	cfg        Config
	rep        *Report
	jitter     analyze.Check
	discipline disciplineCounts
}

// fleetChecks lists the checks of a fleet in report order. Adding a check
// is adding one here; tables, JSON and JUnit render what they return.
func fleetChecks() []fleetCheckDef {
	return []fleetCheckDef{
		{"clients", "every client's requests, as many as asked", judgeClients},
		{"target", "a target that kept time while the clients retried", judgeStall},
		{"shared-429", "every client's first attempt refused together", func(e *fleetEvidence) (string, string) {
			c := sharedRefusal(e.in, e.f)
			return c.Verdict, c.Detail
		}},
		{"jitter", "retries of the first request in waves of at least two clients", func(e *fleetEvidence) (string, string) {
			return e.jitter.Verdict, e.jitter.Detail
		}},
		{"retry-answers", "requests whose answers the clients could retry", judgeRetriedAnswers},
		{"attempt-cap", "requests that met retryable failures", judgeAttemptCap},
		{"faults-retried", "requests that met a transport fault or a 5xx", judgeFaultsRetried},
		{"slow-down", "a client that ended a request on repeated 429s and sent another", judgeSlowDown},
	}
}

// judgeClients: a run where a client sent fewer logical requests than
// asked, or none, cannot show how it retries: inconclusive, naming which.
func judgeClients(e *fleetEvidence) (string, string) {
	cfg := e.cfg
	if cfg.Clients <= 0 && cfg.Requests <= 0 {
		return "", "" // a fleet of this tool's own clients: nothing to count
	}
	var short []string
	missing := 0
	for c := 1; c <= cfg.Clients; c++ {
		n, ok := e.discipline.perClient[c]
		switch {
		case !ok:
			missing++
		case n < cfg.Requests && len(short) < 5:
			short = append(short, fmt.Sprintf("client %d sent %d of %d", c, n, cfg.Requests))
		case n < cfg.Requests:
			short = append(short, "…")
		}
	}
	switch {
	case missing == cfg.Clients:
		return analyze.Inconclusive, fmt.Sprintf("none of the %d clients sent a request", cfg.Clients)
	case missing > 0 || len(short) > 0:
		what := strings.Join(short, ", ")
		if missing > 0 {
			what = strings.TrimPrefix(fmt.Sprintf("%s, %d clients sent nothing", what, missing), ", ")
		}
		return analyze.Inconclusive, fmt.Sprintf("clients made fewer requests than asked (%s): a client that stops early shows nothing of how it retries", what)
	}
	return analyze.Pass, fmt.Sprintf("all %d clients made the %d requests asked", cfg.Clients, cfg.Requests)
}

// judgeStall: a target that stalled while the clients retried moved their
// arrival times by more than ε, so the timing figures are not the clients'.
func judgeStall(e *fleetEvidence) (string, string) {
	switch stall, eps := e.cfg.Stall, e.cfg.Epsilon; {
	case stall <= 0:
		return "", "" // not measured (the target is not in this process)
	case stall > eps:
		return analyze.Inconclusive, fmt.Sprintf("the target stalled for %v while the clients retried, more than ε (%v): arrival times are the host's, not the clients' (start fewer clients, or on a quieter host)", stall.Round(time.Millisecond), eps)
	default:
		return analyze.Pass, fmt.Sprintf("the target kept time within %v (ε %v)", stall.Round(100*time.Microsecond), eps)
	}
}

// sharedRefusal checks the experiment's premise: every client's first
// attempt was refused together. A host stall longer than the window lets
// the primer's requests age out first, and the clients' first attempts
// are admitted.
func sharedRefusal(in *decode.Input, f *fleetRun) analyze.Check {
	refusedN, let, firstFrom, firstTo := 0, 0, int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range f.fleet {
		a := f.requests[c][1][0].rec
		switch {
		case a.Refused():
			refusedN++
		case a.Admitted():
			let++
		}
		firstFrom, firstTo = min(firstFrom, a.Start), max(firstTo, a.Start)
	}
	var primeFrom, primeTo int64 = math.MaxInt64, math.MinInt64
	for i := range in.Records {
		if r := &in.Records[i]; in.Tables().Labels(r).Stream == method.StreamPrime && in.Tables().Labels(r).Fleet == nil {
			primeFrom, primeTo = min(primeFrom, r.Start), max(primeTo, r.End)
		}
	}
	setup := fmt.Sprintf("first attempts sent over %v", time.Duration(firstTo-firstFrom).Round(time.Millisecond))
	if primeFrom <= primeTo {
		setup = fmt.Sprintf("the primer took %v, then the %s", time.Duration(primeTo-primeFrom).Round(time.Millisecond), setup)
	}
	if faults := len(f.fleet) - refusedN - let; faults > 0 {
		setup += fmt.Sprintf("; %d met a fault instead (5xx or no answer)", faults)
	}
	if let == 0 {
		return check("shared-429", analyze.Pass, "no client's first attempt was admitted: %d of %d were refused together (%s)", refusedN, len(f.fleet), setup)
	}
	return check("shared-429", analyze.Fail, "%d of %d clients' first attempts were admitted (%s): the address's budget came back before they arrived, so the fleet was not driven into a shared 429; the host stalled for longer than the window allows, or something else spent or freed the budget: re-run with a longer --window (the target's)", let, len(f.fleet), setup)
}
