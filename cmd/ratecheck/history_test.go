package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/history"
)

// writeSeries writes n verify run folders under dir, as runs against the
// embedded target (each on a port of its own) labelled v1 … vn: per
// surface 300 answered requests of about 2 ms with one in 400 stalled,
// and from run stepAt on (0: never) every answer 20–40 ms later, as
// serve --faults delay=20ms-40ms makes it. Run 3's machine was starved.
func writeSeries(t *testing.T, dir string, n, stepAt int, seed uint64) {
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
			r := vegeta.Result{Attack: archive.Label(surface, "127.0.0.1", "steady"), Seq: uint64(k), Code: 200, Method: "POST", URL: url,
				Timestamp: start.Add(time.Duration(k) * 10 * time.Millisecond), Latency: lat, Body: []byte(body), BytesIn: uint64(len(body))}
			if err := w.Add(&r); err != nil {
				t.Fatal(err)
			}
		}
		load := []float64{0.5, 0.4, 0.3}
		if i == 3 {
			load = []float64{9, 6, 4}
		}
		info := archive.RunInfo{Command: "verify", Profile: "verify", Target: fmt.Sprintf("http://127.0.0.1:%d", 30000+i), Embedded: true,
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
		if s.Target != history.Embedded {
			t.Errorf("series target %q, want the embedded target as one", s.Target)
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
	if code != exitOK || !strings.Contains(stdout, "no regression") || strings.Contains(stdout, "▲") || !strings.Contains(stdout, "verify · embedded · rest · labels v…: 20 runs") {
		t.Errorf("steady: exit %d, want 0 and no change\n%s%s", code, stdout, stderr)
	}
}

// checkHistoryMetrics parses history's --metrics with the Prometheus text
// parser: a regression series per surface and figure, p99 regressed.
func checkHistoryMetrics(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("--metrics: %v", err)
	}
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
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("--metrics: %v", err)
	}
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
