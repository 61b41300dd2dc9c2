package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/report"
	"github.com/connectbyjbrh/ratecheck/target"
)

const fleetHelp = `
Show that clients retrying with jittered backoff spread out after a shared
429, and that clients without jitter collide again at every attempt.

fleet spends one address's budget (the surface's limit), then starts N
clients from that address at the same instant, as behind one NAT: every
first attempt is refused, and each client retries by --strategy, up to
--attempts in all, then sends its next request (--requests each), pausing
first if it gave up on repeated 429s. Every attempt is archived with its
client, attempt and drawn delay. Then each failure-table row is sent once
by a client of its own, to show that answers are never retried.

Per attempt wave the analysis compares collisions (retries within ε of each
other), the busiest ε-bin and the re-collision of the last wave's colliding
pairs with simulated fleets whose clients draw independently by the strategy
claimed (full from [0, c), equal from [c/2, c), decorrelated from [base,
3*previous), with c = min(cap, base*2^k); none, which draws nothing, against
full jitter), and tests every delay's place in its range for uniformity (KS).
All tests of a run together are held to a 1 % false-alarm rate. Retry timing
is judged where each client meant to send (the fleet's release, then each
drawn delay after the wave's median answer), so one seed gets one verdict
whatever the host's timing; how late the machine ran its timers is shown as
"late p99".

Strategies: full (the contract's advice, the default), equal, decorrelated,
none (lockstep: the control, which fails).

Without --target the embedded reference target is started with the window
compressed to 30s (unless --window is given): the run takes seconds, since
nothing waits for the window to pass, and a host that stalls for seconds
still cannot let the budget come back before the fleet's first attempts
arrive (the shared-429 check says when it did). --faults injects the
target's faults, such as 5xx=0.05,reset=0.05.

Exit codes: 0 the fleet spread out and kept its discipline, 1 a check
failed, 2 bad usage, 3 target unreachable or failing (--abort-at).
`

// fleetOptions are the flags of "ratecheck fleet".
type fleetOptions struct {
	target   string
	surface  string
	clients  int
	requests int
	strategy string
	base     time.Duration
	cap      time.Duration
	attempts int
	slowDown time.Duration
	epsilon  time.Duration
	window   time.Duration
	limit    int
	source   string
	rows     bool
	faults   string
	seed     uint64
	json     bool
	junit    string
	out      string
	timeout  time.Duration
	abortAt  string
}

func runFleet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o fleetOptions
	fs := newFlagSet("fleet", "[flags]", fleetHelp, stderr)
	fs.StringVar(&o.target, "target", "", "base `URL` of the target (default: the embedded reference target)")
	fs.StringVar(&o.surface, "surface", "rest", "surface the fleet calls: rest or mcp")
	fs.IntVar(&o.clients, "clients", 100, "number of clients")
	fs.IntVar(&o.requests, "requests", 2, "logical requests per client, in turn")
	fs.StringVar(&o.strategy, "strategy", "full", "backoff `strategy`: full, equal, decorrelated or none")
	fs.DurationVar(&o.base, "base", 0, "backoff base (default: window/60, 1s for 60s)")
	fs.DurationVar(&o.cap, "cap", 0, "backoff cap (default: window/2)")
	fs.IntVar(&o.attempts, "attempts", client.DefaultAttempts, "attempts per request, the first included")
	fs.DurationVar(&o.slowDown, "slow-down", 0, "least pause after a request gave up on repeated 429s (default: 2*base)")
	fs.DurationVar(&o.epsilon, "epsilon", 0, "distance that counts as a collision (default: base/50)")
	fs.DurationVar(&o.window, "window", 0, "the target's window (default 60s; 30s for the embedded target)")
	fs.IntVar(&o.limit, "limit", 0, "requests the primer sends to spend the address's budget (default: 240 REST, 120 MCP)")
	fs.StringVar(&o.source, "source", "", "local `address` of every client (default on loopback: 127.0.0.2)")
	fs.BoolVar(&o.rows, "rows", true, "send every failure-table row once to check that answers are not retried")
	fs.StringVar(&o.faults, "faults", "", "faults of the embedded target, such as 5xx=0.05,reset=0.05")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the clients' jitter")
	fs.BoolVar(&o.json, "json", false, "print the JSON verdict on stdout instead of tables")
	fs.StringVar(&o.junit, "junit", "", "also write the checks as JUnit XML to `file`")
	fs.StringVar(&o.out, "out", "results", "`dir`ectory the run folder is written under")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-attempt timeout")
	fs.StringVar(&o.abortAt, "abort-at", "50%", "stop adding load when more than this `share` of the last 100 attempts were transport errors or 5xx (0: never)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	abortShare, err := parsePercent(o.abortAt)
	if err != nil {
		return usageErr(stderr, "fleet", "--abort-at %q: want a share such as 50%% (0 never aborts)", o.abortAt)
	}
	strategy, err := client.ParseStrategy(o.strategy)
	if err != nil {
		return usageErr(stderr, "fleet", "--strategy: %v", err)
	}
	switch {
	case o.surface != attack.REST && o.surface != attack.MCP:
		return usageErr(stderr, "fleet", "--surface %q: want rest or mcp", o.surface)
	case o.clients < 2:
		return usageErr(stderr, "fleet", "--clients must be at least 2 (collisions need pairs)")
	case o.requests < 1 || o.attempts < 1:
		return usageErr(stderr, "fleet", "--requests and --attempts must be at least 1")
	case o.base < 0 || o.cap < 0 || o.window < 0 || o.epsilon < 0 || o.slowDown < 0 || o.limit < 0 || o.timeout <= 0:
		return usageErr(stderr, "fleet", "durations and --limit must not be negative, --timeout positive")
	case o.faults != "" && o.target != "":
		return usageErr(stderr, "fleet", "--faults configures the embedded target; a --target has faults of its own")
	}
	if err := checkOutFile("--junit", o.junit); err != nil {
		return usageErr(stderr, "fleet", "%v", err)
	}
	faults, err := target.ParseFaults(o.faults)
	if err != nil {
		return usageErr(stderr, "fleet", "--faults: %v", err)
	}
	window := o.window
	if window == 0 {
		window = time.Minute
		if o.target == "" {
			window = 30 * time.Second
		}
	}
	limit := o.limit
	if limit == 0 {
		limit = map[string]int{attack.REST: 240, attack.MCP: 120}[o.surface]
	}
	f := attack.Fleet{Target: o.target, Surface: o.surface, Clients: o.clients, Requests: o.requests,
		Backoff: client.Backoff{Strategy: strategy, Base: o.base, Cap: o.cap}, Attempts: o.attempts, SlowDown: o.slowDown,
		Limit: limit, Window: window, Timeout: o.timeout, Seed: o.seed, Source: o.source}
	if o.source == "" && isLoopbackTarget(o.target) {
		f.Source, f.RowSource = "127.0.0.2", "127.0.0.3"
	}
	if o.rows {
		rows, err := attack.LoadEmbedded("errors.yaml")
		if err != nil {
			return usageErr(stderr, "fleet", "%v", err)
		}
		f.Rows = rows.Streams
	}
	f = f.Defaults()
	eps := o.epsilon
	if eps == 0 {
		eps = f.Backoff.Base / 50
	}

	embedded := o.target == ""
	if embedded {
		cfg := target.DefaultConfig()
		cfg.Window, cfg.Faults, cfg.Seed = window, faults, o.seed
		srv, err := target.New(cfg)
		if err != nil {
			return usageErr(stderr, "fleet", "starting the embedded target: %v", err)
		}
		ln, err := target.Listen(srv, "127.0.0.1:0")
		if err != nil {
			return usageErr(stderr, "fleet", "starting the embedded target: %v", err)
		}
		defer ln.Close()
		f.Target = ln.URL
		fmt.Fprintf(stderr, "ratecheck fleet: no --target: using the embedded reference target at %s (window %v)\n", f.Target, window)
	} else if f.Target, err = checkTarget(o.target); err != nil {
		return usageErr(stderr, "fleet", "%v", err)
	}
	if err := warnRemote(ctx, stderr, isTerminal(stderr), "fleet", f.Target, window); err != nil {
		fmt.Fprintln(stderr, "ratecheck fleet: cancelled before sending anything")
		return exitCheckFailed
	}
	if err := reachable(ctx, f.Target, reachTimeout); err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: target %s is unreachable: %v\n", f.Target, err)
		return exitUnreachable
	}
	fmt.Fprintf(stderr, "ratecheck fleet: %d clients from %s, strategy %s, base %v, cap %v, %d attempts, ε %v\n",
		f.Clients, orDefault(f.Source), strategy, f.Backoff.Base, f.Backoff.Cap, f.Attempts, eps)

	start := time.Now()
	arch, err := attack.CreateArchive(o.out, "fleet", start)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: %v\n", err)
		return exitUsage
	}
	counts := &attack.Counts{}
	// A fleet's length depends on its clients' draws: show elapsed time
	// against the longest a request can take.
	longest := 2*f.Window/100 + time.Duration(f.Requests)*(f.SlowDown+time.Duration(f.Attempts)*f.Backoff.Cap)
	stopProgress := progress(stderr, start, longest, counts)
	// A failing target stops the clients but not the archive: attempts in
	// flight are still recorded.
	runCtx, guard := newFailureStop(ctx, abortShare)
	defer guard.stop()
	runErr := f.Run(runCtx, func(r *vegeta.Result) error {
		counts.Add(r)
		if err := arch.Add(r); err != nil {
			return err
		}
		guard.add(r)
		return nil
	})
	stopProgress()
	host, _ := os.Hostname()
	info := attack.RunInfo{Command: "fleet", Profile: "fleet", Target: f.Target, Embedded: embedded, WindowMS: window.Milliseconds(),
		Policy: attack.PolicyInfo{Surface: f.Surface, Limit: limit, WindowMS: window.Milliseconds()}, Sources: nonEmpty(f.Source, f.RowSource),
		Version: attack.Version, Host: host, Start: start.UTC(), End: time.Now().UTC(), Seed: o.seed, Interrupted: ctx.Err() != nil,
		Fleet: &attack.FleetInfo{Surface: f.Surface, Source: f.Source, Clients: f.Clients, Requests: f.Requests, Strategy: string(strategy),
			BaseMS: ms(f.Backoff.Base), CapMS: ms(f.Backoff.Cap), Attempts: f.Attempts, SlowDownMS: ms(f.SlowDown), EpsilonMS: ms(eps), Rows: len(f.Rows)}}
	noteClockStep(stderr, "fleet", start, &info)
	if guard.failing != nil {
		info.Aborted = guard.failing.Error()
	}
	if err := arch.Close(info); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: %v (the %d results received are in %s)\n", runErr, arch.Len(), arch.Dir)
		return exitUsage
	}
	if info.Interrupted {
		fmt.Fprintf(stderr, "ratecheck fleet: interrupted; the %d results received are archived in %s\n", arch.Len(), arch.Dir)
		return exitCheckFailed
	}
	if guard.failing != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: %v (--abort-at); the %d results received are archived in %s\n", guard.failing, arch.Len(), arch.Dir)
		return exitUnreachable
	}
	in, err := analyze.Read([]string{arch.Dir})
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: reading %s: %v\n", arch.Dir, err)
		return exitUsage
	}
	rep := analyze.Jitter(in, analyze.JitterConfig{Base: f.Backoff.Base, Cap: f.Backoff.Cap, Epsilon: eps,
		Attempts: f.Attempts, SlowDown: f.SlowDown, Seed: o.seed, Strategy: string(strategy)})
	if err := writeJUnit(o.junit, "ratecheck fleet", []report.Suite{{Name: "fleet", Checks: rep.Checks}}); err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: --junit: %v (the run is kept in %s)\n", err, arch.Dir)
		return exitUsage
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = report.FleetTables(stdout, rep, string(strategy), arch.Dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: writing the verdict: %v\n", err)
		return exitUsage
	}
	if rep.Verdict != analyze.Pass {
		return exitCheckFailed
	}
	return exitOK
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func orDefault(source string) string {
	if source == "" {
		return "the default address"
	}
	return source
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
