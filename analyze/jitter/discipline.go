package jitter

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/method"
)

// This file holds the clients' retry discipline: how every request was
// retried, and the checks of it (answers retried, the attempt cap, faults
// retried, the pause after repeated 429s).

// disciplineCounts is how the fleet's clients retried their requests.
type disciplineCounts struct {
	total, attempts, attemptsMax int
	retriedAnswers, overCap      int
	retriedCodes                 map[uint16]int // the answers retried, by status
	// faults: requests that met a retryable fault (no answer, 5xx) other
	// than a 429; faultsDropped: of those, ended on it with attempts left.
	faults, faultsDropped int
	// slowDue: requests after one that ended on repeated 429s; slowOK:
	// of those, sent after at least SlowDown; slowWorst: the shortest
	// pause, pauses: every pause.
	slowDue, slowOK int
	slowWorst       time.Duration
	pauses          []float64
	// perClient: logical requests of each fleet client.
	perClient map[int]int
	// session, origin: clients that sent Mcp-Session-Id or Origin (from
	// the labels of a harness's records).
	session, origin int
	// repeats: requests that repeated one answered with a failure-table
	// answer, from a client that polls (a retry of it, or the next
	// request: the harness cannot tell)
	repeats int
}

// discipline counts every request's retries (phase 4): answers retried,
// requests over the attempt cap, faults not retried, and the pause before
// the next request after one that ended on repeated 429s.
func (f *fleetRun) discipline(cfg Config) disciplineCounts {
	d := disciplineCounts{slowWorst: -1, perClient: map[int]int{}, retriedCodes: map[uint16]int{}}
	for _, c := range f.clients {
		reqs := f.requests[c]
		ids := make([]int, 0, len(reqs))
		for id := range reqs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		d.perClient[c] = len(ids)
		for i, id := range ids {
			as := reqs[id]
			if as[0].tag.Repeat {
				d.repeats++
			}
			d.total++
			d.attempts += len(as)
			d.attemptsMax = max(d.attemptsMax, len(as))
			if len(as) > cfg.Attempts {
				d.overCap++
			}
			faulted := false
			for j := range as {
				code := as[j].rec.Code
				if j+1 < len(as) && !method.Retryable(code) {
					d.retriedAnswers++
					d.retriedCodes[code]++
				}
				faulted = faulted || code == 0 || code >= 500
			}
			if faulted {
				d.faults++
				if last := as[len(as)-1].rec.Code; (last == 0 || last >= 500) && len(as) < cfg.Attempts {
					d.faultsDropped++
				}
			}
			n := len(as)
			if i+1 < len(ids) && n >= 2 && as[n-1].rec.Code == 429 && as[n-2].rec.Code == 429 {
				gap := time.Duration(reqs[ids[i+1]][0].rec.Start - as[n-1].rec.End)
				d.pauses = append(d.pauses, float64(gap))
				if cfg.SlowDown > 0 {
					d.slowDue++
					if d.slowWorst < 0 || gap < d.slowWorst {
						d.slowWorst = gap
					}
					if gap >= cfg.SlowDown*9/10 { // timers may fire a hair early on some clocks
						d.slowOK++
					}
				}
			}
		}
	}
	return d
}

func judgeRetriedAnswers(e *fleetEvidence) (string, string) {
	d := e.discipline
	if d.retriedAnswers > 0 {
		codes := slices.Sorted(maps.Keys(d.retriedCodes))
		var what []string
		for _, c := range codes {
			what = append(what, fmt.Sprintf("%d× a %d", d.retriedCodes[c], c))
		}
		return analyze.Fail, fmt.Sprintf("an answer was retried %d times (%s): only 429, 5xx and transport faults may be (a 4xx, or a JSON-RPC error or tool error on a 200, repeats whatever the client does)", d.retriedAnswers, strings.Join(what, ", "))
	}
	if d.repeats > 0 {
		return analyze.Inconclusive, fmt.Sprintf("%d requests repeated, byte for byte, one answered with a failure-table answer, from clients that poll one request: a retry of the answer cannot be told from the next request, so those copies are inconclusive; make each logical request differ (a query parameter, or an argument of the tool call, naming it) to judge them", d.repeats)
	}
	return analyze.Pass, fmt.Sprintf("no answer was retried (%d requests, %.2f attempts each on average)", d.total, e.rep.AttemptsMean)
}

func judgeAttemptCap(e *fleetEvidence) (string, string) {
	d := e.discipline
	split := ""
	if f := e.f; f.split > 0 {
		split = fmt.Sprintf("; %d chains of one request repeated past the cap by %d clients that poll one request were read as consecutive requests of at most %d attempts, which explains exactly the %d requests each was asked to make (the server cannot tell a poller's next request from a retry: make each logical request differ to judge them apart)",
			f.split, f.splitClients, e.cfg.Attempts, e.cfg.Requests)
	}
	if d.overCap > 0 {
		return analyze.Fail, fmt.Sprintf("%d requests took more than %d attempts (at most %d)%s", d.overCap, e.cfg.Attempts, d.attemptsMax, split)
	}
	return analyze.Pass, fmt.Sprintf("every request stopped within %d attempts (at most %d)%s", e.cfg.Attempts, d.attemptsMax, split)
}

// judgeFaultsRetried reports the requests that met a transport fault or a
// 5xx and were not retried though attempts were left: the contract says
// to retry them, but a client may have reasons (a deadline), so it is
// reported, not failed.
func judgeFaultsRetried(e *fleetEvidence) (string, string) {
	d := e.discipline
	switch {
	case d.faults == 0:
		return analyze.Skip, "no request met a transport fault or a 5xx"
	case d.faultsDropped > 0:
		return analyze.Pass, fmt.Sprintf("reported: %d of %d requests that met a fault (reset, timeout, 5xx) were not retried although attempts were left; the contract says a fault is worth retrying", d.faultsDropped, d.faults)
	}
	return analyze.Pass, fmt.Sprintf("all %d requests that met a fault (reset, timeout, 5xx) were retried", d.faults)
}

func judgeSlowDown(e *fleetEvidence) (string, string) {
	d, cfg := e.discipline, e.cfg
	switch {
	case cfg.SlowDown <= 0 && len(d.pauses) > 0:
		return analyze.Pass, fmt.Sprintf("reported: after a request that ended on repeated 429s, clients paused %v (median; shortest %v) before their next request", time.Duration(quantile(slices.Clone(d.pauses), 0.5)).Round(time.Millisecond), time.Duration(slices.Min(d.pauses)).Round(time.Millisecond))
	case cfg.SlowDown <= 0:
		return analyze.Skip, "no slow-down pause configured to check, and no request ended on repeated 429s"
	case d.slowDue == 0:
		return analyze.Skip, "no client ended a request on repeated 429s and then sent another"
	case d.slowOK < d.slowDue:
		return analyze.Fail, fmt.Sprintf("%d of %d clients sent their next request after repeated 429s without slowing down (shortest pause %v, want %v)", d.slowDue-d.slowOK, d.slowDue, d.slowWorst.Round(time.Millisecond), cfg.SlowDown)
	}
	return analyze.Pass, fmt.Sprintf("all %d clients that met repeated 429s paused at least %v before their next request (shortest %v)", d.slowDue, cfg.SlowDown, d.slowWorst.Round(time.Millisecond))
}
