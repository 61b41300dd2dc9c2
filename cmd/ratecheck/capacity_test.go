package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/connectbyjbrh/ratecheck/refserver/sdkserver"
	"github.com/connectbyjbrh/ratecheck/report"
)

func TestCapacityUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no objective", []string{"capacity"}, `--slo "": want a quantile, <= and a duration`},
		{"bad surface", []string{"capacity", "--slo", "p99<=100ms", "--surface", "grpc"}, `--surface "grpc": want rest or mcp`},
		{"bad budget", []string{"capacity", "--slo", "p99<=100ms", "--error-budget", "2"}, "--error-budget"},
		// 100/s at 2/s an address (half of 240 per 60 s) needs 50 addresses:
		// refused before any load goes out.
		{"too few sources", []string{"capacity", "--slo", "p99<=100ms", "--target", "http://192.0.2.1:8080", "--max-rate", "100", "--sources", "127.0.0.1"},
			"need 50 source addresses"},
		{"none for a remote target", []string{"capacity", "--slo", "p99<=100ms", "--target", "http://192.0.2.1:8080", "--max-rate", "100"},
			"give at least 50 addresses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, tt.wantErr)
			}
		})
	}
}

// TestCapacityEndToEnd runs a search on the embedded pool (500/s) in
// compressed time, and holds its outputs to their forms: the JSON to its
// schema, the exit code to the verdict, the JUnit case to the exit code,
// --label to run.json, --metrics to the result (and to the Prometheus
// linter), and analyze's re-judgement of the archive to the live result.
func TestCapacityEndToEnd(t *testing.T) {
	t.Parallel() // its forms hold whatever the knee a busy host leaves
	out := t.TempDir()
	junit, prom := filepath.Join(out, "capacity.xml"), filepath.Join(out, "capacity.prom")
	code, stdout, stderr := runCmd(t, "capacity", "--slo", "p99<=100ms", "--start-rate", "300", "--max-rate", "2000",
		"--step", "1.5s", "--warmup", "0.5s", "--json", "--junit", junit, "--out", out, "--expect-rate", "100000",
		"--label", "v1.4.2", "--metrics", prom)
	matchSchema(t, "capacity.json", stdout)
	var res capacity.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want, _ := capacityExit(res, 100000)
	if code != want {
		t.Errorf("exit %d, want %d for verdict %s\n%s", code, want, res.Verdict, stderr)
	}
	if res.Verdict == capacity.VerdictFound && code != exitCheckFailed {
		t.Errorf("a knee of %v/s is below --expect-rate 100000: exit %d, want 1", *res.KneeRPS, code)
	}
	if !strings.Contains(stderr, "ratecheck capacity: step 0 (ramp) 300.0/s from 3 sources") {
		t.Errorf("no progress line for the first step:\n%s", stderr)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	b, err := os.ReadFile(junit)
	if err != nil || xml.Unmarshal(b, &suites) != nil || suites.Tests != 1 {
		t.Fatalf("JUnit %s: %v, %+v", junit, err, suites)
	}
	if (code == exitOK) != (suites.Failures+suites.Errors == 0) {
		t.Errorf("JUnit %+v disagrees with exit %d", suites, code)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-capacity"))
	if len(dirs) != 1 {
		t.Fatalf("run folders %v, want one *-capacity", dirs)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "report.html")); err != nil {
		t.Error(err)
	}
	if info, err := archive.ReadRunInfo(dirs[0]); err != nil || info == nil || info.Label != "v1.4.2" {
		t.Errorf("run.json: %v, %+v: want label v1.4.2", err, info)
	}
	checkCapacityMetrics(t, prom, res)
	acode, astdout, astderr := runCmd(t, "analyze", "--json", dirs[0])
	if acode != exitInconclusive && acode != exitOK && acode != exitCheckFailed && acode != exitUnreachable {
		t.Fatalf("analyze: exit %d\n%s", acode, astderr)
	}
	if astdout != stdout {
		t.Errorf("analyze re-judged the run otherwise:\nlive    %s\nanalyze %s", stdout, astdout)
	}
	if wantA, _ := capacityExit(res, 0); acode != wantA {
		t.Errorf("analyze exit %d, want %d", acode, wantA)
	}
	// report of the folder writes capacity's page again, not a verify page.
	page := filepath.Join(t.TempDir(), "again.html")
	if code, _, stderr := runCmd(t, "report", "--out", page, dirs[0]); code != exitOK {
		t.Errorf("report of a capacity run: exit %d\n%s", code, stderr)
	} else if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "<title>ratecheck capacity") {
		t.Errorf("report of a capacity run wrote no capacity page (%v)", err)
	}
	ccode, cout, cerr := runCmd(t, "compare", dirs[0], dirs[0])
	if res.KneeRPS != nil && (ccode != exitOK || !strings.Contains(cout, "knee change: +0.0/s")) {
		t.Errorf("compare of a run with itself: exit %d\n%s%s", ccode, cout, cerr)
	}
}

// TestCapacityTargetFailing: a target that answers every request 503 from
// the start is exit 3, and the search never goes past its first step.
func TestCapacityTargetFailing(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	code, stdout, stderr := runCmd(t, "capacity", "--slo", "p99<=100ms", "--target", srv.URL, "--start-rate", "400", "--max-rate", "400",
		"--step", "1s", "--warmup", "0.2s", "--window", "1s", "--json", "--out", t.TempDir())
	if code != exitUnreachable {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitUnreachable, stdout, stderr)
	}
	matchSchema(t, "capacity.json", stdout)
	var res capacity.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Verdict != capacity.VerdictNotFound || len(res.Steps) != 1 || res.LimitedBy != capacity.CauseErrors {
		t.Errorf("verdict %s limited by %s after %d steps (%v), want not-found by errors after 1", res.Verdict, res.LimitedBy, len(res.Steps), err)
	}
}

// checkCapacityMetrics holds capacity's --metrics to its result: the
// verdict as a state set of every verdict a search can reach (exactly the
// reached one 1), and, when a rate passed, the knee, its interval and the
// objective's quantile at the knee, labelled with the run.
func checkCapacityMetrics(t *testing.T, path string, res capacity.Result) {
	t.Helper()
	mfs := readMetrics(t, path)
	labels := func(m *dto.Metric) map[string]string {
		out := map[string]string{}
		for _, l := range m.Label {
			out[l.GetName()] = l.GetValue()
		}
		return out
	}
	states := map[string]float64{}
	for _, m := range mfs["ratecheck_verdict"].GetMetric() {
		l := labels(m)
		if l["kind"] != "capacity" || l["label"] != "v1.4.2" || l["target"] != "embedded" {
			t.Errorf("ratecheck_verdict labels %v, want kind capacity, label v1.4.2, target embedded", l)
		}
		if l["surface"] == "all" {
			states[l["verdict"]] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{}
	for _, v := range capacity.Verdicts {
		want[string(v)] = 0
	}
	want[string(res.Verdict)] = 1
	if !maps.Equal(states, want) {
		t.Errorf("ratecheck_verdict states %v, want %v", states, want)
	}
	gauge := func(name string) (float64, bool) {
		ms := mfs[name].GetMetric()
		if len(ms) != 1 {
			return 0, false
		}
		return ms[0].GetGauge().GetValue(), true
	}
	knee, ok := gauge("ratecheck_knee_rps")
	if res.KneeRPS == nil {
		if ok {
			t.Errorf("ratecheck_knee_rps %v with no knee", knee)
		}
		return
	}
	if !ok || knee != *res.KneeRPS {
		t.Errorf("ratecheck_knee_rps %v (%v), want %v", knee, ok, *res.KneeRPS)
	}
	if low, ok := gauge("ratecheck_knee_low_rps"); !ok || low != *res.KneeLowRPS {
		t.Errorf("ratecheck_knee_low_rps %v, want %v", low, *res.KneeLowRPS)
	}
	if high, ok := gauge("ratecheck_knee_high_rps"); ok != (res.KneeHighRPS != nil) || ok && high != *res.KneeHighRPS {
		t.Errorf("ratecheck_knee_high_rps %v (written %v), want %v (not written when no rate failed)", high, ok, res.KneeHighRPS)
	}
	lat := mfs["ratecheck_knee_latency_seconds"].GetMetric()
	if len(lat) != 1 || labels(lat[0])["objective"] != "p99<=100ms, error budget 1%" || lat[0].GetGauge().GetValue() <= 0 || lat[0].GetGauge().GetValue() > 0.1 {
		t.Errorf("ratecheck_knee_latency_seconds %v: want the p99 at the knee, within the objective, labelled objective=\"p99<=100ms, error budget 1%%\"", lat)
	}
}

// TestCapacityMCPSessions: a capacity search of a go-sdk MCP server that
// speaks only revision 2025-11-25 (sessions, made by initialize) settles
// the revision first, as verify does, and its tools/call steps carry the
// session: every call answered, none without Mcp-Session-Id, and run.json
// says what was spoken. Without the negotiation every call would be
// refused (a stateless call of a revision the server does not speak).
func TestCapacityMCPSessions(t *testing.T) {
	t.Parallel()
	url, rec := startSDKServer(t, sdkserver.Stateful20251125, "", 0, time.Second)
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "capacity", "--slo", "p99<=1s", "--surface", "mcp", "--target", url, "--window", "1s",
		"--start-rate", "20", "--max-rate", "20", "--step", "1s", "--warmup", "0.2s", "--json", "--out", out)
	var res capacity.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Steps) == 0 {
		t.Fatalf("exit %d: %v\n%s%s", code, err, stdout, stderr)
	}
	for _, s := range res.Steps {
		if s.Errors > 0 || s.Requests == 0 {
			t.Errorf("step at %.0f/s: %d of %d calls failed, want every call answered\n%s", s.OfferedRPS, s.Errors, s.Requests, stderr)
		}
	}
	rec.mu.Lock()
	noSession, versions := rec.noSession, maps.Clone(rec.versions)
	rec.mu.Unlock()
	if noSession > 0 || versions[mcpwire.Revision20251125] == 0 {
		t.Errorf("%d calls without Mcp-Session-Id; protocol versions %v: want every call in a session of %s", noSession, versions, mcpwire.Revision20251125)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-capacity"))
	if len(dirs) != 1 {
		t.Fatalf("run folders %v, want one", dirs)
	}
	info, err := archive.ReadRunInfo(dirs[0])
	if err != nil || info == nil || info.MCPRevision != mcpwire.Revision20251125 || info.MCP == nil || info.MCP.Handshakes < 1 {
		t.Errorf("run.json: %v, %+v: want mcp_revision %s and its handshake", err, info, mcpwire.Revision20251125)
	}
}

// TestCapacityModelOfPool runs a search on a pool of known capacity (4
// workers of 20 ms: 200/s nominal, rates a loaded host's generator keeps)
// in compressed time and holds the USL model of its steps to the pool.
// The steps past the knee are fitted, so the steps bound the peak, and it
// lies within 10 % of the capacity the pool really had on this host (4
// over the mean service time its workers gave: timers overshoot on a busy
// host), never above the nominal 200/s by more. A loaded host can hold the
// pool back further (its workers wait for a core between requests), never
// speed it up: where a step below that capacity failed, or the pool fell
// behind at a throughput under the band, the host set the figures the
// low side would rest on, and only the high side is held: a peak, if the
// model claims one, is not above the pool's (a host that failed every
// step from 125/s on, the pool's workers slowed to 144/s, left the fit no
// peak). A host that kept the generator itself from its schedule gets a
// client verdict, resting on the step's lateness, and nothing more is
// held (a suite run: 120/s sent with a lateness p99 past 40 ms, the
// pool's workers at 30.8 ms a service). The objective is lenient
// (p99<=250ms) so that such a host rarely fails a step below the
// capacity.
func TestCapacityModelOfPool(t *testing.T) {
	t.Parallel()
	const workers, nominal, band = 4, 200.0, 0.10
	url, meter, _ := poolTargetOf(t, workers)
	meanService := meter.mean
	began := time.Now()
	code, stdout, stderr := runCmd(t, "capacity", "--slo", "p99<=250ms", "--target", url, "--window", "1s", "--start-rate", "120",
		"--max-rate", "1000", "--step", "1.5s", "--warmup", "0.5s", "--max-lateness", "40ms", "--json", "--out", t.TempDir())
	matchSchema(t, "capacity.json", stdout)
	var res capacity.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	muReal := workers / meanService().Seconds()
	var out bytes.Buffer
	report.CapacityTable(&out, res)
	t.Logf("took %v, real capacity %.1f/s (mean service %v):\n%s", time.Since(began).Round(time.Millisecond), muReal, meanService(), out.String())
	// A generator the host kept from its schedule is said so by the
	// search (verdict client), with the step that missed it: no knee, no
	// model to hold, whatever the pool served (a host that slowed the
	// pool's workers slows the generator too: a quiet suite run's pool
	// served 91/s, its sleeps twice their length, while the generator sent
	// 63 of its 120/s). The verdict must rest on that step's own lateness,
	// or on how long the host kept the generator from running.
	if res.Verdict == capacity.VerdictClient {
		last := res.Steps[len(res.Steps)-1]
		onSchedule := last.LatenessP99MS <= 40 && last.AchievedRPS >= 0.95*last.OfferedRPS
		if onSchedule && (last.HostDelayMS == 0 || last.QuantileLowMS != nil && *last.QuantileLowMS > 250+2*last.HostDelayMS) {
			t.Errorf("verdict client but the last step went out on schedule (lateness p99 %.1fms, %.1f of %.1f/s) and missed the objective by more than the host's delay of %.1fms could add: %+v", float64(last.LatenessP99MS), last.AchievedRPS, last.OfferedRPS, float64(last.HostDelayMS), last)
		}
		t.Logf("the generator fell behind its schedule (lateness p99 %.1fms at step %d): the host bounds the search", float64(last.LatenessP99MS), len(res.Steps)-1)
		return
	}
	// Where the pool really served less than the search's first rate, or
	// within the band of it (its workers slowed by the host, or by the
	// race detector), the first step may be past the knee already: then
	// no rate is sustained, the search says so, latency-bound, and there
	// is no knee to hold a model to (under the first rate, it must say so).
	if muReal*(1-band) <= 120 && (res.Verdict == capacity.VerdictNotFound || muReal*(1+band) < 120) {
		if res.Verdict != capacity.VerdictNotFound || res.LimitedBy != capacity.CauseLatency || res.KneeRPS != nil {
			t.Errorf("the pool served %.1f/s, under the first step's 120/s: verdict %s limited by %s, want not-found, latency", muReal, res.Verdict, res.LimitedBy)
		}
		return
	}
	behind, held := 0, ""
	for i, s := range res.Steps {
		switch {
		case s.Fitted() && s.FellBehind() && s.ThroughputRPS < muReal*(1-band):
			held = fmt.Sprintf("step %d fell behind at %.1f/s", i, s.ThroughputRPS)
		case (s.Verdict == capacity.StepFail || s.Verdict == capacity.StepClient || s.LimitedBy == capacity.CauseLatency) && s.AchievedRPS < muReal*(1-band):
			held = fmt.Sprintf("step %d at %.1f/s was %s", i, s.AchievedRPS, s.Verdict)
		}
		behind += map[bool]int{true: 1}[s.Fitted() && s.FellBehind()]
	}
	u := res.USL
	switch {
	case (u == nil || behind == 0) && held != "":
		t.Logf("%s, under the pool's real capacity (a loaded host) before the search passed it: the model is not held to the pool", held)
		return
	case u == nil || behind == 0:
		t.Fatalf("model %v over %d steps, %d of them past the pool's capacity: want the steps past the knee fitted", u != nil, len(res.Steps), behind)
	case u.PeakRPS == nil && held != "":
		t.Logf("peak unbounded (%s): %s, the host holding the pool back set the steps it would rest on, and the model claims no peak", *u.PeakReason, held)
		return
	case u.PeakRPS == nil:
		t.Fatalf("peak unbounded (%s), want it bounded by the steps past the knee", *u.PeakReason)
	}
	peak := *u.PeakRPS
	if limit := min(nominal, muReal) * (1 + band); peak > limit {
		t.Errorf("peak %.1f/s above %.1f/s: more than %.0f %% over the pool's capacity (real %.1f/s, nominal %.0f/s)", peak, limit, 100*band, muReal, nominal)
	}
	switch low := muReal * (1 - band); {
	case peak < low && held != "":
		t.Logf("peak %.1f/s below %.1f/s: %s, the host holding the pool back", peak, low, held)
	case peak < low:
		t.Errorf("peak %.1f/s below %.1f/s: more than %.0f %% under the pool's real capacity %.1f/s", peak, low, 100*band, muReal)
	}
	if u.PeakStatus == capacity.PeakAboveMeasured && !strings.Contains(out.String(), "not headroom") {
		t.Errorf("a peak above what was measured, not flagged:\n%s", out.String())
	}
}

// TestCapacityContract: capacity --contract --route loads a contract's
// route on serve --contract's pool (12 workers of 8 ms: 1 500/s), keyed
// by an API key: each step is spread over the contract's identities, one
// key each at most half its limit, so that no request is refused; the
// knee, when the host lets the search find one, is within the pool's
// capacity; the keys' values are written nowhere. A pool of keys too
// small for --max-rate is refused with the number needed, before
// anything is sent, as is a route the search cannot spread.
func TestCapacityContract(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	contract := func(keys int, extra string) string {
		var b strings.Builder
		b.WriteString("routes:\n  - {name: search, path: /api/public/search, query: {q: rate limits}}\n  - {name: export, path: /v1/export}\nidentities:\n")
		for i := range keys {
			key := filepath.Join(dir, fmt.Sprintf("key-%d-%d", keys, i))
			if err := os.WriteFile(key, fmt.Appendf(nil, "secret-%d\n", i), 0o600); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "  - {name: key-%d, headers: {X-Api-Key: \"${file:%s}\"}}\n", i, key)
		}
		b.WriteString("limits:\n  - {name: per-key, routes: [search], quota: 200, window: 1s, key: header X-Api-Key, refused: {status: 429}}\n" + extra)
		file := filepath.Join(dir, fmt.Sprintf("contract-%d.yaml", keys))
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	file := contract(20, "  - {name: everybody, routes: [export], quota: 10, window: 1s, key: global, refused: {status: 429}}\n")
	base, _ := startServe(t, "--contract", file, "--workers", "12", "--service", "8ms", "--quiet")
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "capacity", "--contract", file, "--route", "search", "--target", base, "--slo", "p99<=100ms",
		"--start-rate", "400", "--max-rate", "2000", "--step", "1.5s", "--warmup", "0.5s", "--json", "--out", out)
	matchSchema(t, "capacity.json", stdout)
	var res capacity.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	if want, _ := capacityExit(res, 0); code != want {
		t.Errorf("exit %d, want %d for verdict %s\n%s", code, want, res.Verdict, stderr)
	}
	if !strings.Contains(stderr, "step 0 (ramp) 400.0/s from 4 keys") {
		t.Errorf("the first step is not said spread over 4 keys (400/s at 100/s a key):\n%s", stderr)
	}
	for i, s := range res.Steps {
		if s.Refused > 0 {
			t.Errorf("step %d at %.1f/s over %d keys: %d refused, want none (each key at half its limit)", i, s.OfferedRPS, s.Sources, s.Refused)
		}
	}
	if res.Verdict == capacity.VerdictFound && *res.KneeRPS > 1500*1.1 {
		t.Errorf("knee %.1f/s above the pool's 1500/s", *res.KneeRPS)
	}
	if res.KneeRPS != nil {
		t.Logf("verdict %s, knee %.1f/s", res.Verdict, *res.KneeRPS)
	}
	err := filepath.Walk(out, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte("secret-")) {
			t.Errorf("%s holds a key's value", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	recordsContract(t, out, file, "search")

	small := contract(3, "")
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--contract", small, "--route", "search", "--max-rate", "2000"}, "2000 requests per second need 20 keys (identities sending X-Api-Key), each at most half its limit of 200 per 1s, and the contract has 3"},
		{[]string{"--contract", file, "--route", "export"}, "held to limit everybody, one budget for everybody"},
		{[]string{"--contract", file, "--route", "nothing"}, `--route "nothing": ` + file + " has no such route (routes: search, export)"},
		{[]string{"--contract", file}, "--contract needs --route NAME"},
		{[]string{"--route", "search"}, "give the contract with --contract FILE"},
		{[]string{"--contract", file, "--route", "search", "--surface", "mcp"}, "--surface with --contract"},
	} {
		code, _, stderr := runCmd(t, append([]string{"capacity", "--slo", "p99<=100ms", "--target", base}, bad.args...)...)
		if code != exitUsage || !strings.Contains(stderr, bad.want) {
			t.Errorf("capacity %v: exit %d, stderr %q; want exit 2 saying %q", bad.args, code, stderr, bad.want)
		}
	}
}

// recordsContract checks that the capacity run folder under out records
// the contract read from file, searched on route (its canonical form and
// that form's hash), and that compare refuses it beside a copy recording
// another contract while comparing it with itself.
func recordsContract(t *testing.T, out, file, route string) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(out, "*-capacity"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("run folders %q under %s: want one", dirs, out)
	}
	run, _, err := archive.ReadCapacity(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := scenario.LoadContract(file)
	if err != nil {
		t.Fatal(err)
	}
	text, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(text)
	want := &archive.ContractInfo{File: file, SHA256: hex.EncodeToString(sum[:]), Route: route, Text: string(text)}
	if diff := cmp.Diff(want, run.Contract); diff != "" {
		t.Errorf("run.json's contract (-want +got):\n%s", diff)
	}
	other := filepath.Join(t.TempDir(), filepath.Base(dirs[0]))
	if err := os.CopyFS(other, os.DirFS(dirs[0])); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(other, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte(want.SHA256), []byte(strings.Repeat("0", 64)), 1)
	if err := os.WriteFile(filepath.Join(other, "run.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(file)
	wantWhy := fmt.Sprintf("searched different things (contract %s@%s → %s@000000000000)", name, want.SHA256[:12], name)
	if code, _, stderr := runCmd(t, "compare", dirs[0], other); code != exitUsage || !strings.Contains(stderr, wantWhy) {
		t.Errorf("compare with another contract's search: exit %d, stderr %q; want exit 2 saying %q", code, stderr, wantWhy)
	}
	if code, stdout, stderr := runCmd(t, "compare", dirs[0], dirs[0]); code == exitUsage {
		t.Errorf("compare of a search with itself: exit 2\n%s%s", stdout, stderr)
	}
}
