package simrun

import (
	"context"
	"fmt"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
)

// URL is the base URL a simulated target answers at when the command
// names none (the embedded target's place): a loopback address, so that
// verify takes its default loopback sources.
const URL = "http://127.0.0.1:8080"

// Executor returns a function that runs a job as attack.Execute does, but
// in w on its virtual clock: it waits out (on that clock) an earlier
// run's requests as opts.Fresh asks, lets a plan settle its MCP revision
// against w's target from the plan's own negotiation address, runs it
// (Run), stops adding load when the run's failure guard trips
// (opts.Guard), and archives it into a new run folder under opts.Out with
// the run.json Execute writes (opts.RunInfo, the plan's Started and
// Finish), each result as Execute keeps it (opts.Archived). Only plans
// are simulated; the clock ends where the run's last answer came.
func Executor(w *World) func(ctx context.Context, job attack.Job, opts attack.Options) (*attack.Run, error) {
	return func(ctx context.Context, job attack.Job, opts attack.Options) (*attack.Run, error) {
		pl, ok := job.(attack.Plan)
		if !ok {
			return nil, fmt.Errorf("simrun: only plans are simulated, not %T", job)
		}
		emit := func(ev attack.Event) {
			if opts.Events != nil {
				opts.Events(ev)
			}
		}
		run := &attack.Run{Target: opts.Target, Embedded: opts.Target == "", Counts: &attack.Counts{}}
		if run.Embedded {
			run.Target = URL
		}
		emit(attack.SourcesUsable{})
		var sentBefore time.Time
		wait, ev := opts.Fresher(job, run.Target, w.Clock.Now())
		if ev != nil {
			emit(ev)
			if nf, ok := ev.(attack.NotFresh); ok {
				sentBefore = nf.End
			}
			w.Clock.Advance(wait)
		}
		if pl.MCP != nil {
			pl.MCP.HTTP = w.Client
			settle := pl.MCP.Settle
			pl.MCP.Settle = 0
			n, err := pl.Negotiate(ctx, run.Target)
			if err != nil {
				return nil, &attack.SetupError{Err: err}
			}
			if n != nil {
				if settle > 0 && n.Requests > 0 {
					n.Settled = settle
					w.Clock.Advance(settle)
				}
				emit(attack.Negotiated{Negotiation: *n})
			}
			w.Clock.Advance(5 * time.Millisecond) // the handshake's answer, then the run
		}
		start := w.Clock.Now()
		aw, err := archive.Create(opts.Out, opts.Folder, start)
		if err != nil {
			return nil, &attack.SetupError{Err: err}
		}
		run.Dir = aw.Dir
		info := opts.RunInfo(job, run.Target, run.Embedded, start, sentBefore)
		if err := aw.Start(info); err != nil {
			aw.Close(info)
			return nil, &attack.SetupError{Err: err}
		}
		pl.Started(info)
		guard := opts.Guard(job)
		var werr, failing error
		err = Run(pl, w, run.Target, func(r *vegeta.Result) error {
			run.Counts.Add(r)
			if werr == nil {
				werr = aw.Add(opts.Archived(r))
			}
			if opts.Sink != nil {
				opts.Sink(r)
			}
			if err := guard.Add(r); err != nil && failing == nil {
				failing = err
			}
			if werr != nil {
				return werr
			}
			return failing
		})
		if err != nil {
			return nil, err
		}
		var final error // every result failed
		if failing == nil && werr == nil {
			final = guard.Final()
		}
		if failing != nil {
			info.Aborted = failing.Error()
		}
		pl.Finish(&info)
		info.End = w.Clock.Now().UTC()
		if err := aw.Close(info); err != nil && werr == nil {
			werr = err
		}
		run.Results, run.Took, run.Info = aw.Len(), info.End.Sub(start), info
		run.Info.Results = run.Results
		for _, err := range []error{werr, failing, final} {
			if err != nil {
				return run, &attack.RunError{Run: run, Err: err}
			}
		}
		return run, nil
	}
}
