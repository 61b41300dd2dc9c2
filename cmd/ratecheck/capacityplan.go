package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/connectbyjbrh/ratecheck/analyze"
	"io"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/capacity/runner"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/connectbyjbrh/ratecheck/report"
)

// capacityPool is the embedded target's pool in a capacity run: 10
// workers of 20 ms, 500/s, so that the search has a knee to find soon.
var capacityPool = refserver.Pool{Workers: 10, ServiceMin: 20 * time.Millisecond, ServiceMax: 20 * time.Millisecond, Queue: 1000}

// prepare checks the flags and returns the job and the engine's options,
// or the exit code of a usage error.
func (o *capacityOptions) prepare(stderr io.Writer) (*runner.Job, attack.Options, int) {
	fail := func(format string, args ...any) (*runner.Job, attack.Options, int) {
		return nil, attack.Options{}, usageErr(stderr, "capacity", format, args...)
	}
	if o.surface != method.REST && o.surface != method.MCP {
		return fail("--surface %q: want rest or mcp", o.surface)
	}
	if err := checkOutFile("--junit", o.junit); err != nil {
		return fail("%v", err)
	}
	so, err := o.search()
	if err != nil {
		return fail("%v", err)
	}
	window := o.runFlags.window(o.wind, method.Window, time.Second)
	so.Limit, so.Window = method.Limit(o.surface), window
	cfg := embeddedWith(window, 0, 0)
	cfg.Pool = capacityPool
	opts, err := o.runFlags.options("capacity", stderr, embeddedTarget(cfg))
	if err != nil {
		return fail("%v", err)
	}
	opts.Folder, opts.Seed = "capacity", o.seed
	srcs, err := o.sourceList(so, opts.Target)
	if err != nil {
		return fail("%v", err)
	}
	job, err := runner.New(runner.Config{Search: so, Surface: o.surface, Sources: srcs, ThroughLimit: o.throughLimit,
		Window: window, Timeout: o.timeout, MaxWorkers: o.maxWorkers, ClientVersion: version, Events: stepEvents(stderr, quantileOf(so.Objective.SLO))})
	var few *capacity.TooFewSourcesError
	switch {
	case errors.As(err, &few):
		return fail("--sources: %v; give at least %d addresses, or lower --max-rate", err, few.Need)
	case err != nil:
		return fail("%v", err)
	}
	return job, opts, -1
}

// sourceList is the source addresses of the search: --sources, or on a
// loopback target as many 127.0.x.y as the highest rate needs, or the
// system's own address for a remote target that needs only one.
func (o *capacityOptions) sourceList(so capacity.Options, target string) ([]string, error) {
	need := capacity.SourcesNeeded(so.MaxRate, so.Limit, so.Window, so.Share)
	if o.throughLimit {
		need = 1
	}
	if o.sources != "" {
		var srcs []string
		for _, s := range strings.Split(o.sources, ",") {
			if s = strings.TrimSpace(s); s != "" {
				srcs = append(srcs, s)
			}
		}
		return srcs, nil
	}
	if target == "" || attack.IsLoopback(target) {
		return capacity.LoopbackSources(need)
	}
	if need > 1 {
		return nil, fmt.Errorf("--sources: %g requests per second need %d source addresses (each at most half its limit of %d per %v), and none are given; give at least %d addresses, or lower --max-rate",
			so.MaxRate, need, so.Limit, so.Window, need)
	}
	return []string{""}, nil
}

// analyzeCapacity judges a capacity run folder again from its archive.
func analyzeCapacity(dir string, asJSON bool, junit string, stdout, stderr io.Writer) int {
	info, res, err := runner.Replay(dir)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck analyze: %v\n", err)
		return exitUsage
	}
	run, _, _ := runner.ReadInfo(dir)
	o := capacityOut{surface: info.Surface, junit: junit, dir: dir, target: run.Target, json: asJSON, command: "analyze"}
	return o.print(res, stdout, stderr)
}

// compareCapacity compares the knees of two capacity run folders.
func compareCapacity(paths []string, asJSON bool, stdout, stderr io.Writer) int {
	var sums [2]analyze.KneeSummary
	for i, p := range paths {
		_, res, err := runner.Replay(p)
		if err != nil {
			fmt.Fprintf(stderr, "ratecheck compare: %v\n", err)
			return exitUsage
		}
		sums[i] = analyze.KneeSummary{Run: p, Verdict: res.Verdict, KneeRPS: res.KneeRPS, LowRPS: res.KneeLowRPS, HighRPS: res.KneeHighRPS}
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
	case analyze.Pass:
		return exitOK
	case analyze.Fail:
		return exitCheckFailed
	}
	return exitInconclusive
}

// isCapacityRun reports whether path is a capacity run's folder.
func isCapacityRun(path string) bool {
	_, _, err := runner.ReadInfo(path)
	return err == nil
}
