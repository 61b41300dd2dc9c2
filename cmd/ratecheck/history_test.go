package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/history"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// writeSeries writes n verify run folders under dir, as runs against the
// embedded target (each on a port of its own) labelled v1 … vn: per
// surface 300 answered requests of about 2 ms with one in 400 stalled,
// and from run stepAt on (0: never) every answer 20–40 ms later, as
// serve --faults delay=20ms-40ms makes it. Run 3's machine was starved.
func writeSeries(t *testing.T, dir string, n, stepAt int, seed uint64) {
	t.Helper()
	writeSeriesAt(t, dir, n, stepAt, seed, func(i int) (string, bool) { return fmt.Sprintf("http://127.0.0.1:%d", 30000+i), true })
}

// writeSeriesAt is writeSeries with run i's target, and whether it is the
// embedded one, given by target.
func writeSeriesAt(t *testing.T, dir string, n, stepAt int, seed uint64, target func(i int) (string, bool)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		start := t0.Add(time.Duration(i) * time.Minute)
		w, err := archive.Create(dir, "verify", start)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 600 {
			surface, url, body := "rest", "http://127.0.0.1:8080/api/public/search?q=rate", `{"results":[]}`
			if k%2 == 1 {
				surface, url, body = "mcp", "http://127.0.0.1:8080/mcp", `{"jsonrpc":"2.0","id":1,"result":{}}`
			}
			lat := time.Duration(2e6 * math.Exp(0.3*rng.NormFloat64()))
			if rng.IntN(400) == 0 {
				lat += time.Duration(rng.IntN(100)) * time.Millisecond
			}
			if stepAt > 0 && i >= stepAt {
				lat += 20*time.Millisecond + time.Duration(rng.Int64N(int64(20*time.Millisecond)))
			}
			r := vegeta.Result{Attack: archive.Labels{Surface: surface, Source: "127.0.0.1", Stream: "steady"}.String(), Seq: uint64(k), Code: 200, Method: "POST", URL: url,
				Timestamp: start.Add(time.Duration(k) * 10 * time.Millisecond), Latency: lat, Body: []byte(body), BytesIn: uint64(len(body))}
			if err := w.Add(&r); err != nil {
				t.Fatal(err)
			}
		}
		load := []float64{0.5, 0.4, 0.3}
		if i == 3 {
			load = []float64{9, 6, 4}
		}
		url, embedded := target(i)
		info := archive.RunInfo{Command: "verify", Profile: "verify", Target: url, Embedded: embedded,
			WindowMS: 6000, Version: "test", Start: start, End: start.Add(7 * time.Second), Label: fmt.Sprintf("v%d", i),
			Machine: &archive.MachineInfo{Cores: 2, OS: "linux", Arch: "amd64", LoadStart: load, LoadEnd: load}}
		if err := w.Close(info); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHistoryFindsTheDelay: twenty runs, the answers 20–40 ms slower from
// run 13 on: history names run 13 as where REST and MCP p99 rose, for the
// worse, flags nothing before it, lists the folder it cannot read, and
// --fail-on regression exits 1; the same runs without the delay flag
// nothing and exit 0. The JSON matches docs/schema/history.json, the page
// has a chart per series and --metrics parses as Prometheus text.
func TestHistoryFindsTheDelay(t *testing.T) {
	t.Parallel()
	delayed, steady := t.TempDir(), t.TempDir()
	writeSeries(t, delayed, 20, 13, 1)
	writeSeries(t, steady, 20, 0, 1)
	broken := filepath.Join(delayed, "20261129T130000Z-verify")
	if err := os.Mkdir(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, archive.RunFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	page, prom := filepath.Join(t.TempDir(), "h.html"), filepath.Join(t.TempDir(), "h.prom")
	code, stdout, stderr := runCmd(t, "history", "--json", "--fail-on", "regression", delayed, "--html", page, "--metrics", prom)
	if code != exitCheckFailed {
		t.Fatalf("delayed: exit %d, want %d\n%s", code, exitCheckFailed, stderr)
	}
	matchSchema(t, "history.json", stdout)
	var out history.Output
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Unread) != 1 || out.Unread[0].Path != broken || len(out.Runs) != 20 || !out.Runs[2].Starved || out.Runs[0].Starved {
		t.Errorf("unread %+v, %d runs, want the broken folder unread, 20 runs, run 3 starved", out.Unread, len(out.Runs))
	}
	rose := map[string]history.ChangeOut{}
	for _, c := range out.Changes {
		s := out.Series[c.Series]
		if s.Contract != history.BuiltinContract || s.Target != "" || s.Points[0].Target != history.Embedded {
			t.Errorf("series of contract %q, target %q, its first point's %q: want the built-in contract's, no target of its own, the points' the embedded target", s.Contract, s.Target, s.Points[0].Target)
		}
		if c.Figure == history.P99 {
			rose[s.Surface] = c
		}
		if c.Figure == history.P99 && c.Index < 11 {
			t.Errorf("%s %s: a change at run %d, before the delay", s.Surface, c.Figure, c.Index+1)
		}
	}
	for _, sf := range []string{"rest", "mcp"} {
		c, ok := rose[sf]
		if !ok || c.Index != 12 || c.Label != "v13" || c.Direction != history.Up || !c.Worse || c.SizeLow < 10 || c.SizeHigh > 50 {
			t.Errorf("%s p99: change %+v (found %v), want up at run 13 (v13), for the worse, by about 30 ms", sf, c, ok)
		}
	}
	if b, err := os.ReadFile(page); err != nil || strings.Count(string(b), "<svg") != len(out.Series) || !strings.Contains(string(b), "change at run 13") {
		t.Errorf("--html: %v, want a chart per series (%d) with the change marked", err, len(out.Series))
	}
	checkHistoryMetrics(t, prom)
	code, stdout, stderr = runCmd(t, "history", "--fail-on", "regression", steady)
	if code != exitOK || !strings.Contains(stdout, "no regression") || strings.Contains(stdout, "▲") || !strings.Contains(stdout, "verify · built-in contract · rest · labels v…: 20 runs") || !strings.Contains(stdout, " TARGET ") {
		t.Errorf("steady: exit %d, want 0 and no change\n%s%s", code, stdout, stderr)
	}
}

// checkHistoryMetrics parses history's --metrics with the Prometheus text
// parser: a regression series per surface and figure, p99 regressed.
func checkHistoryMetrics(t *testing.T, path string) {
	t.Helper()
	mfs := readMetrics(t, path)
	reg, ok := mfs["ratecheck_regression"]
	if !ok || mfs["ratecheck_run_timestamp_seconds"] == nil {
		t.Fatalf("--metrics has %v, want ratecheck_regression and ratecheck_run_timestamp_seconds", mfs)
	}
	worse := 0
	for _, m := range reg.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["kind"] != "verify" || labels["target"] != history.Embedded || labels["label"] != "v20" {
			t.Errorf("labels %v, want kind verify, target embedded, label v20 (the newest run)", labels)
		}
		if labels["figure"] == "p99_ms" && m.GetGauge().GetValue() == 1 {
			worse++
		}
	}
	if worse != 2 {
		t.Errorf("%d surfaces with p99 regressed, want 2", worse)
	}
}

func TestHistoryUsage(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"history", "--fail-on", "worse", empty}, exitUsage, "--fail-on \"worse\": want regression"},
		{[]string{"history", "--significance", "1.5", empty}, exitUsage, "--significance 1.5"},
		{[]string{"history", "--permutations", "9", empty}, exitUsage, "cannot reach --significance 0.05"},
		{[]string{"history", "--html", "/nonexistent/x.html", empty}, exitUsage, "--html /nonexistent/x.html: no directory"},
		{[]string{"history", "--min-change", "5", empty}, exitUsage, "--min-change \"5\": want a share from 0 to below 1, such as 5% or 0.05"},
		{[]string{"history", "--min-change", "-1%", empty}, exitUsage, "--min-change \"-1%\": want a share"},
		{[]string{"history", "--min-change", "lots", empty}, exitUsage, "--min-change \"lots\": want a share"},
		{[]string{"history", "--min-change-ms", "-0.1", empty}, exitUsage, "--min-change-ms -0.1: want milliseconds, 0 or more"},
		{[]string{"history", "--min-change-rps", "NaN", empty}, exitUsage, "--min-change-rps NaN: want requests per second, 0 or more"},
		{[]string{"history", empty}, exitUsage, "no run could be read"},
		{[]string{"verify", "--label", "v1\n2"}, exitUsage, "--label \"v1\\n2\": want printable text"},
		{[]string{"verify", "--label", strings.Repeat("v", 101)}, exitUsage, "--label is 101 bytes long"},
		{[]string{"verify", "--faults", "delay=1ms", "--target", "http://127.0.0.1:1"}, exitUsage, "--faults configures the embedded target"},
		{[]string{"attack", "--profile", "../../profiles/rest-limit.yaml", "--metrics", "/nonexistent/m.prom"}, exitUsage, "--metrics /nonexistent/m.prom: no directory"},
	} {
		code, stdout, stderr := runCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("%q: exit %d, want %d with %q\n%s%s", tt.args, code, tt.code, tt.want, stdout, stderr)
		}
	}
}

// checkVerifyMetrics checks that verify --label recorded the label and the
// machine in run.json, and that its --metrics parses with the Prometheus
// text parser and carries the documented names, labelled with the run.
func checkVerifyMetrics(t *testing.T, dir, path string) {
	t.Helper()
	info, err := archive.ReadRunInfo(dir)
	if err != nil || info == nil || info.Label != "v1.4.2" || info.Machine == nil || info.Machine.Cores < 1 {
		t.Errorf("run.json: %v, %+v: want label v1.4.2 and the machine", err, info)
	}
	mfs := readMetrics(t, path)
	for _, name := range []string{"ratecheck_verdict", "ratecheck_observed_limit", "ratecheck_expected_limit", "ratecheck_latency_seconds",
		"ratecheck_error_ratio", "ratecheck_run_timestamp_seconds"} {
		mf, ok := mfs[name]
		if !ok {
			t.Errorf("--metrics has no %s", name)
			continue
		}
		for _, l := range mf.Metric[0].Label {
			if v := l.GetValue(); (l.GetName() == "label" && v != "v1.4.2") || (l.GetName() == "kind" && v != "verify") || (l.GetName() == "target" && v != history.Embedded) {
				t.Errorf("%s: label %s=%q", name, l.GetName(), v)
			}
		}
	}
}

// writeKnees writes a capacity run folder under dir for each knee, as the
// capacity command leaves it (run.json's capacity section, marshalled from
// archive.CapacityInfo with the search's result): against the embedded target,
// labelled v1, v2, …, an hour apart, run i held to the objective slos[i]
// with an error budget of 1 %, its interval from the knee to 5 % above it.
func writeKnees(t *testing.T, dir string, knees []float64, slos []string) {
	t.Helper()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, knee := range knees {
		start := t0.Add(time.Duration(i) * time.Hour)
		w, err := archive.Create(dir, "capacity", start)
		if err != nil {
			t.Fatal(err)
		}
		slo, err := capacity.ParseSLO(slos[i])
		if err != nil {
			t.Fatal(err)
		}
		high := knee * 1.05
		res := capacity.Result{Verdict: capacity.VerdictFound, KneeRPS: &knee, KneeLowRPS: &knee, KneeHighRPS: &high, LimitedBy: capacity.CauseLatency,
			SLO: slo.String(), Quantile: slo.Quantile, SLOMS: clock.WholeMs(slo.Max), ErrorBudget: 0.01, Confidence: 0.95,
			Precision: 0.05, StartRPS: 100, MaxRPS: 10000, Steps: []capacity.StepResult{}}
		section, err := json.Marshal(archive.CapacityInfo{Surface: "rest", SLO: slo.String(), ErrorBudget: 0.01, Confidence: 0.95, Result: &res})
		if err != nil {
			t.Fatal(err)
		}
		info := archive.RunInfo{Command: "capacity", Profile: "capacity", Target: fmt.Sprintf("http://127.0.0.1:%d", 31000+i), Embedded: true,
			Policy: archive.PolicyInfo{Surface: "rest"}, Version: "test", Start: start, End: start.Add(time.Minute),
			Label: fmt.Sprintf("v%d", i+1), Capacity: section,
			Machine: &archive.MachineInfo{Cores: 2, OS: "linux", Arch: "amd64", LoadStart: []float64{0.5}, LoadEnd: []float64{0.5}}}
		if err := w.Close(info); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHistoryKnee: ten capacity runs v1 … v10 whose knee falls from about
// 1500/s to about 1000/s at v6. Held to one objective, history names v6
// (±1) as where the knee fell, for the worse, and --fail-on regression
// exits 1; the JSON (to its schema), the table, the page and the metrics
// carry each run's interval. When the objective changed at v6 instead,
// the runs make two series of 5 runs, neither with a change, and each too
// short to find one in (two series at 0.05 need 9 runs each): --fail-on
// regression cannot tell, and exits 4.
func TestHistoryKnee(t *testing.T) {
	t.Parallel()
	knees := []float64{1510, 1470, 1530, 1490, 1500, 980, 1020, 1000, 990, 1010}
	const p99, p99tight = "p99<=100ms", "p99<=50ms"
	tests := []struct {
		name    string
		slo     string // of v6 … v10
		code    int
		series  []string // objective: points
		changes []string // label direction worse
		metrics map[string]newestKnee
	}{
		{"one objective", p99, exitCheckFailed, []string{"p99<=100ms, error budget 1%: 10"}, []string{"v6 down true"},
			map[string]newestKnee{"p99<=100ms, error budget 1%": {"v10", 1010, true}}},
		{"objective changed", p99tight, exitInconclusive, []string{"p99<=100ms, error budget 1%: 5", "p99<=50ms, error budget 1%: 5"}, nil,
			map[string]newestKnee{"p99<=100ms, error budget 1%": {"v5", 1500, false}, "p99<=50ms, error budget 1%": {"v10", 1010, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			slos := make([]string, len(knees))
			for i := range slos {
				slos[i] = p99
				if i >= 5 {
					slos[i] = tt.slo
				}
			}
			writeKnees(t, dir, knees, slos)
			page, prom := filepath.Join(t.TempDir(), "h.html"), filepath.Join(t.TempDir(), "h.prom")
			code, stdout, stderr := runCmd(t, "history", "--json", "--fail-on", "regression", "--html", page, "--metrics", prom, dir)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, stdout, stderr)
			}
			matchSchema(t, "history.json", stdout)
			var out history.Output
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Runs) != len(knees) || len(out.Unread) != 0 {
				t.Fatalf("%d runs, unread %+v: want %d runs read", len(out.Runs), out.Unread, len(knees))
			}
			var series, changes []string
			for _, s := range out.Series {
				series = append(series, fmt.Sprintf("%s: %d", s.Objective, len(s.Points)))
				if s.Kind != "capacity" || s.Contract != history.BuiltinContract || s.Points[0].Target != history.Embedded || s.Figure != history.Knee || s.Worse != history.Down {
					t.Errorf("series %+v, want capacity's knee of the built-in contract on the embedded target, worse down", s.Key())
				}
				for _, p := range s.Points {
					if p.Low == nil || *p.Low != p.Value || p.High == nil || math.Abs(*p.High-1.05*p.Value) > 1e-9 {
						t.Errorf("%s: knee %g with bounds %v, %v: want [knee, 1.05 knee]", p.Label, p.Value, p.Low, p.High)
					}
				}
			}
			// One series of 10 runs can show a change (8 needed at 0.05);
			// two of 5 cannot (9 needed each at 0.025), and say so.
			short := tt.code == exitInconclusive
			if out.TooShort != map[bool]int{true: len(out.Series)}[short] {
				t.Errorf("too_short %d of %d series, want %v", out.TooShort, len(out.Series), short)
			}
			for _, s := range out.Series {
				if want := map[bool]int{false: 8, true: 9}[short]; s.TooShort != short || s.MinRuns != want {
					t.Errorf("series %s: too_short %v, min_runs %d; want %v, %d", s.Objective, s.TooShort, s.MinRuns, short, want)
				}
			}
			if short && !strings.Contains(stderr, "--fail-on regression: 2 of 2 series too short to find a change in (each needs 9 runs)") {
				t.Errorf("stderr does not say the series are too short to tell:\n%s", stderr)
			}
			for _, c := range out.Changes {
				changes = append(changes, fmt.Sprintf("%s %s %v", c.Label, c.Direction, c.Worse))
				if c.Index < 4 || c.Index > 6 || c.Size > -400 || c.Size < -600 {
					t.Errorf("change %+v: want at v6 (±1), about −500/s", c)
				}
			}
			if fmt.Sprint(series) != fmt.Sprint(tt.series) || fmt.Sprint(changes) != fmt.Sprint(tt.changes) {
				t.Errorf("series %q with changes %q, want %q with %q", series, changes, tt.series, tt.changes)
			}
			b, err := os.ReadFile(page)
			if err != nil || strings.Count(string(b), "<svg") != len(out.Series) || !strings.Contains(string(b), "interval the run measured") {
				t.Errorf("--html: %v, want a chart per series (%d), each with the knees' intervals", err, len(out.Series))
			}
			checkKneeMetrics(t, prom, tt.metrics)
			code, stdout, stderr = runCmd(t, "history", dir)
			if code != exitOK || !strings.Contains(stdout, "capacity · built-in contract · rest · labels v… · p99<=100ms, error budget 1%") ||
				!strings.Contains(stdout, "1510/s [1510, 1586]") {
				t.Errorf("table: exit %d, want 0, each group titled with its objective and each knee with its interval\n%s%s", code, stdout, stderr)
			}
			if short && (strings.Count(stdout, "too few runs to find a change (5, needs 9)") != 2 || !strings.Contains(stdout, "cannot tell: every series is too short")) {
				t.Errorf("table: want each group said too short to tell, and the whole history:\n%s", stdout)
			}
		})
	}
}

// newestKnee is what history's --metrics says of one objective's knee
// series: the newest run's label and knee, and whether the series
// regressed.
type newestKnee struct {
	label      string
	knee       float64
	regression bool
}

// checkKneeMetrics parses history's --metrics of capacity runs: per
// objective, the newest knee with its interval (5 % above it), labelled
// with its run, and whether the knee regressed.
func checkKneeMetrics(t *testing.T, path string, want map[string]newestKnee) {
	t.Helper()
	mfs := readMetrics(t, path)
	for _, name := range []string{"ratecheck_knee_rps", "ratecheck_knee_low_rps", "ratecheck_knee_high_rps", "ratecheck_regression"} {
		mf, ok := mfs[name]
		if !ok || len(mf.Metric) != len(want) {
			t.Errorf("--metrics: %s %v, want one per objective (%d)", name, mf, len(want))
			continue
		}
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			w, ok := want[labels["objective"]]
			v := m.GetGauge().GetValue()
			wantV := map[string]float64{"ratecheck_knee_rps": w.knee, "ratecheck_knee_low_rps": w.knee, "ratecheck_knee_high_rps": 1.05 * w.knee,
				"ratecheck_regression": b2f(w.regression)}[name]
			if !ok || labels["kind"] != "capacity" || labels["label"] != w.label || math.Abs(v-wantV) > 1e-9 {
				t.Errorf("%s%v = %g, want %g labelled %s (the series' newest run)", name, labels, v, wantV, w.label)
			}
		}
	}
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestHistoryReadsACapacityRun runs a short capacity search on the
// embedded target and reads its folder back: history finds the verdict,
// the knee and its interval the search printed, held to its objective.
func TestHistoryReadsACapacityRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, stdout, stderr := runCmd(t, "capacity", "--slo", "p99<=1s", "--start-rate", "200", "--max-rate", "200",
		"--step", "2s", "--warmup", "0.1s", "--json", "--out", dir)
	var res capacity.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("capacity: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	code, stdout, stderr = runCmd(t, "history", "--json", dir)
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s%s", code, stdout, stderr)
	}
	matchSchema(t, "history.json", stdout)
	var out history.Output
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 1 || len(out.Unread) != 0 || len(out.Runs[0].Surfaces) != 1 {
		t.Fatalf("runs %+v, unread %+v: want the capacity run read", out.Runs, out.Unread)
	}
	r, s := out.Runs[0], out.Runs[0].Surfaces[0]
	if r.Kind != "capacity" || r.Target != history.Embedded || s.Surface != "rest" || s.Verdict != string(res.Verdict) || s.Objective != "p99<=1s, error budget 1%" {
		t.Errorf("run %s on %s, %s: verdict %q held to %q; want capacity on embedded, rest: %q held to p99<=1s, error budget 1%%",
			r.Kind, r.Target, s.Surface, s.Verdict, s.Objective, res.Verdict)
	}
	knee, ok := s.Figures[history.Knee]
	b := s.Bounds[history.Knee]
	eq := func(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	if ok != (res.KneeRPS != nil) || ok && (knee != *res.KneeRPS || !eq(b.Low, res.KneeLowRPS) || !eq(b.High, res.KneeHighRPS)) {
		t.Errorf("history read knee %v (%v) [%v, %v], capacity printed %v [%v, %v]", knee, ok, b.Low, b.High, res.KneeRPS, res.KneeLowRPS, res.KneeHighRPS)
	}
}

// TestHistoryMinChange: ten capacity runs whose knee falls by about 3 %
// at v6 (1500/s to 1455/s), a change E-divisive finds. Under the default
// floor of 5 % it is not reported and --fail-on regression exits 0; with
// --min-change 2% it is, and exits 1; a floor of 100/s besides holds it
// back again, since a change must reach both floors.
func TestHistoryMinChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	knees := []float64{1500, 1502, 1499, 1501, 1500, 1455, 1454, 1456, 1455, 1453}
	slos := make([]string, len(knees))
	for i := range slos {
		slos[i] = "p99<=100ms"
	}
	writeKnees(t, dir, knees, slos)
	tests := []struct {
		flags []string
		code  int
		floor string // in the table's last line
	}{
		{nil, exitOK, "least change reported: 5% and 1/s (knee_rps)"},
		{[]string{"--min-change", "2%"}, exitCheckFailed, "least change reported: 2% and 1/s (knee_rps)"},
		{[]string{"--min-change", "0.02", "--min-change-rps", "100"}, exitOK, "least change reported: 2% and 100/s (knee_rps)"},
		{[]string{"--min-change", "0", "--min-change-rps", "0"}, exitCheckFailed, "least change reported: any size (knee_rps)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(append([]string{"default"}, tt.flags...), " "), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCmd(t, append(append([]string{"history", "--fail-on", "regression"}, tt.flags...), dir)...)
			if code != tt.code || !strings.Contains(stdout, tt.floor) || (code == exitCheckFailed) != strings.Contains(stdout, "knee_rps down at run 6 (v6)") {
				t.Errorf("exit %d, want %d with %q, and the change at v6 reported when it fails\n%s%s", code, tt.code, tt.floor, stdout, stderr)
			}
			code, stdout, _ = runCmd(t, append(append([]string{"history", "--json"}, tt.flags...), dir)...)
			var out history.Output
			if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != exitOK || len(out.Series) != 1 {
				t.Fatalf("--json: exit %d, %v, want one series\n%s", code, err, stdout)
			}
			if f := out.Series[0].Floor; !strings.Contains(tt.floor, strconv.FormatFloat(100*f.Relative, 'g', -1, 64)) && f.Relative > 0 {
				t.Errorf("--json: floor %+v, want that of %q", f, tt.floor)
			}
		})
	}
}

// TestHistoryGroupsByContract: three labelled runs, each release at a URL
// of its own (v1.staging…, v2.staging…, v3.staging…), are one series of
// three runs per figure by default, a TARGET column naming each run's; with
// --group-by target they are three series of one run each, as before.
func TestHistoryGroupsByContract(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeSeriesAt(t, dir, 3, 0, 3, func(i int) (string, bool) { return fmt.Sprintf("https://v%d.staging.example.com", i), false })
	code, stdout, stderr := runCmd(t, "history", dir)
	if code != exitOK || strings.Count(stdout, "verify · built-in contract · ") != 2 || !strings.Contains(stdout, "verify · built-in contract · rest · labels v…: 3 runs") ||
		!strings.Contains(stdout, "https://v3.staging.example.com") {
		t.Errorf("by contract: exit %d, want one table per surface of 3 runs naming each run's target\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCmd(t, "history", "--json", "--group-by", "target", dir)
	matchSchema(t, "history.json", stdout)
	var out history.Output
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	targets := map[string]bool{}
	for _, s := range out.Series {
		targets[s.Target] = true
		if len(s.Points) != 1 {
			t.Errorf("grouped by target, series %+v has %d points, want 1", s.Key(), len(s.Points))
		}
	}
	if len(targets) != 3 {
		t.Errorf("grouped by target, series of targets %v, want 3", targets)
	}
	if code, _, stderr := runCmd(t, "history", "--group-by", "host", dir); code != exitUsage || !strings.Contains(stderr, `--group-by "host": want contract or target`) {
		t.Errorf("--group-by host: exit %d, %s", code, stderr)
	}
}
