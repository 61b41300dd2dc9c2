package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/capacity/runner"
	"github.com/connectbyjbrh/ratecheck/report"
)

// analyzeCapacity judges a capacity run folder again from its archive, or
// the folders of every shard of a sharded search together.
func analyzeCapacity(dirs []string, asJSON bool, junit string, stdout, stderr io.Writer) int {
	info, res, err := runner.Replay(dirs...)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck analyze: %v\n", err)
		return exitUsage
	}
	run, _, _ := archive.ReadCapacity(dirs[0])
	o := capacityOut{surface: info.Surface, junit: junit, dir: strings.Join(dirs, ", "), target: run.Target, json: asJSON, command: "analyze"}
	return o.print(res, stdout, stderr)
}

// compareCapacity compares the knees of two capacity run folders.
func compareCapacity(paths []string, asJSON bool, stdout, stderr io.Writer) int {
	var sums [2]analyze.KneeSummary
	for i, p := range paths {
		ci, res, err := runner.Replay(p)
		if err != nil {
			fmt.Fprintf(stderr, "ratecheck compare: %v\n", err)
			return exitUsage
		}
		run, _, err := archive.ReadCapacity(p)
		if err != nil {
			fmt.Fprintf(stderr, "ratecheck compare: %v\n", err)
			return exitUsage
		}
		load := ci.Surface
		if run.Contract != nil && run.Contract.Route != "" {
			load = "route " + run.Contract.Route
		}
		sums[i] = analyze.KneeSummary{Run: p, Verdict: string(res.Verdict), KneeRPS: res.KneeRPS, LowRPS: res.KneeLowRPS, HighRPS: res.KneeHighRPS,
			Contract: archive.ContractName(run.Contract), Load: load, Objective: res.Objective()}
	}
	c := analyze.CompareKnees(sums[0], sums[1])
	var err error
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = report.KneeCompareTable(stdout, c)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck compare: writing the comparison: %v\n", err)
		return exitUsage
	}
	switch c.Verdict {
	case analyze.Incomparable:
		fmt.Fprintf(stderr, "ratecheck compare: %s and %s searched different things (%s): their knees are not a change; compare searches made the same way\n",
			paths[0], paths[1], strings.Join(c.Incomparable, "; "))
		return exitUsage
	case analyze.Pass:
		return exitOK
	case analyze.Fail:
		return exitCheckFailed
	}
	return exitInconclusive
}

// isCapacityRun reports whether path is a capacity run's folder.
func isCapacityRun(path string) bool {
	_, _, err := archive.ReadCapacity(path)
	return err == nil
}

// capacityRuns reports whether every path is a capacity run's folder.
func capacityRuns(paths []string) bool {
	for _, p := range paths {
		if !isCapacityRun(p) {
			return false
		}
	}
	return len(paths) > 0
}
