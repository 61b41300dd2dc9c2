package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/report"
)

const analyzeHelp = `
Analyze archived runs (run folders under results/) or any Vegeta results
files (gob, JSON or CSV, including ones the Vegeta CLI wrote: the surface is
inferred from the URL when no ratecheck label says it). Several paths, from
several machines, merge by timestamp. Prints the same tables as verify, or
schema-1 JSON with --json.

The window defaults to the one recorded in run.json (a results.bin named
alone is read with the run.json beside it); without one, it is the
documented 60s and the first line of the verdict says so: pass --window
for a run made with a compressed one.

Any number of results is analyzed in bounded memory: the input is read
once into a compact temporary copy under $TMPDIR (27 bytes a result,
removed at the end), then judged in send order holding about one window
of results at a time.

A fleet's run folder (fleet, or fleet --client-cmd) is judged again as
fleet judged it, by the backoff, ε and seed its run.json recorded: the
same tables, --json and --junit as fleet (--checks and --window do not
apply); a capacity run folder, step by step from the schedule in run.json,
and the run folders of every shard of a sharded capacity search together.

Input that holds no request to /api/public/ or /mcp (results of another
API, or not results at all) is an error.

Exit codes: 0 verified, 1 a check failed, 2 bad usage or unreadable input,
4 inconclusive (the run did not produce the evidence a check needs), 130 or
143 interrupted (SIGINT or SIGTERM).
`

func runAnalyze(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		window    time.Duration
		checksArg string
		asJSON    bool
		junit     string
	)
	fs := newFlagSet("analyze", "[flags] PATH...", analyzeHelp, stderr)
	fs.DurationVar(&window, "window", 0, "the window the run was made with (default: run.json's, else 60s)")
	restLimitP, mcpLimitP := limitFlags(fs)
	fs.StringVar(&checksArg, "checks", "limits,isolation,contract", "comma-separated check `groups`: limits, isolation, contract")
	fs.BoolVar(&asJSON, "json", false, "print the schema-1 JSON verdict on stdout instead of tables")
	fs.StringVar(&junit, "junit", "", "also write the verdict as JUnit XML to `file` (a test case per check per surface)")
	if code := parseArgs(fs, args); code >= 0 {
		return code
	}
	restLimit, mcpLimit := *restLimitP, *mcpLimitP
	if fs.NArg() == 0 {
		return usageErr(stderr, "analyze", "name at least one run folder or results file")
	}
	if err := checkLimits(restLimit, mcpLimit, window); err != nil {
		return usageErr(stderr, "analyze", "%v", err)
	}
	if err := checkOutFile("--junit", junit); err != nil {
		return usageErr(stderr, "analyze", "%v", err)
	}
	_, checks, err := parseChecks(checksArg)
	if err != nil {
		return usageErr(stderr, "analyze", "--checks: %v", err)
	}
	// A fleet's run folder is judged as fleet judged it.
	if fs.NArg() == 1 {
		dir := fs.Arg(0) // a run folder, or its results.bin named alone
		if filepath.Base(dir) == archive.ResultsFile {
			dir = filepath.Dir(dir)
		}
		if info, err := archive.ReadRunInfo(dir); err == nil && info != nil && info.Fleet != nil {
			return analyzeFleet(dir, *info, asJSON, junit, stdout, stderr)
		} else if err == nil && info != nil && len(info.Capacity) > 0 {
			return analyzeCapacity([]string{dir}, asJSON, junit, stdout, stderr)
		}
	}
	// The shards of a sharded capacity search are judged together.
	if fs.NArg() > 1 && capacityRuns(fs.Args()) {
		return analyzeCapacity(fs.Args(), asJSON, junit, stdout, stderr)
	}
	// On disk, not in memory: a results file of any size is analyzed in
	// about one window's worth of memory. The collector keeps the heap
	// within half again of what is live, not twice (GOGC's default): some
	// of the time analyze has to spare goes to a lower peak.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(analyzeGCPercent))
	}
	// A run of verify --contract is judged by the contract it recorded.
	j, err := recordedJudging(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck analyze: %v\n", err)
		return exitUsage
	}
	in, err := analyze.OpenFor(fs.Args(), j.refusalsOf())
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck analyze: %v\n", err)
		return exitUsage
	}
	defer in.Close()
	cfg := analysisConfig(in.Info(), window, restLimit, mcpLimit, checks, fs.Arg(0))
	j.apply(&cfg)
	rep, err := analyze.AnalyzeSource(in, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck analyze: %v\n", err)
		return exitUsage
	}
	code := printVerdict(rep, asJSON, stdout, stderr)
	if err := writeJUnit(junit, "ratecheck analyze", report.VerdictSuites(rep)); err != nil {
		fmt.Fprintf(stderr, "ratecheck analyze: --junit: %v\n", err)
		return exitUsage
	}
	return code
}

// analyzeGCPercent is the collector's target while analyze reads results.
const analyzeGCPercent = 50

// analyzeFleet judges a fleet's run folder again, as fleet judged it: by
// the backoff, ε and seed its run.json recorded (a fleet's clients share
// one address on purpose, so the limit checks would judge nothing of it).
func analyzeFleet(path string, info archive.RunInfo, asJSON bool, junit string, stdout, stderr io.Writer) int {
	in := decode.NewInput() // no client sent anything: judged as such
	if st, err := os.Stat(filepath.Join(path, archive.ResultsFile)); err != nil || st.Size() > 0 {
		if in, err = analyze.Read([]string{path}); err != nil {
			fmt.Fprintf(stderr, "ratecheck analyze: %v\n", err)
			return exitUsage
		}
	}
	judged, strategy := fleetConfig(info)
	rep := jitter.Judge(in, judged)
	rep.Notes = append(rep.Notes, analyze.RunWarnings(info)...)
	if info.Fleet.Command != "" {
		rep.Notes = append(rep.Notes, programNotes(info.Fleet, 0, 0)...)
	}
	return printFleet(fleetOptions{json: asJSON, junit: junit}, rep, strategy, info, path, stdout, stderr)
}
