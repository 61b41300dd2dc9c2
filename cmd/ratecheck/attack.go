package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/redact"
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

Credential headers and query parameters (names with secret, token, key,
auth, session, password, cookie, or jwt, sig, signature: the policy of
package redact) are refused unless --allow-credentials, and so is a
--target with a query: the contract's surfaces authenticate nothing, so a
key only leaks. Their values, and the headers and cookies a target sends
back that look like credentials, are never written anywhere ([redacted]).

Exit codes: 0 done and every expect of the profile held, 1 an expect failed
or the run was interrupted, 2 bad usage or profile, 3 target unreachable or
failing (--abort-at).
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
}

func runAttack(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := attackOptions{headers: headerFlag{}}
	fs := newFlagSet("attack", "--profile FILE [flags]", attackHelp, stderr)
	fs.StringVar(&o.profile, "profile", "", "scenario `file` (required), such as profiles/rest-limit.yaml")
	o.runFlags.declare(fs)
	o.netFlags.declare(fs)
	fs.DurationVar(&o.window, "window", 0, "the run's window (default: the profile's policy window)")
	fs.Var(o.headers, "header", "extra request header 'Name: value' (repeatable)")
	fs.BoolVar(&o.allowCredentials, "allow-credentials", false, "allow credential headers and query parameters (their values are still never written)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed recorded with the run")
	fs.DurationVar(&o.timeout, "timeout", 0, "per-request timeout (default: the profile's, or 10s)")
	fs.IntVar(&o.maxRate, "max-rate", 1000, "ceiling on the requests a profile may send in any one second; raise it to run a bigger one")
	fs.DurationVar(&o.maxDuration, "max-duration", 15*time.Minute, "ceiling on how long a profile may run; raise it to run a longer one")
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
	if names := redact.Names(http.Header(o.headers)); len(names) > 0 && !o.allowCredentials {
		return usageErr(stderr, "attack", "--header %s carries a credential: the contract's surfaces authenticate nothing and a key sent to them only leaks into logs; pass --allow-credentials if you must", strings.Join(names, ", "))
	}
	prof, err := scenario.LoadProfile(o.profile)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck attack: %v\n", err)
		return exitUsage
	}
	if names := prof.HeaderCredentials(); len(names) > 0 && !o.allowCredentials {
		return usageErr(stderr, "attack", "%s: headers %s carry a credential; pass --allow-credentials if you must", o.profile, strings.Join(names, ", "))
	}
	if names := scenario.QueryCredentials(prof); len(names) > 0 && !o.allowCredentials {
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
	plan := attack.Plan{Profile: prof, Window: window, Headers: http.Header(o.headers), Timeout: o.timeout, Shard: shard, ClientVersion: version}
	var used []string
	for i := range prof.Streams {
		for _, src := range prof.StreamSources(&prof.Streams[i]) {
			if src == "" {
				src = "127.0.0.1"
			}
			used = append(used, src)
		}
	}
	// Ceilings: a profile (or a --window that compresses it) that would send
	// more than the operator allowed does not start.
	if peak := plan.PeakRate(); peak > o.maxRate {
		return usageErr(stderr, "attack", "%s at window %v sends up to %d requests in one second, above the ceiling --max-rate %d: raise --max-rate if you mean it", o.profile, window, peak, o.maxRate)
	}
	if d := plan.Duration(); d > o.maxDuration {
		return usageErr(stderr, "attack", "%s at window %v runs for %v, above the ceiling --max-duration %v: raise --max-duration if you mean it", o.profile, window, d.Round(time.Second), o.maxDuration)
	}
	nw, err := o.network(o.target)
	if err != nil {
		return usageErr(stderr, "attack", "%v", err)
	}
	plan.Network, plan.MaxWorkers, plan.Behind = nw, o.maxWorkers, &attack.Behind{}
	plan.MCP = o.mcpSession(negotiationSource(o.target, used), o.timeout, nw)
	// The embedded target takes the profile's policy limit.
	restLimit, mcpLimit := 0, 0
	switch prof.Policy.Surface {
	case method.REST:
		restLimit = prof.Policy.Limit
	case method.MCP:
		mcpLimit = prof.Policy.Limit
	}
	eng, err := o.runFlags.engine("attack", stderr, embeddedTarget(embeddedWith(window, restLimit, mcpLimit)))
	if err != nil {
		return usageErr(stderr, "attack", "%v", err)
	}
	eng.Folder, eng.Seed, eng.StartAt, eng.Network = prof.Name, o.seed, startAt, nw
	if shard.Split() {
		eng.Folder += fmt.Sprintf("-shard%dof%d", shard.I, shard.N)
	}
	outcomes := attack.Outcomes{}
	eng.Sink = outcomes.Add
	run, err := eng.Execute(ctx, plan)
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
	if p := prof.Policy; p.Limit > 0 && (p.Surface == method.REST || p.Surface == method.MCP) {
		limits[p.Surface] = p.Limit
	}
	writeRunReport("attack", run.Dir, analyze.Config{Window: window, Limits: limits, Target: run.Target, Run: run.Dir}, stdout, stderr)
	if shard.Split() {
		fmt.Fprintf(stdout, "  shard %v: the profile's expect counts are for the whole attack; analyze the merged shards\n", shard)
		return exitOK
	}
	if bad := outcomes.Check(prof); len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(stdout, "  FAIL %s\n", b)
		}
		return exitCheckFailed
	}
	return exitOK
}

// replaceSources makes every stream of p send from the addresses of list
// (comma-separated IPs), or from the machine's own address for "own".
func replaceSources(p *scenario.Profile, list string) error {
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
