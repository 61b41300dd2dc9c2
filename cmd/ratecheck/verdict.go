package main

import (
	"fmt"
	"io"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/report"
)

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

// analysisConfig is what input described by meta is judged against by the
// window and limit flags given (zero window: run.json's) and checks (nil:
// all); firstPath is the first path read.
func analysisConfig(meta *decode.Meta, window time.Duration, restLimit, mcpLimit int, checks []string, firstPath string) analyze.Config {
	return configFor(meta, analyze.Overrides{Window: window, Limits: limitsOf(restLimit, mcpLimit), Checks: checks, Path: firstPath})
}

// configFor is what input described by meta is judged against (see
// analyze.ConfigFor), with a warning first when it had no run.json to
// take the window from.
func configFor(meta *decode.Meta, o analyze.Overrides) analyze.Config {
	cfg, assumed := analyze.ConfigFor(meta, o)
	if assumed {
		warn := fmt.Sprintf("%s has no run.json: judged against the documented window of %v; pass --window if the run was made with another", o.Path, cfg.Window)
		if len(meta.Runs) > 0 { // a run.json without a window
			warn = fmt.Sprintf("the run.json of %s records no window (window_ms %v): judged against the documented window of %v; pass --window if the run was made with another", o.Path, meta.Runs[0].WindowMS, cfg.Window)
		}
		cfg.Warnings = append([]string{warn}, cfg.Warnings...)
	}
	return cfg
}

// parseSurfaces reads --surfaces: rest, mcp or both.
func parseSurfaces(s string) ([]string, error) {
	surfaces, err := parseList(s)
	if err == nil && len(surfaces) == 0 {
		err = fmt.Errorf("name rest, mcp or both")
	}
	for _, sf := range surfaces {
		if sf != method.REST && sf != method.MCP {
			err = fmt.Errorf("unknown surface %q (want rest, mcp or rest,mcp)", sf)
		}
	}
	if err != nil {
		return nil, err
	}
	return surfaces, nil
}
