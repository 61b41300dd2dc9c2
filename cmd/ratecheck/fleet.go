package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/fleet"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/connectbyjbrh/ratecheck/report"
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
	runFlags
	netFlags
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
	timeout  time.Duration
	// fleet --client-cmd: the user's client program, how long the first
	// requests wait for all of them, and how long each may run.
	clientCmd     string
	barrier       time.Duration
	clientTimeout time.Duration
}

func runFleet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o fleetOptions
	fs := newFlagSet("fleet", "[flags]", fleetHelp, stderr)
	o.runFlags.declare(fs)
	o.netFlags.declare(fs)
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
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-attempt timeout")
	fs.StringVar(&o.clientCmd, "client-cmd", "", "judge your own client `program` instead: run N copies of it (sh -c) against the embedded target, and judge them from the server's records")
	fs.DurationVar(&o.barrier, "barrier", 2*time.Minute, "with --client-cmd: how long the first requests wait for all N programs to arrive")
	fs.DurationVar(&o.clientTimeout, "client-timeout", 5*time.Minute, "with --client-cmd: how long each program may run before it is killed (reported)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if o.clientCmd != "" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for _, name := range []string{"target", "strategy", "base", "cap", "slow-down", "limit", "source", "rows", "faults", "timeout", "mcp-revision",
			"cacert", "insecure", "cert", "key", "http2", "h2c", "connections", "max-connections", "max-workers"} {
			if set[name] {
				return usageErr(stderr, "fleet", "--%s does not go with --client-cmd: the program decides how it retries, and the embedded target is its server", name)
			}
		}
		if o.barrier <= 0 || o.clientTimeout <= 0 {
			return usageErr(stderr, "fleet", "--barrier and --client-timeout must be positive")
		}
		if err := o.check(); err != nil {
			return usageErr(stderr, "fleet", "%v", err)
		}
		if !set["requests"] {
			o.requests = 5 // one of each answer of the script, and a shared 429 first
		}
		return runPrograms(ctx, o, stdout, stderr)
	}
	strategy, err := client.ParseStrategy(o.strategy)
	if err != nil {
		return usageErr(stderr, "fleet", "--strategy: %v", err)
	}
	switch {
	case o.base < 0 || o.cap < 0 || o.slowDown < 0 || o.limit < 0 || o.timeout <= 0:
		return usageErr(stderr, "fleet", "durations and --limit must not be negative, --timeout positive")
	case o.faults != "" && o.target != "":
		return usageErr(stderr, "fleet", "--faults configures the embedded target; a --target has faults of its own")
	}
	if err := o.check(); err != nil {
		return usageErr(stderr, "fleet", "%v", err)
	}
	faults, err := refserver.ParseFaults(o.faults)
	if err != nil {
		return usageErr(stderr, "fleet", "--faults: %v", err)
	}
	window := o.runFlags.window(o.window, time.Minute, 30*time.Second)
	f := fleet.Fleet{Surface: o.surface, Clients: o.clients, Requests: o.requests,
		Backoff: client.Backoff{Strategy: strategy, Base: o.base, Cap: o.cap}, Attempts: o.attempts, SlowDown: o.slowDown,
		Limit: o.limit, Window: window, Timeout: o.timeout, Seed: o.seed, Source: o.source, Epsilon: o.epsilon}
	if o.source == "" && attack.IsLoopback(o.target) {
		f.Source, f.RowSource = "127.0.0.2", "127.0.0.3"
	}
	if o.rows {
		rows, err := scenario.LoadEmbedded("errors.yaml")
		if err != nil {
			return usageErr(stderr, "fleet", "%v", err)
		}
		f.Rows = rows.Streams
	}
	if f.Network, err = o.network(o.target); err != nil {
		return usageErr(stderr, "fleet", "%v", err)
	}
	f.MaxWorkers = o.maxWorkers
	from := f.RowSource
	if from == "" {
		from = negotiationSource(o.target, []string{orLoopback(f.Source)})
	}
	f.MCP = o.mcpSession(from, o.timeout, f.Network)
	f = f.Defaults()
	cfg := refserver.DefaultConfig()
	cfg.Window, cfg.Faults, cfg.Seed = window, faults, o.seed
	eng, err := o.runFlags.engine("fleet", stderr, embeddedTarget(cfg))
	if err != nil {
		return usageErr(stderr, "fleet", "%v", err)
	}
	eng.Folder, eng.Seed, eng.Network = "fleet", o.seed, f.Network
	eng.Announce = fmt.Sprintf("%d clients from %s, strategy %s, base %v, cap %v, %d attempts, ε %v",
		f.Clients, orDefault(f.Source), strategy, f.Backoff.Base, f.Backoff.Cap, f.Attempts, f.Epsilon)
	run, err := eng.Execute(ctx, f)
	if err != nil {
		return failed(stderr, "fleet", err)
	}
	reportMCP(stderr, "fleet", run.Info)
	in, err := analyze.Read([]string{run.Dir})
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: reading %s: %v\n", run.Dir, err)
		return exitUsage
	}
	judged, _ := fleetConfig(run.Info)
	return printFleet(o, jitter.Judge(in, judged), string(strategy), run.Dir, stdout, stderr)
}

// fleetConfig is what a fleet run is judged against, as its run.json
// recorded it (fleet judges its run by it, and so does analyze later), and
// the strategy its tables name.
func fleetConfig(info archive.RunInfo) (jitter.Config, string) {
	f := info.Fleet
	d := func(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }
	cfg := jitter.Config{Base: d(f.BaseMS), Cap: d(f.CapMS), Epsilon: d(f.EpsilonMS), Attempts: f.Attempts,
		SlowDown: d(f.SlowDownMS), Seed: info.Seed, Strategy: f.Strategy}
	if f.Command != "" {
		// Client programs: judged against full jitter over the ranges
		// their waves showed; the harness measured the target's stalls.
		cfg.Strategy, cfg.Clients, cfg.Requests, cfg.Stall = "full", f.Clients, f.Requests, max(d(f.StallMS), time.Microsecond)
	}
	return cfg, f.Strategy
}

// printFleet writes a fleet's verdict (tables or JSON, and --junit) and
// returns its exit code.
func printFleet(o fleetOptions, rep *jitter.Report, strategy, dir string, stdout, stderr io.Writer) int {
	if err := writeJUnit(o.junit, "ratecheck fleet", []report.Suite{{Name: "fleet", Checks: rep.Checks}}); err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: --junit: %v (the run is kept in %s)\n", err, dir)
		return exitUsage
	}
	var err error
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = report.FleetTables(stdout, rep, strategy, dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: writing the verdict: %v\n", err)
		return exitUsage
	}
	return verdictExit(rep.Verdict)
}

func orDefault(source string) string {
	if source == "" {
		return "the default address"
	}
	return source
}

// check validates the flags both kinds of fleet share.
func (o fleetOptions) check() error {
	switch {
	case o.surface != method.REST && o.surface != method.MCP:
		return fmt.Errorf("--surface %q: want rest or mcp", o.surface)
	case o.clients < 2:
		return fmt.Errorf("--clients must be at least 2 (collisions need pairs)")
	case o.requests < 1 || o.attempts < 1:
		return fmt.Errorf("--requests and --attempts must be at least 1")
	case o.window < 0 || o.epsilon < 0:
		return fmt.Errorf("--window and --epsilon must not be negative")
	}
	return checkOutFile("--junit", o.junit)
}

// orLoopback is a source address, with "" (the system's choice) as
// 127.0.0.1, where it lands on a loopback target.
func orLoopback(src string) string {
	if src == "" {
		return "127.0.0.1"
	}
	return src
}
