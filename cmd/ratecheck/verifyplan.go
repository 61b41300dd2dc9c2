package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/report"
)

// verifyRun is a run of verify as its flags planned it: the probe plan,
// the engine's options, and what the verdict judges.
type verifyRun struct {
	plan             attack.Plan
	opts             attack.Options
	checks, surfaces []string
}

// prepare checks the flags of verify and plans its run; code is -1 to go
// on, else the exit code (the reason said on stderr).
func (o *verifyOptions) prepare(stderr io.Writer) (v verifyRun, code int) {
	fail := func(format string, args ...any) (verifyRun, int) {
		return v, usageErr(stderr, "verify", format, args...)
	}
	restLimit, mcpLimit := *o.restLimit, *o.mcpLimit
	if err := checkLimits(restLimit, mcpLimit, o.window); err != nil {
		return fail("%v", err)
	}
	if o.timeout <= 0 {
		return fail("--timeout must be positive, got %v", o.timeout)
	}
	if err := checkOutFile("--junit", o.junit); err != nil {
		return fail("%v", err)
	}
	groups, checks, err := parseChecks(o.checks)
	if err != nil {
		return fail("--checks: %v", err)
	}
	surfaces, err := parseSurfaces(o.surfaces)
	if err != nil {
		return fail("--surfaces: %v", err)
	}
	window := o.runFlags.window(o.window, time.Minute, 6*time.Second)
	sources, err := parseAddresses(o.sources)
	if err != nil {
		return fail("--sources: %v", err)
	}
	if o.sources == "" && attack.IsLoopback(o.target) {
		sources = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	}
	seed := o.runSeed()
	prof, err := scenario.VerifyProfile(scenario.VerifyOptions{RESTLimit: restLimit, MCPLimit: mcpLimit, Sources: sources, Surfaces: surfaces,
		Limits: slices.Contains(groups, "limits"), Isolation: slices.Contains(groups, "isolation"), Contract: slices.Contains(groups, "contract"),
		Discriminate: o.discrim, Seed: seed})
	if err != nil {
		return fail("%v", err)
	}
	nw, err := o.network(o.target)
	if err != nil {
		return fail("%v", err)
	}
	contract := "" // the contract address: the last of the three, or the only one
	if len(sources) > 0 {
		contract = sources[min(2, len(sources)-1)]
	}
	plan := attack.Plan{Profile: prof, Window: window, Timeout: o.timeout, ClientVersion: version, Network: nw, MaxWorkers: o.maxWorkers, Behind: &attack.Behind{}}
	if slices.Contains(surfaces, method.MCP) {
		// Negotiation goes out from the contract address, as the profile
		// sends the contract probes; when that is the limit address too,
		// the run waits a window for the handshake to leave it.
		plan.MCP = o.mcpSession(contract, o.timeout, nw)
		if len(sources) < 2 && (slices.Contains(groups, "limits") || slices.Contains(groups, "isolation")) {
			plan.MCP.Settle = window
		}
	}
	opts, err := o.runFlags.options("verify", stderr, embeddedTarget(o.withFaults(embeddedWith(window, restLimit, mcpLimit))))
	if err != nil {
		return fail("%v", err)
	}
	opts.Folder, opts.Seed, opts.Network, opts.Fresh, opts.NoWait = prof.Name, seed, nw, window, o.noWait
	opts.ReachFrom = contract // the reachability check spends nothing of the limit address's budget
	opts.Events = engineEvents(stderr, "verify", fmt.Sprintf("probing %s for about %v (window %v)", strings.Join(surfaces, " and "), plan.Duration().Round(100*time.Millisecond), window))
	return verifyRun{plan: plan, opts: opts, checks: checks, surfaces: surfaces}, -1
}

// judge analyzes the run, writes its report and verdict, and returns the
// exit code: code, the run's own, when it is not exitOK, else the
// verdict's.
func (o *verifyOptions) judge(run *attack.Run, v verifyRun, code int, stdout, stderr io.Writer) int {
	in, err := analyze.Read([]string{run.Dir})
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck verify: reading %s: %v\n", run.Dir, err)
		return exitUsage
	}
	cfg := configFor(&in.Meta, analyze.Overrides{Window: v.plan.Window, Limits: limitsOf(*o.restLimit, *o.mcpLimit),
		Checks: v.checks, Surfaces: v.surfaces, Path: run.Dir})
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck verify: %v\n", err)
		return exitUsage
	}
	if o.report {
		path := filepath.Join(run.Dir, report.HTMLFile)
		if err := writeReport(path, in, rep, cfg); err != nil {
			fmt.Fprintf(stderr, "ratecheck verify: writing the report: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "ratecheck verify: report %s\n", path)
		}
	}
	verdict := printVerdict(rep, o.json, stdout, stderr)
	if code == exitUnreachable && allAbsent(rep) {
		// A target without the API fails the probes (404, 501) rather
		// than failing itself: that is what to fix, and the verdict says so.
		fmt.Fprintf(stderr, "ratecheck verify: the API is not there on %s: the probes' errors are its answers, not a failing target\n", run.Target)
		code = exitOK
	}
	if err := writeJUnit(o.junit, "ratecheck verify", report.VerdictSuites(rep)); err != nil {
		fmt.Fprintf(stderr, "ratecheck verify: --junit: %v (the run is kept in %s)\n", err, run.Dir)
		return exitUsage
	}
	if !saveMetrics("verify", o.metrics, ptrTo(report.VerdictMetrics(run.Info, rep, true)), run.Dir, stderr) {
		return exitUsage
	}
	if code != exitOK {
		return code
	}
	return verdict
}
