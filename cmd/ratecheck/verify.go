package main

import (
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
)

const verifyHelp = `
Prove, from the outside, that the target's rate limits hold as documented:
240 REST requests and 120 MCP calls per rolling window per client address,
refused requests counted, each address its own budget, forged forwarding
headers ignored, the two surfaces counted apart, and every failure-table row
answered as documented.

verify runs the probe plan of docs/method.md on both surfaces in parallel
(--surfaces picks one; about 1.2 windows), archives it like attack, analyzes
it and prints a table of checks per surface (or schema-1 JSON with --json,
docs/schema/verdict.json). Latency never causes a false alarm: a request
whose outcome the timing cannot decide is reported as indeterminate, never
failed. A check whose evidence the run did not produce (nothing refused,
every request unanswered, the API not there) is inconclusive, and so is the
run: exit 4, never a pass.

Without --target the embedded reference target is started with the window
compressed to 6s (unless --window is given), so a verdict takes seconds;
--faults injects its faults, such as delay=20ms-40ms. --label names the
release under test in run.json, for ratecheck history.

--sources names the limit address, a second address for isolation, and a
third for the contract probes: the first three of a pool of addresses,
ranges and prefixes, IPv4 and IPv6 (--sources 2001:db8:2::/112 gives
2001:db8:2::1, ::2 and ::3). Default on an IPv4 loopback target: 127.0.0.1,
127.0.0.2, 127.0.0.3; none against a remote target, where isolation is
skipped unless the pool gives a second address. Every address is checked
usable before anything is sent: one this machine does not route to itself
is refused, named with its range or prefix and the command that makes it
local (docs/network.md).

An earlier run in --out that sent to the same target from the same
addresses less than a window ago is waited out first (--no-wait starts at
once); a first burst refused before the limit is reached makes the verdict
inconclusive, never a failure.

The plan's second burst, once the first has aged out of a documented
window, tells the limiter families and whether refusals count apart. When
the plan leaves a question open (two families that explain the run
equally, a longer window than the run, a check the timing left
inconclusive), verify follows up: it probes the limit address until every
rival left has shown its difference, at most until --max-duration (default
3.5 windows), and says on stderr and in run.json what it added and why.
What the follow-up cannot settle is named (model_alternatives) and left
undecided.

Check groups (--checks): limits = onset, rolling, rejected-count, shape,
headers; isolation = isolation, spoof, independence; contract = contract.

--contract FILE verifies another API's limits, said in a contract file
(docs/contract.md): each limit is probed and judged as a surface named
after it, with its route's request, its quota and its window (every limit
probed shares one), sent as the identity whose address is the limit
address (its credentials read from the environment, never archived); the
failure-table probes (contract group) are the documented API's and are not
sent. Without --target the embedded reference target serves the contract.
verify proves limits counted by client address, each over a route of its
own and refused with the status its contract names, so far; a limit of a longer window stacked on one
of them (10 a second and 1 000 an hour) is judged inconclusive, never
passed, where the run cannot reach it, saying how long a run would prove
it; a contract with another kind of limit is refused naming it (ratecheck
contract check summarises any contract).

Exit codes: 0 verified, 1 a check failed, 2 bad usage or this machine's own
limit (descriptors, local ports), 3 target unreachable or failing
(--abort-at; the verdict of what was received is still printed), 4
inconclusive, 130 or 143 interrupted (SIGINT or SIGTERM; what was received
is archived).
`

// verifyOptions are the flags of "ratecheck verify".
type verifyOptions struct {
	runFlags
	netFlags
	window time.Duration
	// maxDuration bounds the run, follow-ups included (0: 3.5 windows).
	maxDuration time.Duration
	restLimit   *int
	mcpLimit    *int
	checks      string
	sources     string
	json        bool
	report      bool
	junit       string
	timeout     time.Duration
	surfaces    string
	noWait      bool
	seed        uint64
	// contract is the limits contract file verified in place of the
	// documented API's (--contract).
	contract string
	// set are the flags given.
	set map[string]bool
}

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return verify(ctx, args, stdout, stderr, attack.Execute)
}

// executor runs a job into a run folder: attack.Execute, or a simulation
// of it on a virtual clock.
type executor func(context.Context, attack.Job, attack.Options) (*attack.Run, error)

// verify is "ratecheck verify" run by execute.
func verify(ctx context.Context, args []string, stdout, stderr io.Writer, execute executor) int {
	var o verifyOptions
	fs := o.flagSet(stderr)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	v, code := o.prepare(stderr)
	if code >= 0 {
		return code
	}
	run, runErr := execute(ctx, v.plan, v.opts)
	if run == nil || (runErr != nil && exitFor(runErr) != exitUnreachable) {
		return failed(stderr, "verify", runErr)
	}
	reportMCP(stderr, "verify", run.Info)
	sayBehind(stderr, "verify", v.plan)
	// A target that failed during the run still gets its verdict (what
	// was received is judged), and the exit code says it failed.
	return o.judge(run, v, runErr, stdout, stderr)
}

// flagSet declares the flags of verify into o.
func (o *verifyOptions) flagSet(stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("verify", "[flags]", verifyHelp, stderr)
	o.runFlags.declare(fs)
	o.netFlags.declare(fs)
	fs.DurationVar(&o.window, "window", 0, "the documented window, or the compressed window the target runs with (default 60s; 6s for the embedded target)")
	o.restLimit, o.mcpLimit = limitFlags(fs)
	fs.StringVar(&o.checks, "checks", "limits,isolation,contract", "comma-separated check `groups`: limits, isolation, contract")
	fs.StringVar(&o.sources, "sources", "", "`pool` of local addresses, ranges and prefixes (10.1.0.5, 198.18.0.10-198.18.0.250, 2001:db8:2::/112), comma-separated: its first three are the limit, isolation and contract addresses (default on IPv4 loopback: 127.0.0.1,127.0.0.2,127.0.0.3)")
	fs.BoolVar(&o.json, "json", false, "print the schema-1 JSON verdict on stdout instead of tables")
	fs.BoolVar(&o.report, "report", true, "write report.html (verdict and charts) into the run folder")
	fs.StringVar(&o.junit, "junit", "", "also write the verdict as JUnit XML to `file` (a test case per check per surface)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request timeout")
	fs.StringVar(&o.surfaces, "surfaces", "rest,mcp", "comma-separated `surfaces` to verify: rest, mcp or both")
	fs.BoolVar(&o.noWait, "no-wait", false, "start at once even when an earlier run in --out sent to this target from the same addresses within the window (default: wait until it left the window)")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the spoof probes' random order, recorded in run.json (default 0: a new one per run)")
	fs.StringVar(&o.contract, "contract", "", "verify the limits of this contract `file` (docs/contract.md) in place of the documented API's: each limit is probed as a surface named after it")
	fs.DurationVar(&o.maxDuration, "max-duration", 0, "the longest the run may take, follow-up probes included (default 3.5 windows); at 1.2 windows or less none is sent")
	return fs
}

// runSeed is the seed of the run: --seed, or a new one.
func (o *verifyOptions) runSeed() uint64 {
	if o.seed != 0 {
		return o.seed
	}
	return rand.Uint64()
}
