package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/fleet"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// programsRun is a fleet of the user's client programs (fleet
// --client-cmd): the harness in front of the reference target (the
// engine's embedded target), the programs as a Job, and what the server
// saw for the verdict.
type programsRun struct {
	job     *fleet.Programs
	harness *refserver.Clients
	results chan *vegeta.Result
	stall   *stallMeter
	mu      sync.Mutex
	session map[int]bool // clients that sent Mcp-Session-Id
	origin  map[int]bool // clients that sent Origin
	release time.Time    // the wall time of the harness clock's origin
	base    string       // the harness's URL
}

// newProgramsRun sets the harness up for o and returns the run and the
// embedded target that serves it: the reference target with the
// address's budget spent, an unlimited one for the scripted answers that
// pass, and the harness before them.
func newProgramsRun(o fleetOptions, window time.Duration) (*programsRun, func() (*refserver.Listener, error)) {
	p := &programsRun{results: make(chan *vegeta.Result, 4096), session: map[int]bool{}, origin: map[int]bool{}}
	start := func() (*refserver.Listener, error) {
		cfg := refserver.DefaultConfig()
		cfg.Window = window
		limited, err := refserver.New(cfg)
		if err != nil {
			return nil, err
		}
		open := refserver.DefaultConfig()
		open.RESTLimit, open.MCPLimit = 1<<30, 1<<30
		openSrv, err := refserver.New(open)
		if err != nil {
			return nil, err
		}
		// Every program runs on this machine: its requests come from
		// loopback and share one address's budget, as behind one NAT.
		const addr = "127.0.0.1"
		limited.Spend(o.surface, addr, method.Limit(o.surface))
		p.release = time.Now()
		origin := p.release
		clock := func() time.Duration { return time.Since(origin) }
		p.harness = refserver.NewClients(refserver.ClientsConfig{N: o.clients, Surface: o.surface, Barrier: o.barrier,
			Limited: limited, Open: openSrv, Clock: clock,
			Counted: func() { limited.Spend(o.surface, addr, 1) },
			Record:  p.record})
		ln, err := refserver.ListenHandler(p.harness, "127.0.0.1:0", 0)
		if err != nil {
			return nil, err
		}
		p.base = ln.URL
		p.stall = newStallMeter()
		return ln, nil
	}
	return p, start
}

// record turns what the harness saw of a request into a Vegeta result,
// labelled as a fleet client's attempt (the delay it drew unknown), and
// hands it to the job.
func (p *programsRun) record(a refserver.Arrival) {
	p.mu.Lock()
	if a.SessionID {
		p.session[a.Client] = true
	}
	if a.Origin {
		p.origin[a.Client] = true
	}
	p.mu.Unlock()
	surface := archive.SurfaceOf(a.Path)
	label := archive.FleetLabel(surface, "127.0.0.1", method.StreamFleet,
		archive.FleetTag{Client: a.Client, Request: a.Request, Attempt: a.Attempt, Delay: -1}) + " answer=" + a.Answer + " fp=" + a.Fingerprint
	p.results <- &vegeta.Result{Attack: label, Code: uint16(a.Status), Timestamp: p.release.Add(a.At), Latency: a.Done - a.At,
		Method: a.Method, URL: p.base + a.Path}
}

// notes says what the server saw that the checks do not judge.
// programNotes says how a fleet of client programs went, from its
// run.json: the barrier, and the programs that failed or were killed
// (barrier and timeout: the flags' values, zero when unknown).
func programNotes(info *archive.FleetInfo, barrier, timeout time.Duration) []string {
	var out []string
	if b := info.Barrier; b != nil {
		n := fmt.Sprintf("the barrier held the first requests %v until %d of %d clients had arrived", time.Duration(b.WaitedMS*1e6).Round(time.Millisecond), b.Arrived, info.Clients)
		if b.TimedOut {
			n += " (it gave up waiting" + map[bool]string{true: fmt.Sprintf(" after --barrier %v", barrier)}[barrier > 0] + ")"
		}
		out = append(out, n)
	}
	var exits, timeouts []string
	for _, po := range info.Programs {
		switch {
		case po.TimedOut:
			timeouts = append(timeouts, fmt.Sprint(po.Client))
		case po.ExitCode != 0:
			exits = append(exits, fmt.Sprintf("%d (exit %d%s)", po.Client, po.ExitCode, map[bool]string{true: ": " + po.Error}[po.Error != ""]))
		}
	}
	if len(exits) > 0 {
		out = append(out, fmt.Sprintf("%d clients exited non-zero: %s (their output is in clients/ of the run folder)", len(exits), strings.Join(first(exits, 10), ", ")))
	}
	if len(timeouts) > 0 {
		out = append(out, fmt.Sprintf("%d clients ran past --client-timeout%s and were killed: %s", len(timeouts), map[bool]string{true: fmt.Sprintf(" %v", timeout)}[timeout > 0], strings.Join(first(timeouts, 10), ", ")))
	}
	return out
}

// notes says what the harness saw of the clients' headers.
func (p *programsRun) notes() []string {
	var out []string
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.session); n > 0 {
		out = append(out, fmt.Sprintf("%d clients sent Mcp-Session-Id: revision 2026-07-28 has no sessions (ignored, never rejected)", n))
	}
	if n := len(p.origin); n > 0 {
		out = append(out, fmt.Sprintf("%d clients sent Origin: a non-browser client sends none (a foreign one gets 403)", n))
	}
	return out
}

func first(xs []string, n int) []string {
	if len(xs) > n {
		return append(xs[:n:n], "…")
	}
	return xs
}

// runPrograms runs a fleet of client programs and judges it from the
// server's records alone.
func runPrograms(ctx context.Context, o fleetOptions, stdout, stderr io.Writer) int {
	window := o.runFlags.window(o.window, time.Minute, 30*time.Second)
	requests := o.requests
	p, start := newProgramsRun(o, window)
	job := &fleet.Programs{Command: o.clientCmd, Clients: o.clients, Surface: o.surface, Requests: requests,
		Timeout: o.clientTimeout, Planned: o.barrier, Results: p.results, Window: window,
		Fleet: archive.FleetInfo{Surface: o.surface, Source: "127.0.0.1", Clients: o.clients, Requests: requests,
			Strategy: "client-cmd", Attempts: o.attempts, EpsilonMS: float64(o.epsilon) / 1e6, Command: o.clientCmd}}
	job.OnFinish = func(info *archive.RunInfo) {
		b := p.harness.Barrier()
		info.Fleet.Barrier = &archive.BarrierInfo{Arrived: b.Arrived, WaitedMS: float64(b.Waited) / 1e6, TimedOut: b.TimedOut}
		var opened time.Time // the barrier's opening, on the wall clock
		if b.Opened {
			opened = p.release.Add(b.OpenedAt)
		}
		info.Fleet.StallMS = float64(p.stall.stop(opened)) / 1e6
	}
	eng, err := o.runFlags.engine("fleet", stderr, start)
	if err != nil {
		return usageErr(stderr, "fleet", "%v", err)
	}
	eng.Folder, eng.Seed = "fleet-clients", o.seed
	eng.Announce = fmt.Sprintf("%d copies of %q on %s, %d requests each; the first requests wait for all of them (at most --barrier %v)",
		o.clients, o.clientCmd, o.surface, requests, o.barrier)
	run, err := eng.Execute(ctx, job)
	if err != nil {
		return failed(stderr, "fleet", err)
	}
	in := decode.NewInput() // no client sent anything: judged as such
	if run.Results > 0 {
		if in, err = analyze.Read([]string{run.Dir}); err != nil {
			fmt.Fprintf(stderr, "ratecheck fleet: reading %s: %v\n", run.Dir, err)
			return exitUsage
		}
	}
	cfg, _ := fleetConfig(run.Info)
	rep := jitter.Judge(in, cfg)
	rep.Notes = append(rep.Notes, programNotes(run.Info.Fleet, o.barrier, o.clientTimeout)...)
	rep.Notes = append(rep.Notes, p.notes()...)
	return printFleet(o, rep, "client-cmd", run.Dir, stdout, stderr)
}

// stallMeter measures how late this process runs a 5 ms ticker: the
// longest the in-process target could not have answered. Stalls are kept
// with the time they ended, so that only those that could move the
// clients' retries (after the barrier opened) are judged: one while the
// programs start up only delays arrivals the barrier holds anyway.
type stallMeter struct {
	done chan struct{}
	seen chan stalls
}

// stalls are the ticks that came late: the newest maxStalls of those over
// a millisecond with the time each came (a ring: a long start-up cannot
// crowd out the stalls after the barrier opened), and the latest of the
// others.
type stalls struct {
	at     []time.Time
	late   []time.Duration
	next   int // where the ring writes next, once full
	jitter time.Duration
}

// add records a tick late by late, at at.
func (s *stalls) add(at time.Time, late time.Duration) {
	const noise = time.Millisecond
	switch {
	case late <= noise:
		s.jitter = max(s.jitter, late)
	case len(s.at) < maxStalls:
		s.at, s.late = append(s.at, at), append(s.late, late)
	default:
		s.at[s.next], s.late[s.next] = at, late
		s.next = (s.next + 1) % maxStalls
	}
}

// maxStalls bounds what a stall meter keeps.
const maxStalls = 4096

func newStallMeter() *stallMeter {
	m := &stallMeter{done: make(chan struct{}), seen: make(chan stalls, 1)}
	go func() {
		const tick = 5 * time.Millisecond
		t := time.NewTicker(tick)
		defer t.Stop()
		last := time.Now()
		var seen stalls
		for {
			select {
			case <-m.done:
				m.seen <- seen
				return
			case <-t.C:
				now := time.Now() // when this goroutine ran, not when the tick was due
				seen.add(now, now.Sub(last)-tick)
				last = now
			}
		}
	}()
	return m
}

// stop ends the measurement and returns the longest stall that ended
// after from (zero: any).
func (m *stallMeter) stop(from time.Time) time.Duration {
	if m == nil {
		return 0
	}
	close(m.done)
	seen := <-m.seen
	return seen.worst(from)
}

// worst returns the longest stall that ended after from (zero: any).
func (s *stalls) worst(from time.Time) time.Duration {
	worst := s.jitter
	for i, at := range s.at {
		if !at.Before(from) {
			worst = max(worst, s.late[i])
		}
	}
	return worst
}
