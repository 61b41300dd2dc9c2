package simrun

import (
	"context"
	"fmt"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
)

// URL is the base URL a simulated target answers at when the command
// names none (the embedded target's place): a loopback address, so that
// verify takes its default loopback sources.
const URL = "http://127.0.0.1:8080"

// Executor returns a function that runs a job as attack.Execute does, but
// in w on its virtual clock (see Execute).
func Executor(w *World) func(ctx context.Context, job attack.Job, opts attack.Options) (*attack.Run, error) {
	return func(ctx context.Context, job attack.Job, opts attack.Options) (*attack.Run, error) {
		runs, errs := Execute(ctx, w, []attack.Job{job}, []attack.Options{opts})
		return runs[0], errs[0]
	}
}

// Execute runs jobs side by side, each with its options, as attack.Execute
// runs one, but in w on its virtual clock: each waits out (on that clock)
// an earlier run's requests as its Fresh asks and settles its MCP
// revision against w's target from the plan's own negotiation address;
// then all start at one instant (shards at their agreed start) and run
// (RunAll), each stops adding load when its failure guard trips
// (Options.Guard), and each is archived into a new run folder under its
// Out with the run.json Execute writes (Options.RunInfo, the plan's
// Started and Finish), each result as Execute keeps it
// (Options.Archived). Only plans are simulated; the clock ends where the
// last answer came. It returns each job's run and error, as Execute does.
func Execute(ctx context.Context, w *World, jobs []attack.Job, opts []attack.Options) ([]*attack.Run, []error) {
	runs, errs := make([]*attack.Run, len(jobs)), make([]error, len(jobs))
	plans := make([]attack.Plan, len(jobs))
	sentBefore := make([]time.Time, len(jobs))
	emit := func(k int, ev attack.Event) {
		if opts[k].Events != nil {
			opts[k].Events(ev)
		}
	}
	for k, job := range jobs {
		pl, ok := job.(attack.Plan)
		if !ok {
			errs[k] = fmt.Errorf("simrun: only plans are simulated, not %T", job)
			return runs, errs
		}
		plans[k] = pl
		run := &attack.Run{Target: opts[k].Target, Embedded: opts[k].Target == "", Counts: &attack.Counts{}}
		if run.Embedded {
			run.Target = URL
		}
		runs[k] = run
		emit(k, attack.SourcesUsable{})
		wait, ev := opts[k].Fresher(job, run.Target, w.Clock.Now())
		if ev != nil {
			emit(k, ev)
			if nf, ok := ev.(attack.NotFresh); ok {
				sentBefore[k] = nf.End
			}
			w.Clock.Advance(wait)
		}
		if pl.MCP != nil {
			pl.MCP.HTTP = w.Client
			settle := pl.MCP.Settle
			pl.MCP.Settle = 0
			n, err := pl.Negotiate(ctx, run.Target)
			if err != nil {
				runs[k], errs[k] = nil, &attack.SetupError{Err: err}
				return runs, errs
			}
			if n != nil {
				if settle > 0 && n.Requests > 0 {
					n.Settled = settle
					w.Clock.Advance(settle)
				}
				emit(k, attack.Negotiated{Negotiation: *n})
			}
			w.Clock.Advance(5 * time.Millisecond) // the handshake's answer, then the run
		}
	}
	start := w.Clock.Now()
	type archived struct {
		w             *archive.Writer
		info          archive.RunInfo
		guard         *attack.FailureGuard
		werr, failing error
	}
	as := make([]*archived, len(jobs))
	sinks := make([]func(archive.Result) error, len(jobs))
	for k, job := range jobs {
		aw, err := archive.Create(opts[k].Out, opts[k].Folder, start)
		if err != nil {
			runs[k], errs[k] = nil, &attack.SetupError{Err: err}
			return runs, errs
		}
		a := &archived{w: aw, info: opts[k].RunInfo(job, runs[k].Target, runs[k].Embedded, start, sentBefore[k]), guard: opts[k].Guard(job)}
		runs[k].Dir = aw.Dir
		if err := aw.Start(a.info); err != nil {
			aw.Close(a.info)
			runs[k], errs[k] = nil, &attack.SetupError{Err: err}
			return runs, errs
		}
		plans[k].Started(a.info)
		as[k] = a
		run, o := runs[k], opts[k]
		sinks[k] = func(r archive.Result) error {
			run.Counts.Add(r.Result)
			if a.werr == nil {
				a.werr = a.w.Add(o.Archived(r))
			}
			if o.Sink != nil {
				o.Sink(r)
			}
			if err := a.guard.Add(r); err != nil && a.failing == nil {
				a.failing = err
			}
			if a.werr != nil {
				return a.werr
			}
			return a.failing
		}
	}
	if err := RunAll(plans, w, runs[0].Target, sinks); err != nil {
		for k := range errs {
			errs[k] = err
		}
		return runs, errs
	}
	for k, a := range as {
		var final error // every result failed
		if a.failing == nil && a.werr == nil {
			final = a.guard.Final()
		}
		if a.failing != nil {
			a.info.Aborted = a.failing.Error()
		}
		plans[k].Finish(&a.info)
		a.info.End = w.Clock.Now().UTC()
		if err := a.w.Close(a.info); err != nil && a.werr == nil {
			a.werr = err
		}
		run := runs[k]
		run.Results, run.Took, run.Info = a.w.Len(), a.info.End.Sub(start), a.info
		run.Info.Results = run.Results
		for _, err := range []error{a.werr, a.failing, final} {
			if err != nil {
				errs[k] = &attack.RunError{Run: run, Err: err}
				break
			}
		}
	}
	return runs, errs
}
