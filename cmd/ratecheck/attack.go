package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/contract"
)

const attackHelp = `
Run a scenario profile (profiles/*.yaml) against a target with Vegeta and
archive every result under --out as <UTC time>-<profile>/ with results.bin
(Vegeta gob: "vegeta report results.bin" reads it) and run.json.

Without --target the embedded reference target is started on a free loopback
port with the same window. Spans written in windows (such as 1.1w) follow
--window, so a profile written for 60 s runs in compressed time.

A live progress line is shown on stderr when it is a terminal. Ctrl-C stops
the attack and archives every result already received.

--shard i/n sends shard i of the attack split over n machines (each with
--target set to the same target): a stream with at least n sources is split
by source, so each address's traffic comes from one machine; otherwise the
shards take turns with its requests. --start-at makes every shard start at
one instant; until then a shard also waits for the target to come up. Run
folders are named <time>-<profile>-shard<i>of<n>; analyze them together to
merge. --sources own sends from the machine's own address (a Kubernetes pod
has one), labelled shard-<i> in a shard. ratecheck k8s-job writes the
Kubernetes Job that runs the shards.

Credential headers (Authorization, Cookie, *-Key, *-Token) and query
parameters (key, token, *_key, *_token, password, secret, sig, ...) are
refused unless --allow-credentials: the contract's surfaces authenticate
nothing, so a key only leaks. Their values, and cookies the target sets, are
never written anywhere ([redacted]).

Exit codes: 0 done and every expect of the profile held, 1 an expect failed
or the run was interrupted, 2 bad usage or profile, 3 target unreachable or
failing (--abort-at).
`

// attackOptions are the flags of "ratecheck attack".
type attackOptions struct {
	profile          string
	target           string
	window           time.Duration
	out              string
	headers          headerFlag
	allowCredentials bool
	seed             uint64
	timeout          time.Duration
	abortAt          string
	maxRate          int
	maxDuration      time.Duration
	shard            string
	startAt          string
	sources          string
}

func runAttack(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := attackOptions{headers: headerFlag{}}
	fs := newFlagSet("attack", "--profile FILE [flags]", attackHelp, stderr)
	fs.StringVar(&o.profile, "profile", "", "scenario `file` (required), such as profiles/rest-limit.yaml")
	fs.StringVar(&o.target, "target", "", "base `URL` of the target (default: the embedded reference target)")
	fs.DurationVar(&o.window, "window", 0, "the run's window (default: the profile's policy window)")
	fs.StringVar(&o.out, "out", "results", "`dir`ectory the run folder is written under")
	fs.Var(o.headers, "header", "extra request header 'Name: value' (repeatable)")
	fs.BoolVar(&o.allowCredentials, "allow-credentials", false, "allow credential headers and query parameters (their values are still never written)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed recorded with the run")
	fs.DurationVar(&o.timeout, "timeout", 0, "per-request timeout (default: the profile's, or 10s)")
	fs.IntVar(&o.maxRate, "max-rate", 1000, "ceiling on the requests a profile may send in any one second; raise it to run a bigger one")
	fs.DurationVar(&o.maxDuration, "max-duration", 15*time.Minute, "ceiling on how long a profile may run; raise it to run a longer one")
	fs.StringVar(&o.abortAt, "abort-at", "50%", "stop adding load when more than this `share` of the last 100 results were transport errors or 5xx (0: never)")
	fs.StringVar(&o.sources, "sources", "", "comma-separated local `addresses` replacing the profile's sources, or own: the machine's own address")
	fs.StringVar(&o.shard, "shard", "", "send only part `i/n` of the attack, such as 0/3 (with --target; see deploy/kubernetes)")
	fs.StringVar(&o.startAt, "start-at", "", "wait until this RFC 3339 `instant` to start, such as 2026-11-30T09:00:00Z (the shards' agreed start)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	var shard attack.Shard
	var err error
	if o.shard != "" {
		if shard, err = attack.ParseShard(o.shard); err != nil {
			return usageErr(stderr, "attack", "--shard: %v", err)
		}
		if o.target == "" {
			return usageErr(stderr, "attack", "--shard needs --target: every shard must attack the same target, not an embedded one of its own")
		}
	}
	var startAt time.Time
	if o.startAt != "" {
		if startAt, err = parseInstant("--start-at", o.startAt); err != nil {
			return usageErr(stderr, "attack", "%v", err)
		}
		if time.Until(startAt) > 24*time.Hour {
			return usageErr(stderr, "attack", "--start-at %s is more than 24h away", o.startAt)
		}
	}
	if o.profile == "" {
		return usageErr(stderr, "attack", "--profile is required (see profiles/README.md)")
	}
	if o.window < 0 || o.timeout < 0 {
		return usageErr(stderr, "attack", "--window and --timeout must not be negative")
	}
	abortShare, err := parsePercent(o.abortAt)
	if err != nil || abortShare > 1 {
		return usageErr(stderr, "attack", "--abort-at %q: want a share such as 50%% (0 never aborts)", o.abortAt)
	}
	if names := attack.Credentials(http.Header(o.headers)); len(names) > 0 && !o.allowCredentials {
		return usageErr(stderr, "attack", "--header %s carries a credential: the contract's surfaces authenticate nothing and a key sent to them only leaks into logs; pass --allow-credentials if you must", strings.Join(names, ", "))
	}
	prof, err := attack.LoadProfile(o.profile)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck attack: %v\n", err)
		return exitUsage
	}
	if names := attack.Credentials(profileHeaders(prof)); len(names) > 0 && !o.allowCredentials {
		return usageErr(stderr, "attack", "%s: headers %s carry a credential; pass --allow-credentials if you must", o.profile, strings.Join(names, ", "))
	}
	if names := attack.QueryCredentials(prof); len(names) > 0 && !o.allowCredentials {
		return usageErr(stderr, "attack", "%s: query parameters %s carry a credential; pass --allow-credentials if you must", o.profile, strings.Join(names, ", "))
	}
	if o.sources != "" {
		if err := replaceSources(prof, o.sources); err != nil {
			return usageErr(stderr, "attack", "--sources: %v", err)
		}
	}
	window := o.window
	if window == 0 {
		window = prof.Policy.Window.D
	}
	plan := attack.Plan{Profile: prof, Window: window, Headers: http.Header(o.headers), Timeout: o.timeout, AbortShare: abortShare,
		Shard: shard, StartAt: startAt}
	// Ceilings: a profile (or a --window that compresses it) that would send
	// more than the operator allowed does not start.
	if peak := plan.PeakRate(); peak > o.maxRate {
		return usageErr(stderr, "attack", "%s at window %v sends up to %d requests in one second, above the ceiling --max-rate %d: raise --max-rate if you mean it", o.profile, window, peak, o.maxRate)
	}
	if d := plan.Duration(); d > o.maxDuration {
		return usageErr(stderr, "attack", "%s at window %v runs for %v, above the ceiling --max-duration %v: raise --max-duration if you mean it", o.profile, window, d.Round(time.Second), o.maxDuration)
	}
	return runPlan(ctx, plan, o.target, o.out, o.seed, stdout, stderr)
}

// replaceSources makes every stream of p send from the addresses of list
// (comma-separated IPs), or from the machine's own address for "own".
func replaceSources(p *attack.Profile, list string) error {
	var sources []string
	if list != "own" {
		var err error
		if sources, err = parseAddresses(list); err != nil {
			return fmt.Errorf("%w (or use own)", err)
		}
	}
	p.Sources = sources
	for i := range p.Streams {
		p.Streams[i].Sources = nil
	}
	return nil
}

// profileHeaders gathers every header a profile sets.
func profileHeaders(p *attack.Profile) http.Header {
	h := http.Header{}
	for k, v := range p.Headers {
		h.Set(k, v)
	}
	for _, s := range p.Streams {
		for _, r := range s.Requests {
			for k, v := range r.Headers {
				h.Set(k, v)
			}
		}
	}
	return h
}

// runPlan runs the plan into a new archive and prints a summary; exit 1
// when the profile's expectations fail.
func runPlan(ctx context.Context, plan attack.Plan, targetURL, out string, seed uint64, stdout, stderr io.Writer) int {
	run, code := execute(ctx, "attack", plan, targetURL, 0, 0, out, seed, stderr)
	if run == nil {
		return code
	}
	fmt.Fprintf(stdout, "archived %d results in %s (%v)\n  %s\n", run.results, run.dir, run.took.Round(time.Millisecond), run.counts.String())
	if code != exitOK {
		return code
	}
	limits := map[string]int{contract.REST: 240, contract.MCP: 120}
	if p := plan.Profile.Policy; p.Limit > 0 && (p.Surface == contract.REST || p.Surface == contract.MCP) {
		limits[p.Surface] = p.Limit
	}
	writeRunReport("attack", run.dir, analyze.Config{Window: plan.Window, Limits: limits, Target: run.target, Run: run.dir}, stdout, stderr)
	if plan.Shard.Split() {
		fmt.Fprintf(stdout, "  shard %v: the profile's expect counts are for the whole attack; analyze the merged shards\n", plan.Shard)
		return exitOK
	}
	if bad := run.outcomes.Check(plan.Profile); len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(stdout, "  FAIL %s\n", b)
		}
		return exitCheckFailed
	}
	return exitOK
}

// executed is what execute archived.
type executed struct {
	dir      string
	target   string
	results  int
	took     time.Duration
	counts   *attack.Counts
	outcomes attack.Outcomes
}

// execute starts the embedded target if no target is given (with the
// profile's policy limit, or restLimit and mcpLimit when set), checks the
// target is reachable, runs the plan into a new archive under out with
// progress on a terminal, and writes run.json. It returns nil and an exit
// code when nothing was archived; otherwise the archive and exitOK, or
// exitCheckFailed when interrupted, or exitUsage when archiving failed.
func execute(ctx context.Context, name string, plan attack.Plan, targetURL string, restLimit, mcpLimit int, out string, seed uint64, stderr io.Writer) (*executed, int) {
	embedded := targetURL == ""
	if embedded {
		if restLimit == 0 && mcpLimit == 0 {
			switch plan.Profile.Policy.Surface {
			case contract.REST:
				restLimit = plan.Profile.Policy.Limit
			case contract.MCP:
				mcpLimit = plan.Profile.Policy.Limit
			}
		}
		ln, err := startEmbedded(plan.Window, restLimit, mcpLimit)
		if err != nil {
			return nil, usageErr(stderr, name, "starting the embedded target: %v", err)
		}
		defer ln.Close()
		targetURL = ln.URL
		fmt.Fprintf(stderr, "ratecheck %s: no --target: using the embedded reference target at %s (window %v)\n", name, targetURL, plan.Window)
	} else {
		var err error
		if targetURL, err = checkTarget(targetURL); err != nil {
			return nil, usageErr(stderr, name, "%v", err)
		}
	}
	plan.Target = targetURL
	if err := warnRemote(ctx, stderr, isTerminal(stderr), name, targetURL, plan.Duration()); err != nil {
		fmt.Fprintf(stderr, "ratecheck %s: cancelled before sending anything\n", name)
		return nil, exitCheckFailed
	}
	if err := reachableBy(ctx, stderr, name, targetURL, plan.StartAt); err != nil {
		fmt.Fprintf(stderr, "ratecheck %s: target %s is unreachable: %v\n", name, targetURL, err)
		return nil, exitUnreachable
	}
	if err := waitForStart(ctx, stderr, name, plan.StartAt); err != nil {
		fmt.Fprintf(stderr, "ratecheck %s: cancelled before sending anything\n", name)
		return nil, exitCheckFailed
	}
	start := time.Now()
	folder := plan.Profile.Name
	if plan.Shard.Split() {
		folder += fmt.Sprintf("-shard%dof%d", plan.Shard.I, plan.Shard.N)
	}
	arch, err := archive.Create(out, folder, start)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck %s: %v\n", name, err)
		return nil, exitUsage
	}
	run := &executed{dir: arch.Dir, target: targetURL, counts: &attack.Counts{}, outcomes: attack.Outcomes{}}
	stopProgress := progress(stderr, start, plan.Duration(), run.counts)
	lastFlush := time.Now()
	// A failing target stops the attackers but not the archive: what is in
	// flight is still recorded.
	runCtx, guard := newFailureStop(ctx, plan.AbortShare)
	defer guard.stop()
	runErr := plan.Run(runCtx, func(r *vegeta.Result) error {
		run.counts.Add(r)
		run.outcomes.Add(r)
		attack.RedactResult(r)
		if err := arch.Add(r); err != nil {
			return err
		}
		guard.add(r)
		if time.Since(lastFlush) > 100*time.Millisecond {
			lastFlush = time.Now()
			return arch.Flush()
		}
		return nil
	})
	stopProgress()
	info := plan.Info()
	info.Command = name
	info.Embedded, info.Start, info.End, info.Seed = embedded, start.UTC(), time.Now().UTC(), seed
	info.Host, _ = os.Hostname()
	info.Interrupted = ctx.Err() != nil
	noteClockStep(stderr, name, start, &info)
	if guard.failing != nil {
		info.Aborted = guard.failing.Error()
	}
	if err := arch.Close(info); err != nil && runErr == nil {
		runErr = err
	}
	run.results, run.took = arch.Len(), time.Since(start)
	if runErr != nil {
		fmt.Fprintf(stderr, "ratecheck %s: %v (the %d results received are in %s)\n", name, runErr, arch.Len(), arch.Dir)
		return run, exitUsage
	}
	if info.Interrupted {
		fmt.Fprintf(stderr, "ratecheck %s: interrupted; the %d results received are archived in %s\n", name, arch.Len(), arch.Dir)
		return run, exitCheckFailed
	}
	if guard.failing != nil {
		fmt.Fprintf(stderr, "ratecheck %s: %v (--abort-at); the %d results received are archived in %s\n", name, guard.failing, arch.Len(), arch.Dir)
		return run, exitUnreachable
	}
	return run, exitOK
}

// reachableBy checks that the target answers. Before an agreed start (a
// shard) it keeps trying, every second, until that instant: the target may
// still be coming up, as when it is deployed with the shards.
func reachableBy(ctx context.Context, stderr io.Writer, name, target string, startAt time.Time) error {
	for said := false; ; said = true {
		err := reachable(ctx, target, reachTimeout)
		left := time.Until(startAt)
		if err == nil || left <= 0 || ctx.Err() != nil {
			return err
		}
		if !said {
			fmt.Fprintf(stderr, "ratecheck %s: target %s is not reachable yet (%v): trying again until --start-at\n", name, target, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Second, left)):
		}
	}
}

// failureStop ends a run once the target is failing (see
// attack.FailureGuard): the attackers stop, the archive keeps what is in
// flight.
type failureStop struct {
	guard   attack.FailureGuard
	stop    context.CancelFunc
	failing *attack.FailingError // why the run stopped early, if it did
}

// newFailureStop returns the run's context, ended with ctx or once more
// than max of the latest results failed (0: never).
func newFailureStop(ctx context.Context, max float64) (context.Context, *failureStop) {
	runCtx, stop := context.WithCancel(ctx)
	return runCtx, &failureStop{guard: attack.FailureGuard{Max: max}, stop: stop}
}

// add counts a result.
func (f *failureStop) add(r *vegeta.Result) {
	if err := f.guard.Add(r); err != nil && f.failing == nil {
		f.failing = err.(*attack.FailingError)
		f.stop()
	}
}

// parseInstant reads an RFC 3339 instant given to flag.
func parseInstant(flag, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 instant such as 2026-11-30T09:00:00Z", flag, s)
	}
	return t, nil
}

// parseAddresses reads a comma-separated list of IP addresses.
func parseAddresses(list string) ([]string, error) {
	addrs, err := parseList(list)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if net.ParseIP(a) == nil {
			return nil, fmt.Errorf("%q is not an IP address", a)
		}
	}
	return addrs, nil
}

// waitForStart waits until at (the shards' agreed start), saying so, or
// until ctx ends. An instant already past is a warning, not an error: the
// shard starts at once and analyze reports the skew between shards.
func waitForStart(ctx context.Context, stderr io.Writer, name string, at time.Time) error {
	if at.IsZero() {
		return nil
	}
	d := time.Until(at)
	if d <= 0 {
		fmt.Fprintf(stderr, "ratecheck %s: warning: --start-at %s passed %v ago: starting now (analyze reports the skew between shards)\n", name, at.UTC().Format(time.RFC3339Nano), (-d).Round(time.Millisecond))
		return nil
	}
	fmt.Fprintf(stderr, "ratecheck %s: waiting %v for --start-at %s\n", name, d.Round(time.Millisecond), at.UTC().Format(time.RFC3339Nano))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noteClockStep compares the wall-clock and monotonic time elapsed since
// start and, when the wall clock stepped, says so and records it in info:
// archived timestamps are wall-clock.
func noteClockStep(stderr io.Writer, name string, start time.Time, info *archive.RunInfo) {
	if step, stepped := archive.ClockStep(time.Now().Round(0).Sub(start.Round(0)), time.Since(start)); stepped {
		info.ClockStepMS = step.Milliseconds()
		fmt.Fprintf(stderr, "ratecheck %s: the wall clock stepped by %v during the run (NTP or a manual change): archived timestamps across the step are off by that much; run again for exact windows\n", name, step.Round(time.Millisecond))
	}
}

// progress prints a live line on stderr every 250 ms when it is a terminal,
// and returns a function that stops it and ends the line.
func progress(stderr io.Writer, start time.Time, planned time.Duration, c *attack.Counts) func() {
	if !isTerminal(stderr) {
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
				fmt.Fprintf(stderr, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(stderr, "\r\033[K%v / %v  %s", time.Since(start).Round(100*time.Millisecond), planned.Round(100*time.Millisecond), c.String())
			}
		}
	}()
	return func() { close(done); <-finished }
}
