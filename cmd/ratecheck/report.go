package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/capacity/runner"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/report"
)

const reportHelp = `
Write a self-contained HTML report of a run (it fetches nothing, so it opens
offline): the verdict and checks of each surface, and charts of the rolling
window against the limit (the first 429, leaks and false throttles marked),
requests by outcome and latency percentiles over time.

RUN is a run folder (the report goes into it as report.html unless --out
says otherwise) or a Vegeta results file (the report goes to --out). A
capacity run folder gets capacity's page (its steps, judged again from the
folder as analyze judges them, and the USL model). verify and capacity
write the report into their run folder by themselves.

Exit codes: 0 the report was written (whatever the verdict), 2 bad usage or
unreadable input, 130 or 143 interrupted (SIGINT or SIGTERM).
`

func runReport(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		out    string
		window time.Duration
	)
	fs := newFlagSet("report", "[flags] RUN", reportHelp, stderr)
	fs.StringVar(&out, "out", "", "`file` to write (default: RUN/report.html for a run folder, else report.html)")
	fs.DurationVar(&window, "window", 0, "the window the run was made with (default: run.json's, else 60s)")
	restLimitP, mcpLimitP := limitFlags(fs)
	if code := parseArgs(fs, args); code >= 0 {
		return code
	}
	restLimit, mcpLimit := *restLimitP, *mcpLimitP
	if fs.NArg() != 1 {
		return usageErr(stderr, "report", "name one run folder or results file")
	}
	if err := checkLimits(restLimit, mcpLimit, window); err != nil {
		return usageErr(stderr, "report", "%v", err)
	}
	if out == "" {
		out = report.HTMLFile
		if fi, err := os.Stat(fs.Arg(0)); err == nil && fi.IsDir() {
			out = filepath.Join(fs.Arg(0), report.HTMLFile)
		}
	}
	if isCapacityRun(fs.Arg(0)) {
		return reportCapacity(fs.Arg(0), out, stdout, stderr)
	}
	j, err := recordedJudging(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck report: %v\n", err)
		return exitUsage
	}
	in, err := analyze.ReadFor(fs.Args(), j.refusalsOf())
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck report: %v\n", err)
		return exitUsage
	}
	cfg := analysisConfig(&in.Meta, window, restLimit, mcpLimit, nil, fs.Arg(0))
	j.apply(&cfg)
	cfg.Charts = true
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck report: %v\n", err)
		return exitUsage
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(stderr, "ratecheck report: warning: %s\n", w)
	}
	if err := writeReport(out, in, rep, cfg); err != nil {
		fmt.Fprintf(stderr, "ratecheck report: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "wrote %s\n", out)
	return exitOK
}

// reportCapacity writes the capacity page of the capacity run in dir to
// out: the search judged again from the folder, as analyze judges it.
func reportCapacity(dir, out string, stdout, stderr io.Writer) int {
	ci, res, err := runner.Replay(dir)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck report: %v\n", err)
		return exitUsage
	}
	run, _, err := archive.ReadCapacity(dir)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck report: %v\n", err)
		return exitUsage
	}
	meta := report.CapacityMeta{Run: dir, Target: run.Target, Surface: ci.Surface}
	if err := writeAtomic(out, func(w io.Writer) error { return report.CapacityHTML(w, res, meta) }); err != nil {
		fmt.Fprintf(stderr, "ratecheck report: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "wrote %s\n", out)
	return exitOK
}

// writeRunReport analyzes a run folder by o and writes its report.html,
// saying where, and returns the analysis (nil when it failed); a failure
// is reported and does not change the run's exit code.
func writeRunReport(name, dir string, o analyze.Overrides, stdout, stderr io.Writer) *analyze.Report {
	in, err := analyze.Read([]string{dir})
	var rep *analyze.Report
	var cfg analyze.Config
	if err == nil {
		o.Path = dir
		cfg = configFor(&in.Meta, o)
		cfg.Charts = true
		rep, err = analyze.Analyze(in, cfg)
	}
	if err == nil {
		path := filepath.Join(dir, report.HTMLFile)
		if err = writeReport(path, in, rep, cfg); err == nil {
			fmt.Fprintf(stdout, "  report %s\n", path)
			return rep
		}
	}
	fmt.Fprintf(stderr, "ratecheck %s: writing the report: %v\n", name, err)
	return rep
}

// writeReport writes the HTML report of an analysis made with
// Config.Charts to path, whole or not at all; a fleet run's report leads
// with the fleet's verdict, judged as fleet and analyze judge it.
func writeReport(path string, in *decode.Input, rep *analyze.Report, cfg analyze.Config) error {
	var fleet *jitter.Report
	if runs := in.Meta.Runs; len(runs) == 1 && runs[0].Fleet != nil {
		judged, _ := fleetConfig(runs[0])
		fleet = jitter.Judge(in, judged)
		if runs[0].Fleet.Command != "" {
			fleet.Notes = append(fleet.Notes, programNotes(runs[0].Fleet, 0, 0)...)
		}
	}
	return writeAtomic(path, func(w io.Writer) error { return report.HTML(w, in, rep, cfg, fleet) })
}

// writeJUnit writes suites as JUnit XML to path, whole or not at all; an
// empty path writes nothing.
func writeJUnit(path, name string, suites []report.Suite) error {
	if path == "" {
		return nil
	}
	return writeAtomic(path, func(w io.Writer) error { return report.JUnit(w, name, suites) })
}

// writeAtomic writes a file through a temporary one renamed into place, so
// that a failure never leaves half a file.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
