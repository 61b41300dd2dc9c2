package main

import (
	"fmt"
	"io"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/report"
)

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
