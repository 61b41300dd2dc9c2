package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/redact"
)

// Job is what the engine runs: a Plan of paced streams, or a Fleet of
// retrying clients.
type Job interface {
	// Run sends the job's requests to target and hands every result to
	// sink, one at a time. When ctx ends it stops sending, hands over what
	// is in flight and returns.
	Run(ctx context.Context, target string, sink func(*vegeta.Result) error) error
	// Duration is how long the job is planned to run (for a fleet, the
	// longest it can run).
	Duration() time.Duration
	// Info describes the job for run.json; the engine adds what it knows
	// (command, target, times, host, version, seed, how it ended).
	Info() archive.RunInfo
}

// Engine runs a Job against a target into a new run folder: it starts the
// embedded reference target when no target is given, checks that the
// target answers (and, before an agreed start, waits for it), warns at a
// terminal before load goes off loopback, raises the soft limit on open
// file descriptors to the hard one and refuses a job that would not fit
// (see DescriptorError), lets a job that speaks MCP settle the revision
// (an optional Negotiate method), waits for the agreed start,
// archives every result as it comes with a progress line at a terminal,
// stops adding load to a failing target, notes a wall-clock step, and
// writes run.json at the start and again at the end. attack, verify and
// fleet all run through it.
//
// The zero value is not ready: set Command, Out and Stderr, and Target or
// Embedded. An Engine is used for one run.
type Engine struct {
	// Command names the command in messages and run.json.
	Command string
	// Target is the target's base URL; when empty, Embedded starts one.
	Target string
	// Embedded starts the reference target in-process and returns its
	// base URL and a function that stops it.
	Embedded func() (url string, stop func() error, err error)
	// Out is the directory the run folder is made in; Folder names it
	// (<UTC time>-<Folder>).
	Out, Folder string
	// AbortShare stops the run once more than this share of the last 100
	// results were transport errors or 5xx (0: never). See FailureGuard.
	AbortShare float64
	// StartAt, when set, is the instant the shards of an attack agreed to
	// start at: the engine waits for it, and keeps trying an unreachable
	// target until then.
	StartAt time.Time
	// Announce, when set, is said once the job's source addresses are
	// known to be usable, before the target is started or reached: what
	// the run is about to do.
	Announce string
	// Seed and Version are recorded in run.json.
	Seed    uint64
	Version string
	// Stderr receives the engine's messages; Terminal says it is a
	// terminal (progress line, warning before a remote target).
	Stderr   io.Writer
	Terminal bool
	// ReachTimeout bounds the reachability check (0: 25 s: a loaded host
	// can stall even a loopback answer for seconds); RemoteWait is how long
	// a person at a terminal has to cancel load for a remote target (0:
	// 5 s).
	ReachTimeout, RemoteWait time.Duration
	// Sink, when set, also sees every result, after it was archived.
	Sink func(*vegeta.Result)
	// Network is how the reachability check reaches the target (nil:
	// HTTP/1.1, the system's roots); give it the job's.
	Network *client.Network
}

// Run is what the engine archived.
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

// Errors of Execute that are not about the target: a run stopped by the
// caller, before anything was sent or during the run.
var (
	ErrCancelled   = errors.New("cancelled before sending anything")
	ErrInterrupted = errors.New("interrupted")
)

// SetupError is a run that could not start for a reason of the caller's:
// an embedded target that does not start, a run folder that cannot be
// made, an archive that cannot be written.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// UnreachableError is a target that does not answer at all.
type UnreachableError struct {
	Target string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("target %s is unreachable: %v", e.Target, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// TLSError is a target whose TLS handshake failed: it answers, but not to
// a client configured as this one is. Hint names the flag that fixes it.
type TLSError struct {
	Target, Hint string
	Err          error
}

func (e *TLSError) Error() string {
	return fmt.Sprintf("TLS with %s failed: %v: %s", e.Target, e.Err, e.Hint)
}
func (e *TLSError) Unwrap() error { return e.Err }

// RunError is a run that ended early but archived what it received: Err
// is ErrInterrupted, a *FailingError, a *LocalLimitError (this machine's
// limit) or an archive write error.
type RunError struct {
	Run *Run
	Err error
}

func (e *RunError) Error() string {
	var failing *FailingError
	switch {
	case errors.Is(e.Err, ErrInterrupted):
		return fmt.Sprintf("interrupted; the %d results received are archived in %s", e.Run.Results, e.Run.Dir)
	case errors.As(e.Err, &failing) && !failing.All:
		return fmt.Sprintf("%v (--abort-at); the %d results received are archived in %s", e.Err, e.Run.Results, e.Run.Dir)
	case errorsAsGuard(e.Err):
		return fmt.Sprintf("%v; the %d results received are archived in %s", e.Err, e.Run.Results, e.Run.Dir)
	}
	return fmt.Sprintf("%v (the %d results received are in %s)", e.Err, e.Run.Results, e.Run.Dir)
}
func (e *RunError) Unwrap() error { return e.Err }

// Execute runs job as the engine is configured. It returns the run and
// nil; or the run and a *RunError when the run ended early (interrupted,
// a failing target, a write error) with what it received archived; or nil
// and ErrCancelled, a *SetupError (a *TLSError in it when the TLS
// handshake failed) or an *UnreachableError when nothing was sent.
func (e *Engine) Execute(ctx context.Context, job Job) (*Run, error) {
	say := func(format string, args ...any) {
		fmt.Fprintf(e.Stderr, "ratecheck %s: %s\n", e.Command, fmt.Sprintf(format, args...))
	}
	if err := CheckSources(job.Info().Sources); err != nil {
		return nil, &SetupError{err}
	}
	if e.Announce != "" {
		say("%s", e.Announce)
	}
	run := &Run{Target: e.Target, Embedded: e.Target == "", Counts: &Counts{}}
	if err := checkDescriptors(job, run.Embedded); err != nil {
		return nil, &SetupError{err}
	}
	if run.Embedded {
		url, stop, err := e.Embedded()
		if err != nil {
			return nil, &SetupError{fmt.Errorf("starting the embedded target: %w", err)}
		}
		defer stop()
		run.Target = url
		say("no --target: using the embedded reference target at %s", url)
	}
	if err := e.warnRemote(ctx, run.Target, job.Duration()); err != nil {
		return nil, ErrCancelled
	}
	if err := e.reachableBy(ctx, run.Target); err != nil {
		if ctx.Err() != nil {
			return nil, ErrCancelled
		}
		if t, ok := err.(*TLSError); ok {
			return nil, &SetupError{t}
		}
		return nil, &UnreachableError{Target: run.Target, Err: err}
	}
	// A job that speaks MCP settles the revision first, from an address
	// of its choosing (the contract probes', never the limit address).
	if n, ok := job.(interface {
		Negotiate(ctx context.Context, target string) ([]string, error)
	}); ok {
		notes, err := n.Negotiate(ctx, run.Target)
		if ctx.Err() != nil {
			return nil, ErrCancelled
		}
		if err != nil {
			return nil, &SetupError{err}
		}
		for _, note := range notes {
			say("%s", note)
		}
	}
	if err := e.waitForStart(ctx); err != nil {
		return nil, ErrCancelled
	}
	start := time.Now()
	w, err := archive.Create(e.Out, e.Folder, start)
	if err != nil {
		return nil, &SetupError{err}
	}
	run.Dir = w.Dir
	if p, ok := job.(interface{ Prepare(dir string) error }); ok {
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
	stopProgress := e.progress(start, job.Duration(), run.Counts)
	// A failing target stops the job but not the archive: what is in
	// flight is still recorded.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	guard := FailureGuard{Max: e.AbortShare}
	var failing error // the guard's: *FailingError or *LocalLimitError
	lastFlush := time.Now()
	runErr := job.Run(runCtx, run.Target, func(r *vegeta.Result) error {
		run.Counts.Add(r)
		if err := w.Add(r); err != nil {
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
	stopProgress()
	var final error // every result failed
	if failing == nil && runErr == nil && ctx.Err() == nil {
		final = guard.Final()
	}
	if f, ok := job.(interface{ Finish(*archive.RunInfo) }); ok {
		f.Finish(&info)
	}
	info.End = time.Now().UTC()
	info.Interrupted = ctx.Err() != nil
	if step, stepped := archive.ClockStep(time.Now().Round(0).Sub(start.Round(0)), time.Since(start)); stepped {
		info.ClockStepMS = step.Milliseconds()
		say("the wall clock stepped by %v during the run (NTP or a manual change): archived timestamps across the step are off by that much; run again for exact windows", step.Round(time.Millisecond))
	}
	if failing != nil {
		info.Aborted = failing.Error()
	}
	if err := w.Close(info); err != nil && runErr == nil {
		runErr = err
	}
	run.Results, run.Took, run.Info = w.Len(), time.Since(start), info
	run.Info.Results = run.Results
	switch {
	case runErr != nil:
		return run, &RunError{Run: run, Err: runErr}
	case info.Interrupted:
		return run, &RunError{Run: run, Err: ErrInterrupted}
	case failing != nil:
		return run, &RunError{Run: run, Err: failing}
	case final != nil:
		return run, &RunError{Run: run, Err: final}
	}
	return run, nil
}

// info is run.json of the job's run as it starts.
func (e *Engine) info(job Job, run *Run, start time.Time) archive.RunInfo {
	info := job.Info()
	info.Command, info.Target, info.Embedded = e.Command, run.Target, run.Embedded
	info.Start, info.Seed, info.Version = start.UTC(), e.Seed, e.Version
	info.Host, _ = os.Hostname()
	if !e.StartAt.IsZero() {
		at := e.StartAt.UTC()
		info.StartAt = &at
	}
	return info
}

// CheckSources reports the first source address this machine cannot send
// from: a request from it would fail before it left, and a run of such
// failures proves nothing about the target.
func CheckSources(sources []string) error {
	for _, src := range sources {
		if src == "" {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(src, "0"))
		if err != nil {
			var errno syscall.Errno
			if errors.As(err, &errno) && errno == syscall.EADDRNOTAVAIL {
				err = errors.New("this machine has no such address")
			}
			return fmt.Errorf("--sources: cannot send from %s: %v (on Linux every 127.0.0.x is local; another address must be one of this machine's)", src, err)
		}
		ln.Close()
	}
	return nil
}

// reachableBy checks that the target answers. Before an agreed start (a
// shard) it keeps trying, every second, until that instant: the target may
// still be coming up, as when it is deployed with the shards.
func (e *Engine) reachableBy(ctx context.Context, target string) error {
	timeout := e.ReachTimeout
	if timeout <= 0 {
		timeout = 25 * time.Second
	}
	for said := false; ; said = true {
		err := Reachable(ctx, e.Network, target, timeout)
		left := time.Until(e.StartAt)
		if _, tlsErr := err.(*TLSError); err == nil || tlsErr || left <= 0 || ctx.Err() != nil {
			return err
		}
		if !said {
			fmt.Fprintf(e.Stderr, "ratecheck %s: target %s is not reachable yet (%v): trying again until --start-at\n", e.Command, target, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Second, left)):
		}
	}
}

// Reachable reports whether the target answers HTTP at all (any status)
// within timeout, reached as nw says (nil: HTTP/1.1, the system's roots),
// saying what is wrong when it does not: a failed TLS handshake is a
// *TLSError naming the flag that fixes it. It follows no redirect, as the
// attack follows none: a redirect to the same origin (a path) is an
// answer, and one to another scheme, host or port is an error that names
// it (*RedirectError): every request of the attack would get that redirect
// instead of an answer.
func Reachable(ctx context.Context, nw *client.Network, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, base+"/", nil)
	if err != nil {
		return err
	}
	hc := nw.Client("", 0)
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	hint, isTLS := client.TLSHint(err)
	switch {
	case err == nil:
	case isTLS:
		return &TLSError{Target: base, Hint: hint, Err: tlsCause(err)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("no answer to HEAD / within %v: it accepts connections but does not answer (stalled or overloaded)", timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("connection refused: nothing listens there (is the target running? is the port right?)")
	default:
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if loc, err := resp.Location(); err == nil && (loc.Scheme != req.URL.Scheme || loc.Host != req.URL.Host) {
			return &RedirectError{Status: resp.StatusCode, To: redact.URL(loc.String())}
		}
	}
	return nil
}

// RedirectError is a target whose HEAD / redirects to another origin.
type RedirectError struct {
	Status int
	// To is the redirect's target, credentials redacted.
	To string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("it redirects to %s (%d): the attack follows no redirect, so every request would get that; pass the URL it redirects to as --target", strconv.QuoteToASCII(e.To), e.Status)
}

// warnRemote warns, at a terminal, before load goes to a target that is
// not on loopback (someone's real service), and gives RemoteWait to press
// Ctrl-C; it returns ctx's error if they did. Off a terminal (CI, scripts)
// it says nothing and waits for nothing.
func (e *Engine) warnRemote(ctx context.Context, target string, planned time.Duration) error {
	if !e.Terminal || IsLoopback(target) {
		return nil
	}
	wait := e.RemoteWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	fmt.Fprintf(e.Stderr, "ratecheck %s: %s is not a loopback address: this sends real load to it for about %v. Starting in %v; Ctrl-C to cancel.\n",
		e.Command, target, planned.Round(100*time.Millisecond), wait)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
		return nil
	}
}

// IsLoopback reports whether a target URL (empty: the embedded target) is
// on loopback.
func IsLoopback(target string) bool {
	if target == "" {
		return true
	}
	u, err := url.Parse(target)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// waitForStart waits until StartAt (the shards' agreed start), saying so,
// or until ctx ends. An instant already past is a warning, not an error:
// the shard starts at once and analyze reports the skew between shards.
func (e *Engine) waitForStart(ctx context.Context) error {
	at := e.StartAt
	if at.IsZero() {
		return nil
	}
	d := time.Until(at)
	if d <= 0 {
		fmt.Fprintf(e.Stderr, "ratecheck %s: warning: --start-at %s passed %v ago: starting now (analyze reports the skew between shards)\n", e.Command, at.UTC().Format(time.RFC3339Nano), (-d).Round(time.Millisecond))
		return nil
	}
	fmt.Fprintf(e.Stderr, "ratecheck %s: waiting %v for --start-at %s\n", e.Command, d.Round(time.Millisecond), at.UTC().Format(time.RFC3339Nano))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// progress prints a live line on Stderr every 250 ms at a terminal, and
// returns a function that stops it and ends the line.
func (e *Engine) progress(start time.Time, planned time.Duration, c *Counts) func() {
	if !e.Terminal {
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
				fmt.Fprintf(e.Stderr, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(e.Stderr, "\r\033[K%v / %v  %s", time.Since(start).Round(100*time.Millisecond), planned.Round(100*time.Millisecond), c.String())
			}
		}
	}()
	return func() { close(done); <-finished }
}

// tlsCause strips the request's method and URL from a client error
// (*url.Error), which the message already names.
func tlsCause(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}
