package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func ptr(v float64) *float64 { return &v }

// sampleMetrics is a verify run that failed on MCP, with a latency
// summary, and history's judgement of REST's p99.
func sampleMetrics() Metrics {
	return Metrics{
		Kind: "verify", Label: "v1.4.2", Target: "http://127.0.0.1:8080",
		Start:   time.Date(2026, 11, 29, 12, 0, 0, 500e6, time.UTC),
		Verdict: "fail",
		Surfaces: []SurfaceMetrics{
			{Surface: "rest", Verdict: "pass", Checks: []CheckVerdict{{"onset", "pass"}, {"headers", "skip"}},
				ObservedLimit: ptr(240), ExpectedLimit: ptr(240), ErrorRatio: ptr(0),
				Latency:     &Latency{Count: 560, Sum: 0.28, Quantiles: map[float64]float64{0.5: 0.0003, 0.95: 0.0021, 0.99: 0.0048}},
				Regressions: []Regression{{Figure: "p99_ms", Worse: true}}},
			{Surface: "mcp", Verdict: "fail", Checks: []CheckVerdict{{"onset", "fail"}, {"rolling", "inconclusive"}},
				ObservedLimit: ptr(131), ExpectedLimit: ptr(120)},
		},
	}
}

// parse reads the text format with the Prometheus project's parser.
func parse(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the Prometheus text parser rejects the file: %v\n%s", err, b)
	}
	return mfs
}

// samples flattens families into "name{k=v,…} value" lines, sorted, the
// labels in order; a summary gives a line per quantile, _sum and _count.
func samples(mfs map[string]*dto.MetricFamily) []string {
	var out []string
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			line := func(suffix string, extra string, v float64) {
				all := ls
				if extra != "" {
					all = append(append([]string{}, ls...), extra)
					sort.Strings(all)
				}
				out = append(out, name+suffix+"{"+strings.Join(all, ",")+"} "+model.SampleValue(v).String())
			}
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				line("", "", m.GetGauge().GetValue())
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					line("", "quantile="+model.SampleValue(q.GetQuantile()).String(), q.GetValue())
				}
				line("_sum", "", m.GetSummary().GetSampleSum())
				line("_count", "", float64(m.GetSummary().GetSampleCount()))
			default:
				out = append(out, name+": unexpected type "+mf.GetType().String())
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestMetrics writes a run's metrics, parses them with the Prometheus text
// parser and checks every name, label and value, and the types.
func TestMetrics(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := writeMetrics(&b, sampleMetrics()); err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/metrics.golden.prom", b.Bytes())
	mfs := parse(t, b.Bytes())
	run := "kind=verify,label=v1.4.2,"
	tgt := "target=http://127.0.0.1:8080"
	verdicts := func(surface, check, got string) []string {
		var out []string
		for _, s := range verdictStates {
			v := "0"
			if s == got {
				v = "1"
			}
			out = append(out, "ratecheck_verdict{check="+check+","+run+"surface="+surface+","+tgt+",verdict="+s+"} "+v)
		}
		return out
	}
	want := []string{
		"ratecheck_error_ratio{" + run + "surface=rest," + tgt + "} 0",
		"ratecheck_expected_limit{" + run + "surface=mcp," + tgt + "} 120",
		"ratecheck_expected_limit{" + run + "surface=rest," + tgt + "} 240",
		"ratecheck_latency_seconds_count{" + run + "surface=rest," + tgt + "} 560",
		"ratecheck_latency_seconds_sum{" + run + "surface=rest," + tgt + "} 0.28",
		"ratecheck_latency_seconds{" + run + "quantile=0.5,surface=rest," + tgt + "} 0.0003",
		"ratecheck_latency_seconds{" + run + "quantile=0.95,surface=rest," + tgt + "} 0.0021",
		"ratecheck_latency_seconds{" + run + "quantile=0.99,surface=rest," + tgt + "} 0.0048",
		"ratecheck_observed_limit{" + run + "surface=mcp," + tgt + "} 131",
		"ratecheck_observed_limit{" + run + "surface=rest," + tgt + "} 240",
		"ratecheck_regression{figure=p99_ms," + run + "objective=,surface=rest," + tgt + "} 1",
		"ratecheck_run_timestamp_seconds{" + run + tgt + "} 1795953600.5",
	}
	for _, v := range [][]string{
		verdicts("all", "all", "fail"), verdicts("mcp", "all", "fail"), verdicts("mcp", "onset", "fail"),
		verdicts("mcp", "rolling", "inconclusive"), verdicts("rest", "all", "pass"), verdicts("rest", "onset", "pass"),
		verdicts("rest", "headers", "skip")} {
		want = append(want, v...)
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, samples(mfs)); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	types := map[string]dto.MetricType{}
	for name, mf := range mfs {
		types[name] = mf.GetType()
		if mf.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
	}
	wantTypes := map[string]dto.MetricType{metricVerdict: dto.MetricType_GAUGE, metricObservedLimit: dto.MetricType_GAUGE,
		metricExpectedLimit: dto.MetricType_GAUGE, metricLatency: dto.MetricType_SUMMARY, metricErrorRatio: dto.MetricType_GAUGE,
		metricRegression: dto.MetricType_GAUGE, metricRunTimestamp: dto.MetricType_GAUGE}
	if diff := cmp.Diff(wantTypes, types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
}

// TestMetricsKnee checks capacity runs: their own verdicts, the knee with
// its interval and objective, the quantile at the knee, no label; a high
// bound not found (NaN) and a quantile not measured (0) are not written.
func TestMetricsKnee(t *testing.T) {
	t.Parallel()
	m := Metrics{Kind: "capacity", Target: "http://127.0.0.1:8080", Start: time.Unix(1800000000, 0),
		Verdict: "found", States: []string{"found", "not-found", "client", "inconclusive"},
		Surfaces: []SurfaceMetrics{{Surface: "rest", Objective: "p99<=100ms, error budget 1%", Knee: &Knee{RPS: 950, Low: 900, High: 1010, Latency: 0.042}, ErrorRatio: ptr(0.002)},
			{Surface: "mcp", Knee: &Knee{RPS: 400, Low: 400, High: math.NaN()}}}}
	var b bytes.Buffer
	if err := writeMetrics(&b, m); err != nil {
		t.Fatal(err)
	}
	run := "kind=capacity,label=,"
	tgt := "target=http://127.0.0.1:8080"
	obj := "objective=p99<=100ms, error budget 1%,"
	want := []string{
		"ratecheck_error_ratio{" + run + "surface=rest," + tgt + "} 0.002",
		"ratecheck_knee_high_rps{" + run + obj + "surface=rest," + tgt + "} 1010",
		"ratecheck_knee_latency_seconds{" + run + obj + "surface=rest," + tgt + "} 0.042",
		"ratecheck_knee_low_rps{" + run + "objective=,surface=mcp," + tgt + "} 400",
		"ratecheck_knee_low_rps{" + run + obj + "surface=rest," + tgt + "} 900",
		"ratecheck_knee_rps{" + run + "objective=,surface=mcp," + tgt + "} 400",
		"ratecheck_knee_rps{" + run + obj + "surface=rest," + tgt + "} 950",
		"ratecheck_run_timestamp_seconds{" + run + tgt + "} 1800000000",
		"ratecheck_verdict{check=all," + run + "surface=all," + tgt + ",verdict=client} 0",
		"ratecheck_verdict{check=all," + run + "surface=all," + tgt + ",verdict=found} 1",
		"ratecheck_verdict{check=all," + run + "surface=all," + tgt + ",verdict=inconclusive} 0",
		"ratecheck_verdict{check=all," + run + "surface=all," + tgt + ",verdict=not-found} 0",
	}
	if diff := cmp.Diff(want, samples(parse(t, b.Bytes()))); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}

// TestMetricsFile checks the file is written whole, in the same text as
// writeMetrics, and readable by others (a textfile collector).
func TestMetricsFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ratecheck.prom")
	if err := WriteMetricsFile(path, sampleMetrics()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := writeMetrics(&want, sampleMetrics()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("file mode %v (%v), want 0644", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the folder holds %d files, want the metrics file alone", len(entries))
	}
}
