// Package simrun runs a plan of the engine on a virtual clock: the plan's
// own timeline (package timeline) says when each hit is due and what the
// follow-up sends, a simulated host (internal/hostsim) how long each
// request takes and when on its way the target counts it, and the target
// is any http.Handler that reads the virtual clock: the reference target
// with its Clock and Sleep set to the run's [Clock], a balancer in front
// of several, a limiter we did not write that takes time as an argument.
// The requests are the plan's own (its targeters), the results what the
// engine would have received, and [Executor] archives them as
// attack.Execute does, so a command's own analysis judges them. It is
// test support, not API: nothing in the binary imports it.
package simrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/internal/heap"
	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// A Clock is the virtual time of a simulated world: runs advance it, and
// a target reads it. Since is the target's monotonic clock (for
// refserver.Config.Clock), Now the wall clock, and Sleep holds the answer
// being served for d instead of waiting (for refserver.Config.Sleep). The
// zero value is not usable: make one with [NewClock]. It is not safe for
// concurrent use; a simulated run serves one request at a time.
type Clock struct {
	wall   time.Time
	offset time.Duration
	now    time.Duration
	hold   time.Duration
}

// NewClock returns a clock reading wall at virtual time 0, whose target
// started offset before it (the phase of a window aligned to the target's
// start).
func NewClock(wall time.Time, offset time.Duration) *Clock {
	return &Clock{wall: wall, offset: offset}
}

// Since is the time since the target started.
func (c *Clock) Since() time.Duration { return c.offset + c.now }

// Now is the wall clock.
func (c *Clock) Now() time.Time { return c.wall.Add(c.now) }

// Sleep holds the request being served for d: the target's time moves on
// by d for it (what it decides after the sleep, it decides then), and its
// answer comes back d later. It never waits.
func (c *Clock) Sleep(_ context.Context, d time.Duration) error {
	c.hold += max(d, 0)
	c.now += max(d, 0)
	return nil
}

// Advance moves the clock d forward: time passing between runs.
func (c *Clock) Advance(d time.Duration) { c.now += max(d, 0) }

// at moves the clock to t, an event of the run in progress.
func (c *Clock) at(t time.Duration) { c.now = t }

// A World is what a simulated run meets: the target, the clock it reads,
// the host the requests cross and the randomness of that crossing.
type World struct {
	Target http.Handler
	Clock  *Clock
	Host   hostsim.Host
	Rand   *rand.Rand
}

// Addr is the remote address the target sees for a request from source:
// the source with a port, or 127.0.0.1 for the system's choice.
func Addr(source string) string {
	if source == "" {
		source = "127.0.0.1"
	}
	return net.JoinHostPort(source, "40000")
}

// Serve has the target answer r, sent from source, at the clock's now,
// and returns the answer (nil when the target aborted it, as a reset
// connection does: http.ErrAbortHandler) and how long the target held it.
func (w *World) Serve(r *http.Request, source string) (rec *httptest.ResponseRecorder, hold time.Duration) {
	r.RemoteAddr = Addr(source)
	if r.Body == nil {
		r.Body = http.NoBody // as a server's requests have
	}
	rec = httptest.NewRecorder()
	at := w.Clock.now
	w.Clock.hold = 0
	defer func() {
		hold, w.Clock.now = w.Clock.hold, at
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				panic(p)
			}
			rec = nil
		}
	}()
	w.Target.ServeHTTP(rec, r)
	return rec, hold
}

// Client returns an HTTP client whose requests from source the target
// answers at the clock's now, in-process: for what a plan sends before
// its run (an MCP handshake).
func (w *World) Client(source string) *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		rec, _ := w.Serve(r, source)
		return rec.Result(), nil
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// event is something that happens in a simulated run at its time: a hit
// goes out, a request reaches the target, an answer comes back, or the
// follow-up is decided.
type event struct {
	kind   int
	plan   int
	unit   int
	hit    uint64
	sent   time.Duration // when the request went out
	lat    time.Duration // the host's latency of it
	req    *http.Request
	result *vegeta.Result
}

const (
	send = iota
	arrive
	answer
	decide
)

// running is one plan of a simulated run: its units, its timeline and
// what it waits for.
type running struct {
	pl       attack.Plan
	units    []attack.Unit
	tl       *timeline.Timeline
	sink     func(archive.Result) error
	timeout  time.Duration
	maxBody  int
	blocked  map[int]uint64
	kept     []archive.Result
	deciding bool
	stopped  bool
}

// Run runs pl on the virtual clock of w, from its now, and hands each
// result to sink as it comes back, with its unit's labels, in the order
// it comes back, as the engine does; it returns when every result is in. A sink that returns an
// error stops the run as a cancelled one stops: nothing more is sent, and
// what is in flight still comes back. base is the target's URL as the
// requests name it. The plan's follow-up, if any, is decided when its
// timeline says, host.Decide after the plan's last answer, with the
// plan's own FollowUp.
func Run(pl attack.Plan, w *World, base string, sink func(archive.Result) error) error {
	return RunAll([]attack.Plan{pl}, w, base, []func(archive.Result) error{sink})
}

// RunAll runs plans side by side from w's now, as Run runs one, plan i's
// results to sinks[i]: shards of one attack started at an agreed instant.
func RunAll(plans []attack.Plan, w *World, base string, sinks []func(archive.Result) error) error {
	origin := w.Clock.now
	var span time.Duration
	runs := make([]*running, len(plans))
	for k, pl := range plans {
		units, tl, err := pl.Units(base)
		if err != nil {
			return err
		}
		r := &running{pl: pl, units: units, tl: tl, sink: sinks[k], timeout: pl.Timeout, maxBody: int(pl.MaxBody), blocked: map[int]uint64{}}
		if r.timeout <= 0 {
			r.timeout = 10 * time.Second
		}
		if r.maxBody <= 0 {
			r.maxBody = attack.DefaultMaxBody
		}
		span = max(span, pl.Duration())
		if pl.FollowUp != nil {
			span = max(span, time.Duration(pl.FollowUp.MaxUntil*float64(pl.Window)))
		}
		runs[k] = r
	}
	stalls := w.Host.DrawStalls(w.Rand, max(span, time.Millisecond))
	var (
		q   heap.Heap[event]
		seq int64
	)
	push := func(at time.Duration, e event) {
		seq++
		q.Push(heap.Item[event]{Val: e, Key: int64(at), Tie: seq})
	}
	next := func(k, i int, n uint64, now time.Duration) {
		r := runs[k]
		at, st := r.tl.Due(i, n)
		switch st {
		case timeline.Ready:
			push(max(at, now), event{kind: send, plan: k, unit: i, hit: n})
		case timeline.Blocked:
			r.blocked[i] = n
		}
	}
	wake := func(k int, now time.Duration) { // in the units' order: one world, one run
		for _, i := range slices.Sorted(maps.Keys(runs[k].blocked)) {
			n := runs[k].blocked[i]
			delete(runs[k].blocked, i)
			next(k, i, n, now)
		}
	}
	for k, r := range runs {
		for i := range r.units {
			next(k, i, 0, 0)
		}
	}
	for q.Len() > 0 {
		it := q.Pop()
		e, now := it.Val, time.Duration(it.Key)
		w.Clock.at(origin + now)
		r := runs[e.plan]
		u := &r.units[e.unit]
		switch e.kind {
		case send:
			if r.stopped {
				continue
			}
			var tgt vegeta.Target
			if err := u.Targeter(&tgt); err != nil {
				return fmt.Errorf("%s: %w", u.Label, err)
			}
			req, err := tgt.Request()
			if err != nil {
				return fmt.Errorf("%s: %w", u.Label, err)
			}
			e.req, e.sent = req, now
			e.lat = w.Host.Latency(w.Rand, stalls, now, u.Stream.Pacer.Type == "burst-then-probe")
			e.result = &vegeta.Result{Attack: u.Label, Seq: e.hit, Timestamp: w.Clock.wall.Add(origin + now), Method: tgt.Method, URL: tgt.URL, BytesOut: uint64(len(tgt.Body))}
			e.kind = arrive
			// The target counts the request somewhere on its way.
			push(now+time.Duration(w.Rand.Float64()*float64(e.lat)), e)
			if r.tl.Sent(e.unit, e.hit) {
				wake(e.plan, now)
			}
			next(e.plan, e.unit, e.hit+1, now)
		case arrive:
			res := e.result
			rec, hold := w.Serve(e.req, u.Source)
			back := e.sent + e.lat + hold
			switch {
			case back-e.sent > r.timeout:
				back = e.sent + r.timeout
				res.Error = urlOp(res.Method) + " \"" + res.URL + "\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
			case rec == nil:
				res.Error = urlOp(res.Method) + " \"" + res.URL + "\": read: connection reset by peer"
			default:
				body := rec.Body.Bytes()
				res.Code, res.Headers, res.BytesIn = uint16(rec.Code), rec.Result().Header, uint64(len(body))
				res.Body = bytes.Clone(body[:min(len(body), r.maxBody)])
			}
			res.Latency = back - e.sent
			e.kind = answer
			push(back, e)
		case answer:
			res := archive.Result{Result: e.result, Labels: u.Labels}
			if !r.tl.Streams()[e.unit].Held && r.tl.Holds() {
				r.kept = append(r.kept, res)
			}
			if r.sink(res) != nil {
				r.stopped = true
			}
			if r.tl.Answered(e.unit, now) {
				wake(e.plan, now)
			}
			if r.tl.Deciding() && !r.deciding {
				r.deciding = true
				push(now+w.Host.Decide, event{kind: decide, plan: e.plan})
			}
		case decide:
			if r.stopped {
				continue
			}
			r.pl.FollowUp.Decide(r.tl, now, r.kept)
			r.kept = nil
			wake(e.plan, now)
		}
	}
	return nil
}

// urlOp is how net/http's client names a method in its errors: "Get",
// "Post".
func urlOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}
