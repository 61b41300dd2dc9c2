package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/capacity/runner"
	"github.com/connectbyjbrh/ratecheck/internal/human"
	"github.com/connectbyjbrh/ratecheck/report"
)

// capacityOut is how a capacity result is given: on stdout as a table or
// JSON, as JUnit and report.html, with the exit code --expect-rate sets.
type capacityOut struct {
	surface, junit, dir, target string
	shard                       string // "i/n" of a sharded search; "": the whole
	json, report                bool
	expectRate                  float64
	command                     string // "" means capacity
}

// print gives res as o says and returns its exit code.
func (o *capacityOut) print(res capacity.Result, stdout, stderr io.Writer) int {
	name := o.command
	if name == "" {
		name = "capacity"
	}
	var err error
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	} else {
		shard := ""
		if o.shard != "" {
			shard = " · shard " + o.shard + " (the table: all shards)"
		}
		fmt.Fprintf(stdout, "capacity of %s (%s)%s · run %s\n", o.target, o.surface, shard, o.dir)
		err = report.CapacityTable(stdout, res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck %s: writing the result: %v\n", name, err)
		return exitUsage
	}
	for _, n := range capacityNotes(res) {
		fmt.Fprintf(stderr, "ratecheck %s: %s\n", name, n)
	}
	code, detail := capacityExit(res, o.expectRate)
	verdict := map[int]string{exitOK: analyze.Pass, exitCheckFailed: analyze.Fail, exitUnreachable: analyze.Fail}[code]
	if verdict == "" {
		verdict = analyze.Inconclusive
	}
	suite := []report.Suite{{Name: "capacity." + o.surface, Checks: []analyze.Check{{Name: "knee", Verdict: verdict, Detail: detail}}}}
	if err := writeJUnit(o.junit, "ratecheck "+name, suite); err != nil {
		fmt.Fprintf(stderr, "ratecheck %s: --junit: %v\n", name, err)
		return exitUsage
	}
	if o.report && o.dir != "" {
		if err := writeCapacityReport(o, res); err != nil {
			fmt.Fprintf(stderr, "ratecheck %s: report.html: %v\n", name, err)
		}
	}
	return code
}

// writeCapacityReport writes report.html into the run folder.
func writeCapacityReport(o *capacityOut, res capacity.Result) error {
	f, err := os.Create(filepath.Join(o.dir, report.HTMLFile))
	if err != nil {
		return err
	}
	err = report.CapacityHTML(f, res, report.CapacityMeta{Run: o.dir, Target: o.target, Surface: o.surface})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// capacityExit is the exit code of a search, with a sentence saying why:
// 0 found (at or above expect when given), 1 below expect or not found, 3
// every request of the first step failed, 4 inconclusive or client.
func capacityExit(res capacity.Result, expect float64) (int, string) {
	line := report.KneeLine(res)
	outcome, why := res.Outcome(expect)
	if outcome == capacity.Missed && why != "" {
		why = fmt.Sprintf("below --expect-rate %g/s", expect)
	}
	if why != "" {
		line += ": " + why
	}
	return map[capacity.Outcome]int{capacity.Met: exitOK, capacity.Missed: exitCheckFailed, capacity.Unreachable: exitUnreachable,
		capacity.Undecided: exitInconclusive}[outcome], line
}

// capacityNotes say what to do about a search the generator or the
// limiter ended.
func capacityNotes(res capacity.Result) []string {
	if len(res.Steps) == 0 {
		return nil
	}
	var notes []string
	for i, s := range res.Steps {
		if s.Refused > 0 && s.Verdict != capacity.StepLimits {
			notes = append(notes, fmt.Sprintf("step %d: %d requests were answered 429 while the step failed on latency from the actual send (a late generator's catch-up bursts can put an address over its limit)", i, s.Refused))
		}
	}
	last := res.Steps[len(res.Steps)-1]
	switch last.Verdict {
	case capacity.StepClient:
		return append(notes, fmt.Sprintf("the generator could not keep the schedule at %.1f/s (achieved %.1f/s, lateness p99 %.1f ms): this is this machine's limit, not the API's; run on a less loaded machine, give --max-workers 0 (the open model), or split the load over machines",
			last.OfferedRPS, last.AchievedRPS, last.LatenessP99MS))
	case capacity.StepLimits:
		return append(notes, fmt.Sprintf("%s answered 429 at %.1f/s from %s, each well under its share of the documented limit: the limiter engaged below its documented rate, a finding of its own, not capacity (verify checks the limits)",
			human.Count(last.Refused, "request was", "requests were"), last.OfferedRPS, human.Count(last.Sources, "source", "")))
	}
	return notes
}

// stepEvents says each judged step on stderr as one line; a shard's
// line says its own share too.
func stepEvents(stderr io.Writer, q, unit string, shard attack.Shard) func(runner.StepDone) {
	return func(ev runner.StepDone) {
		r := ev.Result
		verdict := r.Verdict
		if ev.Lengthen {
			verdict = "undecided, lengthened"
		}
		own := ""
		if g := ev.Segment; shard.Split() {
			own = fmt.Sprintf(" (shard %v: %.1f/s from %d)", shard, g.PerSourceRPS*float64(len(g.Sources)), len(g.Sources))
		}
		fmt.Fprintf(stderr, "ratecheck capacity: step %d (%s) %.1f/s from %s%s: %s %.1fms [%s, %s] (uncorrected %.1fms), errors %.2f%%, %s\n",
			ev.Segment.Step, ev.Segment.Phase, r.OfferedRPS, human.Count(r.Sources, unit, ""), own, q, r.QuantileMS,
			report.Bound(r.QuantileLowMS), report.Bound(r.QuantileHighMS), r.UncorrectedQuantileMS, 100*r.ErrorRate, verdict)
	}
}
