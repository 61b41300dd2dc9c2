package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/report"
)

const verifyHelp = `
Prove, from the outside, that the target's rate limits hold as documented:
240 REST requests and 120 MCP calls per rolling window per client address,
refused requests counted, each address its own budget, forged forwarding
headers ignored, the two surfaces counted apart, and every failure-table row
answered as documented.

verify runs the probe plan of docs/method.md on both surfaces in parallel
(about 1.2 windows), archives it like attack, analyzes it and prints a table
of checks per surface (or schema-1 JSON with --json). Latency never causes a
false alarm: a request whose outcome the timing cannot decide is reported as
indeterminate, never failed.

Without --target the embedded reference target is started with the window
compressed to 6s (unless --window is given), so a verdict takes seconds.

--sources names the limit address, a second address for isolation, and a
third for the contract probes (default on a loopback target: 127.0.0.1,
127.0.0.2, 127.0.0.3; none against a remote target, where isolation is
skipped).

Check groups (--checks): limits = onset, rolling, rejected-count, shape;
isolation = isolation, spoof, independence; contract = contract.

Exit codes: 0 verified, 1 a check failed, 2 bad usage, 3 target unreachable
or failing (--abort-at).
`

// verifyOptions are the flags of "ratecheck verify".
type verifyOptions struct {
	target    string
	window    time.Duration
	restLimit int
	mcpLimit  int
	checks    string
	sources   string
	json      bool
	out       string
	report    bool
	abortAt   string
	junit     string
	timeout   time.Duration
}

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o verifyOptions
	fs := newFlagSet("verify", "[flags]", verifyHelp, stderr)
	fs.StringVar(&o.target, "target", "", "base `URL` of the target (default: the embedded reference target)")
	fs.DurationVar(&o.window, "window", 0, "the documented window, or the compressed window the target runs with (default 60s; 6s for the embedded target)")
	fs.IntVar(&o.restLimit, "rest-limit", 240, "documented REST requests per window and address")
	fs.IntVar(&o.mcpLimit, "mcp-limit", 120, "documented MCP calls per window and address")
	fs.StringVar(&o.checks, "checks", "limits,isolation,contract", "comma-separated check `groups`: limits, isolation, contract")
	fs.StringVar(&o.sources, "sources", "", "comma-separated local `addresses`: limit, isolation, contract (default on loopback: 127.0.0.1,127.0.0.2,127.0.0.3)")
	fs.BoolVar(&o.json, "json", false, "print the schema-1 JSON verdict on stdout instead of tables")
	fs.StringVar(&o.out, "out", "results", "`dir`ectory the run folder is written under")
	fs.BoolVar(&o.report, "report", true, "write report.html (verdict and charts) into the run folder")
	fs.StringVar(&o.abortAt, "abort-at", "50%", "stop adding load when more than this `share` of the last 100 results were transport errors or 5xx (0: never)")
	fs.StringVar(&o.junit, "junit", "", "also write the verdict as JUnit XML to `file` (a test case per check per surface)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "per-request timeout")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if err := checkLimits(o.restLimit, o.mcpLimit, o.window); err != nil {
		return usageErr(stderr, "verify", "%v", err)
	}
	if o.timeout <= 0 {
		return usageErr(stderr, "verify", "--timeout must be positive, got %v", o.timeout)
	}
	if o.target != "" { // before anything is announced
		if _, err := checkTarget(o.target); err != nil {
			return usageErr(stderr, "verify", "%v", err)
		}
	}
	if err := checkOutFile("--junit", o.junit); err != nil {
		return usageErr(stderr, "verify", "%v", err)
	}
	abortShare, err := parsePercent(o.abortAt)
	if err != nil || abortShare > 1 {
		return usageErr(stderr, "verify", "--abort-at %q: want a share such as 50%% (0 never aborts)", o.abortAt)
	}
	groups, checks, err := parseChecks(o.checks)
	if err != nil {
		return usageErr(stderr, "verify", "--checks: %v", err)
	}
	window := o.window
	if window == 0 {
		window = time.Minute
		if o.target == "" {
			window = 6 * time.Second
		}
	}
	sources, err := parseAddresses(o.sources)
	if err != nil {
		return usageErr(stderr, "verify", "--sources: %v", err)
	}
	if o.sources == "" && isLoopbackTarget(o.target) {
		sources = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	}
	prof, err := attack.VerifyProfile(attack.VerifyOptions{RESTLimit: o.restLimit, MCPLimit: o.mcpLimit, Sources: sources,
		Limits: slices.Contains(groups, "limits"), Isolation: slices.Contains(groups, "isolation"), Contract: slices.Contains(groups, "contract")})
	if err != nil {
		return usageErr(stderr, "verify", "%v", err)
	}
	plan := attack.Plan{Profile: prof, Window: window, Timeout: o.timeout, AbortShare: abortShare}
	fmt.Fprintf(stderr, "ratecheck verify: probing both surfaces for about %v (window %v)\n", plan.Duration().Round(100*time.Millisecond), window)
	run, code := execute(ctx, "verify", plan, o.target, o.restLimit, o.mcpLimit, o.out, 1, stderr)
	if run == nil || code != exitOK {
		return code
	}
	in, err := analyze.Read([]string{run.dir})
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck verify: reading %s: %v\n", run.dir, err)
		return exitUsage
	}
	cfg := analyze.Config{Window: window, Limits: map[string]int{analyze.REST: o.restLimit, analyze.MCP: o.mcpLimit},
		Checks: checks, Target: run.target, Run: run.dir}
	rep := analyze.Analyze(in, cfg)
	if o.report {
		path := filepath.Join(run.dir, report.HTMLFile)
		if err := writeReport(path, in, rep, cfg); err != nil {
			fmt.Fprintf(stderr, "ratecheck verify: writing the report: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "ratecheck verify: report %s\n", path)
		}
	}
	code = printVerdict(rep, o.json, stdout, stderr)
	if err := writeJUnit(o.junit, "ratecheck verify", report.VerdictSuites(rep)); err != nil {
		fmt.Fprintf(stderr, "ratecheck verify: --junit: %v (the run is kept in %s)\n", err, run.dir)
		return exitUsage
	}
	return code
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
	if rep.Verdict.Verdict != analyze.Pass {
		return exitCheckFailed
	}
	return exitOK
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
		names, ok := analyze.CheckGroups[g]
		if !ok {
			return nil, nil, fmt.Errorf("unknown group %q (want limits, isolation or contract)", g)
		}
		checks = append(checks, names...)
	}
	return groups, checks, nil
}

// isLoopbackTarget reports whether a --target (empty: embedded) is on loopback.
func isLoopbackTarget(target string) bool {
	if target == "" {
		return true
	}
	u, err := url.Parse(target)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
