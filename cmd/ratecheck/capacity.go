package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/capacity/runner"
	"github.com/connectbyjbrh/ratecheck/report"
)

const capacityHelp = `
Find the knee: the highest open-model rate the API sustains within a
latency objective (--slo) and an error budget, judged step by step from
exact confidence intervals. Rates step up geometrically from --start-rate
until a step fails, then bisect between the last passing and the first
failing rate to --precision; the knee is measured once more.

Each step is spread over enough source addresses that none sends more than
half its limit per --window: on an IPv4 loopback target from 127.0.x.y;
against a remote target from --sources, a pool of addresses, ranges and
prefixes, IPv4 and IPv6 (2001:db8:2::/112, 198.18.0.0/16), of which the
search takes the first the highest rate needs, in order. A pool too small
is refused with exit 2 and the number needed; every address is checked
usable before anything is sent, and one this machine does not route to
itself is refused with its range or prefix and the command that makes it
local (docs/network.md). A 429 is the limiter engaging below its
documented rate: a finding, never capacity. --through-limit measures the
limiter itself from one address.

Latency is measured from each request's intended send time (the
uncorrected figure beside it); a step whose requests did not go out on
schedule is the generator's limit (client), never the API's. The run is
archived as results/<time>-capacity/; analyze re-judges it, compare of two
capacity runs says how the knee moved, and history trends the knee of
runs with a --label. --metrics writes the verdict, the knee, its interval
and the quantile at the knee for a dashboard. See docs/capacity.md.

--shard i/n runs shard i of the same search sent by n processes in
lockstep (on machines of their own, each from its own --sources; or on one
host, sharing one pool with --shared-sources, each from its every n-th
address): every shard sends 1/n of each step, reports its samples in the
shared --rendezvous directory and waits for the others', and all judge the
merged step alike; steps start at agreed times from --start-at. A shard
missing at a step's end (plus --timeout and --rendezvous-slack) ends the
run with exit 2. analyze of all the shards' run folders judges them again.

Without --target the embedded reference target is started with a pool of
10 workers of 20 ms each (capacity 500/s) and a 1 s window.

--contract FILE --route NAME loads a route of a limits contract instead of
the documented search: each step is spread under the route's limit as that
limit counts, over addresses for a client-address key, and over the
identities that carry the key for a header key (an API key each: a pool
too small is refused with the number of keys needed); without --target the
embedded target serves the contract with the pool above.

Exit codes: 0 found (and at or above --expect-rate), 1 below --expect-rate
or not found, 2 bad usage, too few --sources or a shard that did not
report, 3 target unreachable or
failing from the start, 4 inconclusive (the generator's limit, a 429, or
undecided).
`

// capacityOptions are the flags of "ratecheck capacity".
type capacityOptions struct {
	runFlags
	capacityOut
	capacityShard
	slo, errorBudget, sources   string
	startRate, maxRate, prec    float64
	step, warmup, maxStep, wind time.Duration
	timeout, maxLateness        time.Duration
	throughLimit, sharedSources bool
	maxWorkers, seed            uint64
	// contract and route, when given, are the contract file and the route
	// of it the search loads (see capacityContract).
	contract, route string
	set             map[string]bool
}

func runCapacity(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o capacityOptions
	fs := o.flagSet(stderr)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	job, opts, code := o.prepare(stderr)
	if code >= 0 {
		return code
	}
	run, err := attack.Execute(ctx, job, opts)
	if run == nil {
		return failed(stderr, "capacity", err)
	}
	o.dir, o.capacityOut.target = run.Dir, run.Target
	res := job.Result()
	code = o.print(res, stdout, stderr)
	m := report.CapacityMetrics(run.Info, o.surface, res)
	if err != nil {
		return failed(stderr, "capacity", err)
	}
	if !saveMetrics("capacity", o.metrics, &m, run.Dir, stderr) {
		return exitUsage
	}
	return code
}

// flagSet declares the flags of capacity into o.
func (o *capacityOptions) flagSet(stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("capacity", "--slo pNN<=DURATION [flags]", capacityHelp, stderr)
	o.runFlags.declare(fs)
	fs.Lookup("target").Usage = "base `URL` of the target (default: the embedded reference target with a worker pool)"
	// Failures are what a search measures (--error-budget): a failing
	// step ends it, so it adds load to a failing target only if asked.
	o.abortAt = "0"
	fs.Lookup("abort-at").DefValue = "0"
	fs.Lookup("abort-at").Usage = "stop adding load when more than this `share` of the last 100 results were transport errors or 5xx (default 0: never; a step past --error-budget fails and ends the search anyway)"
	fs.StringVar(&o.surface, "surface", "rest", "the `surface` to load: rest or mcp")
	fs.StringVar(&o.slo, "slo", "", "latency `objective` (required), such as p99<=100ms or p95<=80ms")
	fs.StringVar(&o.errorBudget, "error-budget", "1%", "the `share` of requests that may fail (any non-2xx, a 429 included), such as 0.01 or 1%")
	fs.Float64Var(&o.startRate, "start-rate", 100, "the first `rate`, requests per second")
	fs.Float64Var(&o.maxRate, "max-rate", 10000, "the highest `rate` the search may offer, requests per second")
	fs.Float64Var(&o.prec, "precision", 0.05, "how close the last passing and the first failing rate must come (a `share`)")
	fs.DurationVar(&o.step, "step", 5*time.Second, "the judged `length` of a step")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "the unjudged start of every step (negative: none)")
	fs.DurationVar(&o.maxStep, "max-step", 0, "the longest an undecided step is lengthened to (default 3 × --step)")
	fs.DurationVar(&o.wind, "window", 0, "the limits' window (default: 60s, or 1s for the embedded target)")
	fs.StringVar(&o.sources, "sources", "", "`pool` of local addresses, ranges and prefixes to send from, comma-separated, such as 2001:db8:2::/112: the first the highest rate needs (default on IPv4 loopback: 127.0.x.y as many as needed)")
	fs.BoolVar(&o.sharedSources, "shared-sources", false, "with --shard i/n: --sources is the whole search's pool, shared by the shards on this host: shard i sends from every n-th address from the i-th (k8s-job --sources passes it)")
	fs.StringVar(&o.contract, "contract", "", "a limits contract `file`: load its --route, spread over the addresses or the API keys its limit counts by (docs/capacity.md)")
	fs.StringVar(&o.route, "route", "", "the `name` of the contract's route to load (with --contract)")
	fs.BoolVar(&o.throughLimit, "through-limit", false, "measure the limiter itself from one address: a 429 is an answer, not a failure")
	fs.Float64Var(&o.expectRate, "expect-rate", 0, "exit 1 unless the knee is at or above this `rate` per second")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON (docs/schema/capacity.json) on stdout instead of the table")
	fs.StringVar(&o.junit, "junit", "", "also write the knee as JUnit XML to `file` (one test case)")
	fs.BoolVar(&o.report, "report", true, "write report.html (throughput and the quantile against offered rate) into the run folder")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request timeout")
	fs.DurationVar(&o.maxLateness, "max-lateness", 10*time.Millisecond, "a step counts only if the p99 of its requests' lateness is within this (negative: off, all lateness charged to the API)")
	fs.Uint64Var(&o.maxWorkers, "max-workers", 0, "cap on the requests each source has in flight (0: none, the open model)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the model's bootstrap, recorded with the run")
	o.capacityShard.declare(fs)
	return fs
}

// search is the search the flags ask for.
func (o *capacityOptions) search() (capacity.Options, error) {
	slo, err := capacity.ParseSLO(o.slo)
	if err != nil {
		return capacity.Options{}, asFlag(err, "--slo")
	}
	budget, err := capacity.ParseErrorBudget(o.errorBudget)
	if err != nil {
		return capacity.Options{}, asFlag(err, "--error-budget")
	}
	return capacity.Options{Objective: capacity.Objective{SLO: slo, ErrorBudget: budget}, StartRate: o.startRate,
		MaxRate: o.maxRate, Precision: o.prec, Step: o.step, Warmup: o.warmup, MaxStep: o.maxStep, MaxLateness: o.maxLateness, Seed: o.seed}, nil
}

// asFlag says a library's bad value as the flag it came from: `--slo
// "p99<100ms": want …`.
func asFlag(err error, flag string) error {
	var ve *capacity.ValueError
	if errors.As(err, &ve) {
		return fmt.Errorf("%s %q: %s", flag, ve.Value, ve.Want)
	}
	return err
}

var _ attack.Job = (*runner.Job)(nil)
