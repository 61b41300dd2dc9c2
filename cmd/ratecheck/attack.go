package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/method"
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

--sources replaces the profile's sources with a pool of addresses, ranges
and prefixes, IPv4 and IPv6 (10.1.0.5, 198.18.0.10-198.18.0.250,
2001:db8:2::/116): every stream sends from each address, so a pool names at
most 4096. Every address is checked usable before anything is sent, and one
this machine does not route to itself is refused with its range or prefix
and the command that makes it local (docs/network.md); a profile's sources
may be ranges and prefixes too.

Credential headers and query parameters (names with secret, token, key,
auth, session, password, cookie, or jwt, sig, signature: the policy of
package redact) are refused unless --allow-credentials, and so is a
--target with a query: the contract's surfaces authenticate nothing, so a
key only leaks. Their values, and the headers and cookies a target sends
back that look like credentials, are never written anywhere ([redacted]).

Exit codes: 0 done and every expect of the profile held, 1 an expect failed,
2 bad usage, profile or this machine's own limit (descriptors, local ports),
3 target unreachable or failing (--abort-at), 130 or 143 interrupted (SIGINT
or SIGTERM; what was received is archived).
`

// attackOptions are the flags of "ratecheck attack".
type attackOptions struct {
	runFlags
	netFlags
	profile          string
	window           time.Duration
	headers          headerFlag
	allowCredentials bool
	seed             uint64
	timeout          time.Duration
	maxRate          int
	maxDuration      time.Duration
	shard            string
	startAt          string
	sources          string
	pool             client.Pool // --sources, once read
}

func runAttack(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return attackBy(ctx, args, stdout, stderr, attack.Execute)
}

// attackBy is "ratecheck attack" run by execute.
func attackBy(ctx context.Context, args []string, stdout, stderr io.Writer, execute executor) int {
	o := attackOptions{headers: headerFlag{}}
	if code := parseFlags(o.flagSet(stderr), args); code >= 0 {
		return code
	}
	plan, opts, code := o.prepare(stderr)
	if code >= 0 {
		return code
	}
	outcomes := attack.Outcomes{}
	opts.Sink = outcomes.Add
	run, err := execute(ctx, plan, opts)
	if run == nil {
		return failed(stderr, "attack", err)
	}
	fmt.Fprintf(stdout, "archived %d results in %s (%v)\n  %s\n", run.Results, run.Dir, run.Took.Round(time.Millisecond), run.Counts.String())
	reportMCP(stderr, "attack", run.Info)
	sayBehind(stderr, "attack", plan)
	if err != nil {
		return failed(stderr, "attack", err)
	}
	limits := map[string]int{method.REST: method.RESTLimit, method.MCP: method.MCPLimit}
	if p := plan.Profile.Policy; p.Limit > 0 && (p.Surface == method.REST || p.Surface == method.MCP) {
		limits[p.Surface] = p.Limit
	}
	rep := writeRunReport("attack", run.Dir, analyze.Overrides{Window: plan.Window, Limits: limits}, stdout, stderr)
	if !saveMetrics("attack", o.metrics, attackMetrics(run, rep), run.Dir, stderr) {
		return exitUsage
	}
	if plan.Shard.Split() {
		fmt.Fprintf(stdout, "  shard %v: the profile's expect counts are for the whole attack; analyze the merged shards\n", plan.Shard)
		return exitOK
	}
	if bad := outcomes.Check(plan.Profile); len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(stdout, "  FAIL %s\n", b)
		}
		return exitCheckFailed
	}
	return exitOK
}

// flagSet declares the flags of attack into o.
func (o *attackOptions) flagSet(stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("attack", "--profile FILE [flags]", attackHelp, stderr)
	fs.StringVar(&o.profile, "profile", "", "scenario `file` (required), such as profiles/rest-limit.yaml")
	o.runFlags.declare(fs)
	o.netFlags.declare(fs)
	fs.DurationVar(&o.window, "window", 0, "the run's window (default: the profile's policy window)")
	fs.Var(o.headers, "header", "extra request header 'Name: value' (repeatable)")
	fs.BoolVar(&o.allowCredentials, "allow-credentials", false, "allow credential headers and query parameters (their values are still never written)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed recorded with the run")
	fs.DurationVar(&o.timeout, "timeout", 0, "per-request timeout (default: the profile's, or 10s)")
	fs.IntVar(&o.maxRate, "max-rate", scenario.DefaultCeilings.Rate, "ceiling on the requests a profile may send in any one second; raise it to run a bigger one")
	fs.DurationVar(&o.maxDuration, "max-duration", scenario.DefaultCeilings.Duration, "ceiling on how long a profile may run; raise it to run a longer one")
	fs.StringVar(&o.sources, "sources", "", "`pool` of local addresses, ranges and prefixes (at most 4096 addresses), comma-separated, replacing the profile's sources; or own: the machine's own address")
	fs.StringVar(&o.shard, "shard", "", "send only part `i/n` of the attack, such as 0/3 (with --target; see deploy/kubernetes)")
	fs.StringVar(&o.startAt, "start-at", "", "wait until this RFC 3339 `instant` to start, such as 2026-11-30T09:00:00Z (the shards' agreed start)")
	return fs
}

// headerFlag collects repeated --header 'K: V' flags.
type headerFlag http.Header

func (h headerFlag) String() string { return "" }

func (h headerFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, ":")
	k = strings.TrimSpace(k)
	if !ok || k == "" || strings.ContainsAny(k, " \t") {
		return fmt.Errorf("want 'Name: value', got %q", s)
	}
	http.Header(h).Add(k, strings.TrimSpace(v))
	return nil
}
