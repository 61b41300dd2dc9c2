package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/fleet"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// programNotes says how a fleet of client programs went, from its
// run.json: the barrier, and the programs that failed or were killed
// (barrier and timeout: the flags' values, zero when unknown).
func programNotes(info *archive.FleetInfo, barrier, timeout time.Duration) []string {
	var out []string
	if b := info.Barrier; b != nil {
		n := fmt.Sprintf("the barrier held the first requests %v until %d of %d clients had arrived", b.WaitedMS.Duration().Round(time.Millisecond), b.Arrived, info.Clients)
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

// headerNotes says what the harness saw of the clients' headers.
func headerNotes(h *fleet.Harness) []string {
	var out []string
	session, origin := h.Headers()
	if session > 0 {
		out = append(out, fmt.Sprintf("%d clients sent Mcp-Session-Id: revision 2026-07-28 has no sessions (ignored, never rejected)", session))
	}
	if origin > 0 {
		out = append(out, fmt.Sprintf("%d clients sent Origin: a non-browser client sends none (a foreign one gets 403)", origin))
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
	window := o.runFlags.window(o.window, method.Window, 30*time.Second)
	requests := o.requests
	h := fleet.NewHarness(fleet.HarnessConfig{Surface: o.surface, Clients: o.clients, Requests: requests, Barrier: o.barrier, Window: window})
	job := &fleet.Programs{Command: o.clientCmd, Clients: o.clients, Surface: o.surface, Requests: requests,
		Timeout: o.clientTimeout, Planned: o.barrier, Results: h.Results(), Window: window, OnFinish: h.Finish,
		Fleet: archive.FleetInfo{Surface: o.surface, Source: "127.0.0.1", Clients: o.clients, Requests: requests,
			Strategy: "client-cmd", Attempts: o.attempts, EpsilonMS: clock.Ms(o.epsilon), Command: o.clientCmd}}
	opts, err := o.runFlags.options("fleet", stderr, h.Start)
	if err != nil {
		return usageErr(stderr, "fleet", "%v", err)
	}
	opts.Folder, opts.Seed = "fleet-clients", o.seed
	opts.Events = engineEvents(stderr, "fleet", fmt.Sprintf("%d copies of %q on %s, %d requests each; the first requests wait for all of them (at most --barrier %v)",
		o.clients, o.clientCmd, o.surface, requests, o.barrier))
	run, err := attack.Execute(ctx, job, opts)
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
	rep.Notes = append(rep.Notes, headerNotes(h)...)
	return printFleet(o, rep, "client-cmd", run.Info, run.Dir, stdout, stderr)
}

// checkPrograms checks the flags of fleet --client-cmd: those of a fleet
// of its own clients do not go with it.
func (o *fleetOptions) checkPrograms(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range []string{"target", "strategy", "base", "cap", "slow-down", "limit", "source", "rows", "faults", "timeout", "mcp-revision",
		"cacert", "insecure", "cert", "key", "http2", "h2c", "connections", "max-connections", "max-workers"} {
		if set[name] {
			return fmt.Errorf("--%s does not go with --client-cmd: the program decides how it retries, and the embedded target is its server", name)
		}
	}
	if o.barrier <= 0 || o.clientTimeout <= 0 {
		return errors.New("--barrier and --client-timeout must be positive")
	}
	if err := o.check(); err != nil {
		return err
	}
	if !set["requests"] {
		o.requests = 5 // one of each answer of the script, and a shared 429 first
	}
	return nil
}
