package attack

import (
	"context"
	"fmt"
	"os"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Job is what the engine runs: a Plan of paced streams, or a Fleet of
// retrying clients.
type Job interface {
	// Run sends the job's requests to target and hands every result to
	// sink, one at a time, with the labels it was sent with (its Attack
	// is their string). When ctx ends it stops sending, hands over what
	// is in flight and returns.
	Run(ctx context.Context, target string, sink func(archive.Result) error) error
	// Duration is how long the job is planned to run (for a fleet, the
	// longest it can run).
	Duration() time.Duration
	// Info describes the job for run.json; the engine adds what it knows
	// (command, target, times, host, version, seed, how it ended).
	Info() archive.RunInfo
}

// Negotiator is a job that speaks MCP: Execute lets it settle the
// revision against the target before the run, from an address of its
// choosing (the contract probes', never the limit address), and reports
// how in a [Negotiated] event. A nil Negotiation says nothing was
// negotiated.
type Negotiator interface {
	Negotiate(ctx context.Context, target string) (*Negotiation, error)
}

// Preparer is a job that needs the run folder before it runs (to write
// files of its own there).
type Preparer interface {
	Prepare(dir string) error
}

// Starter is a job that wants run.json as the run starts (to judge its
// results mid-run as its folder will be judged).
type Starter interface {
	Started(info archive.RunInfo)
}

// Finisher is a job that adds to run.json once it ran.
type Finisher interface {
	Finish(info *archive.RunInfo)
}

// FaultScripter is a job whose target answers some requests with faults
// on purpose (a fleet harness scripts 503s and resets to see whether the
// clients retry them; a limit refuses with 503): the failure guard does
// not take those for a failing target.
type FaultScripter interface {
	// ScriptedFault reports whether r is a fault the job's target
	// scripted.
	ScriptedFault(r archive.Result) bool
}

// DescriptorUser is a job that knows how many file descriptors its run
// holds open at once (embedded: the target is in this process too), so
// that Execute refuses a run that cannot fit (see DescriptorError).
type DescriptorUser interface {
	Descriptors(embedded bool) int
}

// Options configure one run of [Execute]. Build the value once; every
// field's zero value is documented and usable but Out (the current
// directory) and, for a run against a target of one's own, Target.
type Options struct {
	// Command names the command in run.json ("": none).
	Command string
	// Target is the target's base URL; when empty, Embedded starts one.
	Target string
	// Embedded starts the reference target in-process and returns its
	// base URL and a function that stops it (needed when Target is empty).
	Embedded func() (url string, stop func() error, err error)
	// Out is the directory the run folder is made in; Folder names it
	// (<UTC time>-<Folder>).
	Out, Folder string
	// AbortShare stops the run once more than this share of the last 100
	// results were transport errors or 5xx (0: never). See FailureGuard.
	AbortShare float64
	// StartAt, when set, is the instant the shards of an attack agreed to
	// start at: Execute waits for it, and keeps trying an unreachable
	// target until then (zero: start at once).
	StartAt time.Time
	// Seed and Version are recorded in run.json, and so is Label, the
	// release or build under test ("": none).
	Seed    uint64
	Version string
	Label   string
	// Contract is the limits contract the run is made against, recorded
	// in run.json (nil: the documented API's, recorded as none).
	Contract *archive.ContractInfo
	// Interactive says a person is watching: Execute then pauses
	// RemoteWait before load goes to a target off loopback (a
	// [RemoteTarget] event), and reports [Progress] (false: neither).
	Interactive bool
	// ReachTimeout bounds the reachability check (0: 25 s: a loaded host
	// can stall even a loopback answer for seconds); RemoteWait is how long
	// a person has to cancel load for a remote target (0: 5 s).
	ReachTimeout, RemoteWait time.Duration
	// Sink, when set, also sees every result, with its labels, after it
	// was archived (with its body, whether or not the archive keeps it).
	Sink func(archive.Result)
	// KeepBodies archives the first bytes of every answer's body (the
	// job's cap, 1 KiB by default). By default only the bodies a check
	// reads are archived (see NeedsBody): a token a target returns in
	// every 200 is then never stored.
	KeepBodies bool
	// Network is how the reachability check reaches the target (nil:
	// HTTP/1.1, the system's roots); give it the job's.
	Network *client.Network
	// Sources, when set, is the pool (--sources) the job's source
	// addresses were taken from: an address that is not usable is named
	// with the pool's item that holds it and the prefix to route here,
	// and before anything is sent one address of each item the job uses
	// is connected to the target (a TCP handshake, no request), so that an
	// item the network does not route back to this machine is refused
	// with its name rather than met as a target that does not answer.
	Sources client.Pool
	// ReachFrom is the source address the reachability check sends its
	// HEAD / from ("": the system's choice). Verify gives its contract
	// address, so that the check spends nothing of the limit address's
	// budget at a target whose limiter counts every path.
	ReachFrom string
	// Events, when set, receives what happens during the run (see
	// [Event]); nil drops it.
	Events func(Event)
	// Fresh, when set, is how long the job's sources must not have sent to
	// the target before the run (verify: a window): Execute looks for
	// earlier runs in Out that did, and waits until Fresh has passed since
	// the latest ended ([WaitingForFresh]), or with NoWait only says so
	// ([NotFresh]) and starts at once.
	Fresh  time.Duration
	NoWait bool
}

// Run is what Execute archived.
type Run struct {
	// Dir is the run folder; Target the base URL attacked.
	Dir, Target string
	// Embedded says the target was the embedded reference target.
	Embedded bool
	// Results is how many results were archived; Took how long the run
	// took.
	Results int
	Took    time.Duration
	// Counts tally the results by outcome.
	Counts *Counts
	// Info is what run.json says.
	Info archive.RunInfo
}

// Execute runs job against a target into a new run folder, as opts say:
// it starts the embedded reference target when no target is given,
// checks that the target answers (and, before an agreed start, waits for
// it), pauses before load goes off loopback when a person is watching,
// raises the soft limit on open file descriptors to the hard one and
// refuses a job that would not fit (a [DescriptorUser]), lets a
// [Negotiator] settle the MCP revision, waits for the agreed start,
// archives every result as it comes, stops adding load to a failing
// target, notes a wall-clock step, and writes run.json at the start and
// again at the end. attack, verify and fleet all run through it. It
// prints nothing: what happens goes to opts.Events.
//
// It returns the run and nil; or the run and a *RunError when the run
// ended early (interrupted, a failing target, a write error) with what it
// received archived; or nil and ErrCancelled, a *SetupError (a *TLSError
// in it when the TLS handshake failed) or an *UnreachableError when
// nothing was sent.
func Execute(ctx context.Context, job Job, opts Options) (*Run, error) {
	e := &engine{Options: opts}
	run := &Run{Target: e.Target, Embedded: e.Target == "", Counts: &Counts{}}
	stop, err := e.prepare(ctx, job, run)
	if stop != nil {
		defer stop()
	}
	if err != nil {
		return nil, err
	}
	start := time.Now()
	w, err := archive.Create(e.Out, e.Folder, start)
	if err != nil {
		return nil, &SetupError{err}
	}
	run.Dir = w.Dir
	if p, ok := job.(Preparer); ok {
		if err := p.Prepare(w.Dir); err != nil {
			w.Close(e.info(job, run, start))
			return nil, &SetupError{err}
		}
	}
	info := e.info(job, run, start)
	if err := w.Start(info); err != nil {
		w.Close(info)
		return nil, &SetupError{err}
	}
	if s, ok := job.(Starter); ok {
		s.Started(info)
	}
	stopProgress := e.progress(start, job.Duration(), run.Counts)
	guard := e.Options.Guard(job)
	failing, runErr := e.send(ctx, job, run, w, guard)
	stopProgress()
	var final error // every result failed
	if failing == nil && runErr == nil && ctx.Err() == nil {
		final = guard.Final()
	}
	if f, ok := job.(Finisher); ok {
		f.Finish(&info)
	}
	e.finish(ctx, &info, start, failing)
	if err := w.Close(info); err != nil && runErr == nil {
		runErr = err
	}
	run.Results, run.Took, run.Info = w.Len(), time.Since(start), info
	run.Info.Results = run.Results
	if info.Interrupted && runErr == nil {
		runErr = ErrInterrupted
	}
	for _, err := range []error{runErr, failing, final} {
		if err != nil {
			return run, &RunError{Run: run, Err: err}
		}
	}
	return run, nil
}

// engine is one run of Execute.
type engine struct {
	Options
	// sentBefore is when an earlier run last sent from the job's sources
	// within Fresh of this one's start (zero: none known).
	sentBefore time.Time
}

// connectTimeout bounds each connection of the sources' check.
func (e *engine) connectTimeout() time.Duration {
	if e.ReachTimeout > 0 {
		return min(e.ReachTimeout, 5*time.Second)
	}
	return 5 * time.Second
}

// emit hands ev to the caller's Events.
func (e *engine) emit(ev Event) {
	if e.Events != nil {
		e.Events(ev)
	}
}

// prepare does what comes before the run folder: it checks the job's
// sources and descriptors, starts the embedded target (returning its
// stop), warns before a remote one, connects from the pool's items,
// reaches the target, lets the job
// negotiate and waits for the agreed start. run.Target is the target
// reached.
func (e *engine) prepare(ctx context.Context, job Job, run *Run) (stop func() error, err error) {
	sources := job.Info().Sources
	if err := checkSources(sources, e.Sources); err != nil {
		return nil, &SetupError{err}
	}
	if err := checkFamilies(e.Target, sources, e.Sources); err != nil {
		return nil, &SetupError{err}
	}
	e.emit(SourcesUsable{})
	if err := checkDescriptors(job, run.Embedded); err != nil {
		return nil, &SetupError{err}
	}
	if run.Embedded {
		url, stopTarget, err := e.Embedded()
		if err != nil {
			return nil, &SetupError{fmt.Errorf("starting the embedded target: %w", err)}
		}
		stop, run.Target = stopTarget, url
		e.emit(EmbeddedStarted{URL: url})
	}
	if err := e.warnRemote(ctx, run.Target, job.Duration()); err != nil {
		return stop, ErrCancelled
	}
	if err := checkConnect(ctx, run.Target, sources, e.Sources, e.connectTimeout()); err != nil {
		if ctx.Err() != nil {
			return stop, ErrCancelled
		}
		return stop, &SetupError{err}
	}
	if err := e.reachableBy(ctx, run.Target); err != nil {
		if ctx.Err() != nil {
			return stop, ErrCancelled
		}
		if t, ok := err.(*TLSError); ok {
			return stop, &SetupError{t}
		}
		return stop, &UnreachableError{Target: run.Target, Err: err}
	}
	if err := e.waitFresh(ctx, job, run.Target); err != nil {
		return stop, ErrCancelled
	}
	if n, ok := job.(Negotiator); ok {
		got, err := n.Negotiate(ctx, run.Target)
		if ctx.Err() != nil {
			return stop, ErrCancelled
		}
		if err != nil {
			return stop, &SetupError{err}
		}
		if got != nil {
			e.emit(Negotiated{Negotiation: *got})
		}
	}
	if err := e.waitForStart(ctx); err != nil {
		return stop, ErrCancelled
	}
	return stop, nil
}

// send runs job, archiving every result into w as it comes and counting
// it into run.Counts and guard. A failing target (failing: the guard's
// *FailingError or *LocalLimitError) stops the job but not the archive:
// what is in flight is still recorded. runErr is the job's error.
func (e *engine) send(ctx context.Context, job Job, run *Run, w *archive.Writer, guard *FailureGuard) (failing, runErr error) {
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	lastFlush := time.Now()
	runErr = job.Run(runCtx, run.Target, func(r archive.Result) error {
		run.Counts.Add(r.Result)
		if err := w.Add(e.archived(r)); err != nil {
			return err
		}
		if e.Sink != nil {
			e.Sink(r)
		}
		if err := guard.Add(r); err != nil && failing == nil {
			failing = err
			stopRun()
		}
		if time.Since(lastFlush) > 100*time.Millisecond {
			lastFlush = time.Now()
			return w.Flush()
		}
		return nil
	})
	return failing, runErr
}

// archived is r as the archive keeps it (see Options.Archived).
func (e *engine) archived(r archive.Result) *vegeta.Result { return e.Options.Archived(r) }

// Archived is the Vegeta result of r as the archive keeps it: without its
// body unless a check needs it (needsBody, by r's labels) or the caller
// keeps every body. Execute archives each result so; a simulation of a
// run archives the same.
func (o Options) Archived(r archive.Result) *vegeta.Result {
	if o.KeepBodies || len(r.Body) == 0 || needsBody(r) {
		return r.Result
	}
	c := *r.Result
	c.Body = nil
	return &c
}

// needsBody reports whether a check reads the body of r: a refusal's (its
// shape), any other answer outside 2xx's (what the target said instead),
// and every answer of a failure-table probe (method.IsContractStream: a
// 200 may be the wrong answer to a row). The 2xx bodies of other streams
// are read by no check.
func needsBody(r archive.Result) bool {
	return r.Code < 200 || r.Code > 299 || method.IsContractStream(r.Labels.Stream)
}

// finish completes run.json: the end, the load average then, whether the
// run was interrupted or aborted, and a wall-clock step during it.
func (e *engine) finish(ctx context.Context, info *archive.RunInfo, start time.Time, failing error) {
	info.End = time.Now().UTC()
	if info.Machine != nil {
		info.Machine.LoadEnd = archive.LoadAverage()
	}
	info.Interrupted = ctx.Err() != nil
	if step, stepped := archive.ClockStep(time.Now().Round(0).Sub(start.Round(0)), time.Since(start)); stepped {
		info.ClockStepMS = clock.WholeMs(step)
		e.emit(ClockStepped{Step: step})
	}
	if failing != nil {
		info.Aborted = failing.Error()
	}
}

// info is run.json of the job's run as it starts.
func (e *engine) info(job Job, run *Run, start time.Time) archive.RunInfo {
	return e.Options.RunInfo(job, run.Target, run.Embedded, start, e.sentBefore)
}

// Guard is the failure guard of a run of job: tripped past AbortShare,
// blind to the faults a FaultScripter's target scripts.
func (o Options) Guard(job Job) *FailureGuard {
	g := &FailureGuard{Max: o.AbortShare}
	if fs, ok := job.(FaultScripter); ok {
		g.Scripted = fs.ScriptedFault
	}
	return g
}

// RunInfo is run.json of a run of job as it starts at start against
// target (embedded: the embedded reference target), after an earlier run
// that sent from its sources until sentBefore (zero: none known): the
// job's own description (Job.Info) with what the options and this machine
// add. Execute writes it; a simulation of a run writes the same.
func (o Options) RunInfo(job Job, target string, embedded bool, start, sentBefore time.Time) archive.RunInfo {
	info := job.Info()
	info.Command, info.Target, info.Embedded = o.Command, target, embedded
	info.Start, info.Seed, info.Version, info.Label, info.Contract = start.UTC(), o.Seed, o.Version, o.Label, o.Contract
	info.Machine = archive.ThisMachine()
	if o.Sources.Items() > 0 {
		info.SourcePool = o.Sources.String()
	}
	info.Host, _ = os.Hostname()
	if !o.StartAt.IsZero() {
		at := o.StartAt.UTC()
		info.StartAt = &at
	}
	if !sentBefore.IsZero() {
		at := sentBefore.UTC()
		info.SentBefore = &at
	}
	return info
}

// progress reports Progress every 250 ms when a person is watching, and
// returns a function that stops it and reports ProgressDone.
func (e *engine) progress(start time.Time, planned time.Duration, c *Counts) func() {
	if !e.Interactive {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				e.emit(ProgressDone{})
				return
			case <-t.C:
				e.emit(Progress{Elapsed: time.Since(start), Planned: planned, Counts: c})
			}
		}
	}()
	return func() { close(done); <-finished }
}
