package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/method"
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

--sources takes a pool (addresses, ranges, prefixes; IPv4 and IPv6): its
first address is the fleet's, its second the rows'. Every address is
checked usable before anything is sent (docs/network.md).

Without --target the embedded reference target is started with the window
compressed to 30s (unless --window is given): the run takes seconds, since
nothing waits for the window to pass, and a host that stalls for seconds
still cannot let the budget come back before the fleet's first attempts
arrive (the shared-429 check says when it did). --faults injects the
target's faults, such as 5xx=0.05,reset=0.05.

Exit codes: 0 the fleet spread out and kept its discipline, 1 a check
failed, 2 bad usage or this machine's own limit, 3 target unreachable or
failing (--abort-at), 4 inconclusive, 130 or 143 interrupted (SIGINT or
SIGTERM; what was received is archived).
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
	sources  string
	rows     bool
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
	fs := o.flagSet(stderr)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if o.clientCmd != "" {
		if err := o.checkPrograms(fs); err != nil {
			return usageErr(stderr, "fleet", "%v", err)
		}
		return runPrograms(ctx, o, stdout, stderr)
	}
	f, opts, code := o.prepare(stderr)
	if code >= 0 {
		return code
	}
	run, err := attack.Execute(ctx, f, opts)
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
	return printFleet(o, jitter.Judge(in, judged), string(f.Backoff.Strategy), run.Info, run.Dir, stdout, stderr)
}

// flagSet declares the flags of fleet into o.
func (o *fleetOptions) flagSet(stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("fleet", "[flags]", fleetHelp, stderr)
	o.runFlags.declare(fs)
	o.netFlags.declare(fs)
	fs.StringVar(&o.surface, "surface", "rest", "surface the fleet calls: rest or mcp")
	fs.IntVar(&o.clients, "clients", 100, "number of clients")
	fs.IntVar(&o.requests, "requests", 2, "logical requests per client, in turn (with --client-cmd the default is 5: one of each answer of the script, after a shared 429)")
	fs.StringVar(&o.strategy, "strategy", "full", "backoff `strategy`: full, equal, decorrelated or none")
	fs.DurationVar(&o.base, "base", 0, "backoff base (default: window/60, 1s for 60s)")
	fs.DurationVar(&o.cap, "cap", 0, "backoff cap (default: window/2)")
	fs.IntVar(&o.attempts, "attempts", client.DefaultAttempts, "attempts per request, the first included")
	fs.DurationVar(&o.slowDown, "slow-down", 0, "least pause after a request gave up on repeated 429s (default: 2*base)")
	fs.DurationVar(&o.epsilon, "epsilon", 0, "distance that counts as a collision (default: base/50)")
	fs.DurationVar(&o.window, "window", 0, "the target's window (default 60s; 30s for the embedded target)")
	fs.IntVar(&o.limit, "limit", 0, fmt.Sprintf("requests the primer sends to spend the address's budget (default: %d REST, %d MCP)", method.RESTLimit, method.MCPLimit))
	fs.StringVar(&o.source, "source", "", "local `address` of every client (default on IPv4 loopback: 127.0.0.2)")
	fs.StringVar(&o.sources, "sources", "", "`pool` of local addresses, ranges and prefixes, comma-separated: its first is every client's address, its second the failure-table rows' (default on IPv4 loopback: 127.0.0.2,127.0.0.3)")
	fs.BoolVar(&o.rows, "rows", true, "send every failure-table row once to check that answers are not retried")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the clients' jitter")
	fs.BoolVar(&o.json, "json", false, "print the JSON verdict on stdout instead of tables")
	fs.StringVar(&o.junit, "junit", "", "also write the checks as JUnit XML to `file`")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-attempt timeout")
	fs.StringVar(&o.clientCmd, "client-cmd", "", "judge your own client `program` instead: run N copies of it (sh -c) against the embedded target, and judge them from the server's records")
	fs.DurationVar(&o.barrier, "barrier", 2*time.Minute, "with --client-cmd: how long the first requests wait for all N programs to arrive")
	fs.DurationVar(&o.clientTimeout, "client-timeout", 5*time.Minute, "with --client-cmd: how long each program may run before it is killed (reported)")
	return fs
}
