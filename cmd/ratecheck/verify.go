package main

import (
	"context"
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
compressed to 6s (unless --window is given), so a verdict takes seconds.

--sources names the limit address, a second address for isolation, and a
third for the contract probes (default on a loopback target: 127.0.0.1,
127.0.0.2, 127.0.0.3; none against a remote target, where isolation is
skipped). An address this machine does not have is refused before anything
is sent.

When two limiter families explain the run equally (model_alternatives),
--discriminate adds one window of probes that tells them apart.

Check groups (--checks): limits = onset, rolling, rejected-count, shape;
isolation = isolation, spoof, independence; contract = contract.

Exit codes: 0 verified, 1 a check failed, 2 bad usage, 3 target unreachable
or failing (--abort-at; the verdict of what was received is still printed),
4 inconclusive.
`

// verifyOptions are the flags of "ratecheck verify".
type verifyOptions struct {
	runFlags
	netFlags
	window    time.Duration
	restLimit *int
	mcpLimit  *int
	checks    string
	sources   string
	json      bool
	report    bool
	junit     string
	timeout   time.Duration
	surfaces  string
	discrim   bool
}

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o verifyOptions
	fs := newFlagSet("verify", "[flags]", verifyHelp, stderr)
	o.runFlags.declare(fs)
	o.netFlags.declare(fs)
	fs.DurationVar(&o.window, "window", 0, "the documented window, or the compressed window the target runs with (default 60s; 6s for the embedded target)")
	o.restLimit, o.mcpLimit = limitFlags(fs)
	fs.StringVar(&o.checks, "checks", "limits,isolation,contract", "comma-separated check `groups`: limits, isolation, contract")
	fs.StringVar(&o.sources, "sources", "", "comma-separated local `addresses`: limit, isolation, contract (default on loopback: 127.0.0.1,127.0.0.2,127.0.0.3)")
	fs.BoolVar(&o.json, "json", false, "print the schema-1 JSON verdict on stdout instead of tables")
	fs.BoolVar(&o.report, "report", true, "write report.html (verdict and charts) into the run folder")
	fs.StringVar(&o.junit, "junit", "", "also write the verdict as JUnit XML to `file` (a test case per check per surface)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request timeout")
	fs.StringVar(&o.surfaces, "surfaces", "rest,mcp", "comma-separated `surfaces` to verify: rest, mcp or both")
	fs.BoolVar(&o.discrim, "discriminate", false, "add a window of probes that tells limiter families apart when the run cannot (see model_alternatives)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	restLimit, mcpLimit := *o.restLimit, *o.mcpLimit
	if err := checkLimits(restLimit, mcpLimit, o.window); err != nil {
		return usageErr(stderr, "verify", "%v", err)
	}
	if o.timeout <= 0 {
		return usageErr(stderr, "verify", "--timeout must be positive, got %v", o.timeout)
	}
	if err := checkOutFile("--junit", o.junit); err != nil {
		return usageErr(stderr, "verify", "%v", err)
	}
	groups, checks, err := parseChecks(o.checks)
	if err != nil {
		return usageErr(stderr, "verify", "--checks: %v", err)
	}
	surfaces, err := parseList(o.surfaces)
	if err == nil && len(surfaces) == 0 {
		err = fmt.Errorf("name rest, mcp or both")
	}
	for _, sf := range surfaces {
		if sf != method.REST && sf != method.MCP {
			err = fmt.Errorf("unknown surface %q (want rest, mcp or rest,mcp)", sf)
		}
	}
	if err != nil {
		return usageErr(stderr, "verify", "--surfaces: %v", err)
	}
	window := o.runFlags.window(o.window, time.Minute, 6*time.Second)
	sources, err := parseAddresses(o.sources)
	if err != nil {
		return usageErr(stderr, "verify", "--sources: %v", err)
	}
	if o.sources == "" && attack.IsLoopback(o.target) {
		sources = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	}
	prof, err := scenario.VerifyProfile(scenario.VerifyOptions{RESTLimit: restLimit, MCPLimit: mcpLimit, Sources: sources, Surfaces: surfaces,
		Limits: slices.Contains(groups, "limits"), Isolation: slices.Contains(groups, "isolation"), Contract: slices.Contains(groups, "contract"),
		Discriminate: o.discrim})
	if err != nil {
		return usageErr(stderr, "verify", "%v", err)
	}
	nw, err := o.network(o.target)
	if err != nil {
		return usageErr(stderr, "verify", "%v", err)
	}
	plan := attack.Plan{Profile: prof, Window: window, Timeout: o.timeout, ClientVersion: version, Network: nw, MaxWorkers: o.maxWorkers, Behind: &attack.Behind{}}
	if slices.Contains(surfaces, method.MCP) {
		// Negotiation goes out from the contract address, as the profile
		// sends the contract probes; when that is the limit address too,
		// the run waits a window for the handshake to leave it.
		from := ""
		if len(sources) > 0 {
			from = sources[min(2, len(sources)-1)]
		}
		plan.MCP = o.mcpSession(from, o.timeout, nw)
		if len(sources) < 2 && (slices.Contains(groups, "limits") || slices.Contains(groups, "isolation")) {
			plan.MCP.Settle = window
		}
	}
	eng, err := o.runFlags.engine("verify", stderr, embeddedTarget(embeddedWith(window, restLimit, mcpLimit)))
	if err != nil {
		return usageErr(stderr, "verify", "%v", err)
	}
	eng.Folder, eng.Seed, eng.Network = prof.Name, 1, nw
	eng.Announce = fmt.Sprintf("probing %s for about %v (window %v)", strings.Join(surfaces, " and "), plan.Duration().Round(100*time.Millisecond), window)
	run, runErr := eng.Execute(ctx, plan)
	if run == nil || (runErr != nil && exitFor(runErr) != exitUnreachable) {
		return failed(stderr, "verify", runErr)
	}
	reportMCP(stderr, "verify", run.Info)
	sayBehind(stderr, "verify", plan)
	// A target that failed during the run still gets its verdict (what
	// was received is judged), and the exit code says it failed.
	code := exitOK
	if runErr != nil {
		code = failed(stderr, "verify", runErr)
	}
	in, err := analyze.Read([]string{run.Dir})
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck verify: reading %s: %v\n", run.Dir, err)
		return exitUsage
	}
	info := run.Info
	info.Dir = run.Dir
	cfg := analyze.Config{Window: window, Limits: map[string]int{method.REST: restLimit, method.MCP: mcpLimit},
		Checks: checks, Target: run.Target, Run: run.Dir, Surfaces: surfaces, MCPRevision: run.Info.MCPRevision,
		Warnings: runWarnings(info)}
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
	if code != exitOK {
		return code
	}
	return verdict
}

// allAbsent reports whether the API is absent from every surface judged.
func allAbsent(rep *analyze.Report) bool {
	for _, d := range rep.Surfaces {
		if !d.Absent {
			return false
		}
	}
	return len(rep.Surfaces) > 0
}

// printVerdict writes the report as tables or JSON and returns the exit code.
func printVerdict(rep *analyze.Report, asJSON bool, stdout, stderr io.Writer) int {
	var err error
	if asJSON {
		// stdout is schema 1 exactly; what a person should know goes to stderr.
		for _, note := range rep.Notes {
			fmt.Fprintf(stderr, "note: %s\n", note)
		}
		for _, warn := range rep.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", warn)
		}
		err = report.JSON(stdout, rep)
	} else {
		err = report.Tables(stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck: writing the verdict: %v\n", err)
		return exitUsage
	}
	return verdictExit(rep.Verdict.Verdict)
}

// parseChecks turns --checks groups into group names and check names.
func parseChecks(s string) (groups, checks []string, err error) {
	groups, err = parseList(s)
	if err != nil {
		return nil, nil, err
	}
	if len(groups) == 0 {
		return nil, nil, fmt.Errorf("name at least one group: limits, isolation, contract")
	}
	for _, g := range groups {
		names, ok := method.CheckGroups()[g]
		if !ok {
			return nil, nil, fmt.Errorf("unknown group %q (want limits, isolation or contract)", g)
		}
		checks = append(checks, names...)
	}
	return groups, checks, nil
}
