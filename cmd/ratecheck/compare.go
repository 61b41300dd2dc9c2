package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/report"
)

const compareHelp = `
Compare a run with a baseline run, for capacity planning and release gates:
side by side per surface, request rate, throughput, latency percentiles,
observed limit, limiter model and verdict.

It exits 1 when something regressed: a verdict that went from pass to fail
or inconclusive, an observed limit or a limiter model that changed, a
surface missing from the run (all exact), or a p99 that rose by more than
--max-p99-increase beyond what chance explains. The p99 of a few hundred
requests is a handful of them, often sent at one moment (a burst, a stall
of the host), and two runs of one build against one target differ by tens
of percent and more. So each run's timeline is cut into 32 slices, slice k
of the run is paired with slice k of the baseline, and the p99 ratio is
set against those of runs made by swapping random pairs (2000, seeded: one
pair of runs gets one answer). Its 98 % interval holds the ratios θ for
which "the run is the baseline × θ" is not rejected; a rise counts only
when the interval lies above 1 + --max-p99-increase and the rise it is
sure of, (lower end − 1) × the baseline's p99, is at least --p99-floor.
Each run is judged with the window its run.json recorded and the
documented limits. Keep baselines as results/README.md explains.

Two capacity run folders are compared by their knees: the change, and
whether the two brackets separate (a lower knee apart from the baseline's
is a regression; a run without a knee exits 4); two searches of different
contracts, loads or objectives are not comparable (exit 2).

Two runs made in different ways (another command, limits contract, window,
surfaces or target; two runs of the embedded target have one target) are not
comparable: compare warns, lists their differences as notes, not
regressions, and exits 2.

A surface one run could not show the limiter of (its address had spent
its budget just before, the API was not there: the run's missing
evidence) has its limit, model and verdict left out: a change there is a
note naming why, not a regression, and with no regression elsewhere the
comparison is inconclusive (exit 4), never a pass.

Exit codes: 0 no regression, 1 a regression, 2 bad usage, unreadable input
or runs that are not comparable, 4 a run that could not show the limiter
of a surface, or a capacity run without a knee, 130 or 143 interrupted
(SIGINT or SIGTERM).
`

func runCompare(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		maxP99 string
		floor  time.Duration
		asJSON bool
		window time.Duration
	)
	fs := newFlagSet("compare", "[flags] BASELINE RUN", compareHelp, stderr)
	fs.StringVar(&maxP99, "max-p99-increase", "10%", "the largest p99 rise allowed per surface, in `percent`")
	fs.DurationVar(&floor, "p99-floor", time.Millisecond, "the least p99 rise that can count as a regression (the rise the interval is sure of)")
	fs.BoolVar(&asJSON, "json", false, "print the comparison as JSON on stdout instead of a table")
	fs.DurationVar(&window, "window", 0, "the window the runs were made with (default: each run.json's, else 60s)")
	restLimitP, mcpLimitP := limitFlags(fs)
	if code := parseArgs(fs, args); code >= 0 {
		return code
	}
	restLimit, mcpLimit := *restLimitP, *mcpLimitP
	if err := checkLimits(restLimit, mcpLimit, window); err != nil {
		return usageErr(stderr, "compare", "%v", err)
	}
	if fs.NArg() != 2 {
		return usageErr(stderr, "compare", "name a baseline and a run (run folders or results files)")
	}
	limit, err := parsePercent(maxP99)
	if err != nil {
		return usageErr(stderr, "compare", "--max-p99-increase %q: %v", maxP99, err)
	}
	if floor < 0 {
		return usageErr(stderr, "compare", "--p99-floor must not be negative")
	}
	if isCapacityRun(fs.Arg(0)) && isCapacityRun(fs.Arg(1)) {
		return compareCapacity(fs.Args(), asJSON, stdout, stderr)
	}
	var sums [2]analyze.RunSummary
	for i, path := range fs.Args() {
		in, err := analyze.Read([]string{path})
		if err != nil {
			fmt.Fprintf(stderr, "ratecheck compare: %v\n", err)
			return exitUsage
		}
		cfg := analysisConfig(&in.Meta, window, restLimit, mcpLimit, nil, path)
		rep, err := analyze.Analyze(in, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "ratecheck compare: %v\n", err)
			return exitUsage
		}
		sums[i] = analyze.Summarize(in, rep)
	}
	c := analyze.Compare(sums[0], sums[1], analyze.CompareOptions{MaxP99Increase: limit, P99Floor: floor})
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = report.CompareTable(stdout, c)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck compare: writing the comparison: %v\n", err)
		return exitUsage
	}
	switch c.Verdict {
	case analyze.Incomparable:
		fmt.Fprintf(stderr, "ratecheck compare: %s and %s were made in different ways (%s): their differences are not regressions; compare runs made the same way\n",
			fs.Arg(0), fs.Arg(1), strings.Join(c.Incomparable, "; "))
		return exitUsage
	case analyze.Fail:
		return exitCheckFailed
	case analyze.Inconclusive:
		fmt.Fprintf(stderr, "ratecheck compare: %s: the limit, model and verdict there are not compared; compare runs that showed the limiter\n", strings.Join(c.Unjudged, "; "))
		return exitInconclusive
	}
	return exitOK
}

// parsePercent reads "10%" or "10" as 0.10.
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("want a percentage such as 10%%")
	}
	return v / 100, nil
}
