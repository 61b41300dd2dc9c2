package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/history"
	"github.com/connectbyjbrh/ratecheck/internal/human"
	"github.com/connectbyjbrh/ratecheck/report"
)

const historyHelp = `
Trend every archived run (verify, attack, fleet, capacity) and find where a
change began. Each path is a run folder or a folder of run folders
(default: results/). Runs are grouped by kind, contract (the documented
API's, "built-in", for every run today), surface and label scheme (the
--label text before its first digit: v1.4.2 and v21 are one series, pr-17
another), in time order, whatever their target: releases deployed at URLs
of their own (v1.staging..., v2.staging...) make one series, and a TARGET
column names each run's. --group-by target makes each target's runs a
series of their own (the embedded target is one target, "embedded").
Each figure of a group (observed limit, p50, p95, p99,
error rate, knee) is a series. A capacity run's knee, with its interval
(the last rate that passed, the first that failed), is read from its
run.json; runs held to another objective (--slo, --error-budget) make
another series, not a change.

Per series, change points are found with E-divisive means on the ranks of
the values and a permutation test of each candidate at --significance;
each change is the run where it begins, the medians either side, the
Hodges-Lehmann shift with its distribution-free --confidence interval and
its direction. A change is reported only when its shift reaches both
floors of its figure: --min-change of the median before it, and the
figure's resolution (--min-change-ms of a latency, --min-change-rps of a
knee, 0.1 percentage point of error rate, one request of observed limit,
which has no relative floor); a weaker change point is merged into its
neighbours. Verdict and model changes are listed as events. A run whose
machine was starved (load average above its cores) or that fell behind its
schedule is flagged, and kept in its series. Runs that cannot be read are
listed with why.

A series too short for its test to find even the clearest change more
often than not (8 runs at --significance 0.05; 12 each when ten series
share it) says "too few runs to find a change (n, needs m)": no change
found there is no evidence of none.

--json prints docs/schema/history.json; --html writes one offline page with
a chart per series, its change points marked.

Exit codes: 0 done (with --fail-on regression: no series' newest runs lie
after a significant change for the worse; series too short to tell are
named on stderr), 1 they do, 2 bad usage or no run could be read, 4 with
--fail-on regression every series was too short to tell.
`

// historyOptions are the flags of "ratecheck history".
type historyOptions struct {
	json         bool
	html         string
	metrics      string
	failOn       string
	significance float64
	permutations int
	confidence   float64
	seed         uint64
	minChange    string
	minChangeMS  float64
	minChangeRPS float64
	groupBy      string
}

func runHistory(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var o historyOptions
	fs := newFlagSet("history", "[flags] [DIR|RUN]...", historyHelp, stderr)
	fs.BoolVar(&o.json, "json", false, "print the history as JSON on stdout (docs/schema/history.json) instead of tables")
	fs.StringVar(&o.html, "html", "", "also write an offline HTML page with a chart per series to `file`")
	metricsFlag(fs, &o.metrics)
	fs.StringVar(&o.groupBy, "group-by", "contract", "what makes runs one series besides their kind, surface and label scheme: `contract` (whatever their target) or target")
	fs.StringVar(&o.failOn, "fail-on", "", "exit 1 on `regression`: when the newest runs of a series lie after a significant change for the worse")
	fs.Float64Var(&o.significance, "significance", history.DefaultSignificance, "the p-value at or below which a candidate is a change point")
	fs.IntVar(&o.permutations, "permutations", history.DefaultPermutations, "permutations that test each candidate")
	fs.Float64Var(&o.confidence, "confidence", history.DefaultConfidence, "coverage of the interval of a change's size")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the permutations")
	fs.StringVar(&o.minChange, "min-change", strconv.FormatFloat(100*history.DefaultMinChange, 'g', -1, 64)+"%", "the least change reported, a `share` of the median before it, such as 5% or 0.05 (0: any; the observed limit has none)")
	fs.Float64Var(&o.minChangeMS, "min-change-ms", history.DefaultMinChangeMS, "the least change of p50, p95 or p99 reported, in `milliseconds` (0: any)")
	fs.Float64Var(&o.minChangeRPS, "min-change-rps", history.DefaultMinChangeRPS, "the least change of a knee reported, a `rate` in requests per second (0: any)")
	var paths []string // flags may follow the paths
	for {
		if code := parseArgs(fs, args); code >= 0 {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		paths, args = append(paths, fs.Arg(0)), fs.Args()[1:]
	}
	relative, err := o.check()
	if err != nil {
		return usageErr(stderr, "history", "%v", err)
	}
	if len(paths) == 0 {
		paths = []string{"results"}
	}
	runs, unread := history.ReadArchive(paths, history.ReadOptions{Fleet: fleetVerdict})
	out := history.Trend(runs, unread, history.Options{Significance: o.significance, Permutations: o.permutations, Confidence: o.confidence, Seed: o.seed,
		Floors: history.Floors(relative, o.minChangeMS, o.minChangeRPS), GroupByTarget: o.groupBy == "target"})
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(out)
	} else {
		err = report.HistoryTable(stdout, out)
	}
	if err == nil && o.html != "" {
		if err = writeAtomic(o.html, func(w io.Writer) error { return report.HistoryHTML(w, out) }); err == nil {
			fmt.Fprintf(stderr, "ratecheck history: page %s\n", o.html)
		}
	}
	if err == nil && o.metrics != "" {
		err = report.WriteMetricsSetFile(o.metrics, report.HistoryMetrics(out))
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck history: %v\n", err)
		return exitUsage
	}
	if len(runs) == 0 {
		fmt.Fprintf(stderr, "ratecheck history: no run could be read\n")
		return exitUsage
	}
	switch {
	case o.failOn != "" && out.Regression:
		return exitCheckFailed
	case o.failOn != "" && out.TooShort > 0:
		fmt.Fprintf(stderr, "ratecheck history: --fail-on regression: %d of %s too short to find a change in (each needs %s): no regression could be found there\n",
			out.TooShort, human.Count(len(out.Series), "series", "series"), human.Count(out.Series[0].MinRuns, "run", ""))
		if out.TooShort == len(out.Series) {
			return exitInconclusive
		}
	}
	return exitOK
}

// check validates the flags of history, and returns --min-change as a
// share.
func (o *historyOptions) check() (float64, error) {
	switch {
	case o.groupBy != "contract" && o.groupBy != "target":
		return 0, fmt.Errorf("--group-by %q: want contract or target", o.groupBy)
	case o.failOn != "" && o.failOn != "regression":
		return 0, fmt.Errorf("--fail-on %q: want regression", o.failOn)
	case o.significance <= 0 || o.significance >= 1:
		return 0, fmt.Errorf("--significance %g: want a p-value between 0 and 1, such as 0.05", o.significance)
	case o.confidence <= 0 || o.confidence >= 1:
		return 0, fmt.Errorf("--confidence %g: want a coverage between 0 and 1, such as 0.95", o.confidence)
	case o.permutations < 1 || o.permutations > 100000:
		return 0, fmt.Errorf("--permutations %d: want 1 to 100000", o.permutations)
	case float64(o.permutations+1)*o.significance < 1:
		return 0, fmt.Errorf("--permutations %d cannot reach --significance %g: the least p-value is 1/(permutations+1); want at least %d", o.permutations, o.significance, int(1/o.significance))
	case !(o.minChangeMS >= 0 && o.minChangeMS < math.Inf(1)):
		return 0, fmt.Errorf("--min-change-ms %g: want milliseconds, 0 or more, such as 0.1", o.minChangeMS)
	case !(o.minChangeRPS >= 0 && o.minChangeRPS < math.Inf(1)):
		return 0, fmt.Errorf("--min-change-rps %g: want requests per second, 0 or more, such as 1", o.minChangeRPS)
	}
	relative, err := parseShare(o.minChange)
	if err != nil {
		return 0, fmt.Errorf("--min-change %q: %v", o.minChange, err)
	}
	for _, f := range []struct{ name, path string }{{"--html", o.html}, {"--metrics", o.metrics}} {
		if err := checkOutFile(f.name, f.path); err != nil {
			return 0, err
		}
	}
	return relative, nil
}

// parseShare reads a share from 0 to below 1: a ratio such as 0.05, or a
// percentage such as 5%.
func parseShare(s string) (float64, error) {
	t, scale := strings.TrimSpace(s), 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSpace(strings.TrimSuffix(t, "%")), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v/scale >= 0 && v/scale < 1) {
		return 0, errors.New("want a share from 0 to below 1, such as 5% or 0.05")
	}
	return v / scale, nil
}

// fleetVerdict judges a fleet's run as fleet judged it.
func fleetVerdict(in *decode.Input, info archive.RunInfo) string {
	cfg, _ := fleetConfig(info)
	return jitter.Judge(in, cfg).Verdict
}
