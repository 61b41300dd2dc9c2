package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/internal/keep"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// verifyWindow is the compressed window of the end-to-end verify runs.
var verifyWindow = 4 * time.Second

// startTarget serves the reference target with window, configured by
// mutate, wrapped by wrap (nil: unchanged), on a loopback port.
func startTarget(t *testing.T, window time.Duration, mutate func(*refserver.Config), wrap func(http.Handler) http.Handler) string {
	t.Helper()
	cfg := refserver.DefaultConfig()
	cfg.Window = window
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := refserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

// verdictJSON is schema 1, decoded strictly enough to check its shape.
type verdictJSON struct {
	Schema   int    `json:"schema"`
	Verdict  string `json:"verdict"`
	Target   string `json:"target"`
	WindowMS int64  `json:"window_ms"`
	Run      string `json:"run"`
	Surfaces []struct {
		Surface       string   `json:"surface"`
		WindowMS      int64    `json:"window_ms"`
		ExpectedLimit int      `json:"expected_limit"`
		ObservedLimit *int     `json:"observed_limit"`
		Model         string   `json:"model"`
		Alternatives  []string `json:"model_alternatives"`
		Replicas      int      `json:"model_replicas"`
		Decided       bool     `json:"model_decided"`
		RejectedCount *bool    `json:"rejected_count"`
		MCPRevision   string   `json:"mcp_revision"`
		Verdict       string   `json:"verdict"`
		Missing       string   `json:"missing"`
		Timing        string   `json:"timing"`
		Requests      int      `json:"requests"`
		Admitted      int      `json:"admitted"`
		Refused       int      `json:"refused"`
		Faults        int      `json:"faults"`
		OtherAnswers  int      `json:"other_answers"`
		Indeterminate int      `json:"indeterminate"`
		Latency       struct {
			Count int     `json:"count"`
			MinMS float64 `json:"min_ms"`
			P50MS float64 `json:"p50_ms"`
			P95MS float64 `json:"p95_ms"`
			P99MS float64 `json:"p99_ms"`
			MaxMS float64 `json:"max_ms"`
		} `json:"latency"`
		Checks []struct {
			Name    string `json:"name"`
			Verdict string `json:"verdict"`
			Detail  string `json:"detail"`
		} `json:"checks"`
	} `json:"surfaces"`
}

// runVerifyJSON runs verify --json --window window with args on the real
// clock and decodes the verdict. It runs as a process of its own (see
// runProcess): its pacing and its answers' timing are then scheduled by
// the system beside the package's other tests, not by this process's
// runtime among their goroutines.
func runVerifyJSON(t *testing.T, window time.Duration, args ...string) (int, verdictJSON, string) {
	t.Helper()
	out := keep.Dir(t)
	code, stdout, stderr := runProcess(t, append([]string{"verify", "--json", "--out", out, "--window", window.String()}, args...)...)
	var v verdictJSON
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("exit %d; stdout is not schema-1 JSON: %v\n%s\nstderr: %s", code, err, stdout, stderr)
	}
	matchSchema(t, "verdict.json", stdout)
	return code, v, stderr
}

// slowCopy writes a copy of a results file whose every latency is d
// longer, and returns its path.
func slowCopy(t *testing.T, path string, d time.Duration) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := filepath.Join(t.TempDir(), "slow.bin")
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dec, enc := vegeta.NewDecoder(f), vegeta.NewEncoder(w)
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			break
		}
		r.Latency += d
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// failing returns "surface/check" for every failed check.
func failing(v verdictJSON) []string {
	var out []string
	for _, s := range v.Surfaces {
		for _, c := range s.Checks {
			if c.Verdict == "fail" {
				out = append(out, s.Surface+"/"+c.Name)
			}
		}
	}
	return out
}

// deservedPass holds a real-clock run of verify against a correct limiter
// to what it deserves: no check failed, and every surface passed with its
// family decided a sliding log counting refusals, or, where the run's
// timing left the family or a check open, its verdict says why (the
// timing note: how long the answers took against the window, and what
// would decide it), with the sliding log among the families named and
// refusals never said not to count.
func deservedPass(t *testing.T, code int, v verdictJSON, stderr string) {
	t.Helper()
	if f := failing(v); len(f) > 0 || code != exitOK && code != exitInconclusive {
		t.Fatalf("exit %d, verdict %s, failing %v: a correct limiter failed\n%s\nstderr: %s", code, v.Verdict, f, surfacesSaid(v), stderr)
	}
	for _, s := range v.Surfaces {
		decidedOrTimed(t, s.Surface, s.Model, s.Decided, s.Alternatives, s.Timing, "sliding-log")
		counts := s.RejectedCount != nil && *s.RejectedCount
		switch {
		case s.Verdict == "pass" && counts:
		case s.Verdict == "inconclusive" && s.Timing != "" && (s.RejectedCount == nil || counts):
		default:
			t.Errorf("%s: %s, rejected_count %v, timing %q; want a pass counting refusals, or inconclusive with the run's timing said", s.Surface, s.Verdict, s.RejectedCount, s.Timing)
		}
	}
}

// decidedDocumented holds every surface of a run against a correct
// limiter to what the plan decides of it: the family decided a sliding
// log, and refused requests counted (rejected_count true). Left open is a
// failure: the plan and its follow-ups exist so that a correct limiter is
// decided in every run (bench/verify-series.sh measures it over many).
func decidedDocumented(t *testing.T, v verdictJSON, stderr string) {
	t.Helper()
	for _, s := range v.Surfaces {
		if !s.Decided || s.Model != "sliding-log" || s.RejectedCount == nil || !*s.RejectedCount {
			rc := "null"
			if s.RejectedCount != nil {
				rc = fmt.Sprint(*s.RejectedCount)
			}
			t.Errorf("%s: model %s decided %v (alternatives %v), rejected_count %s; want sliding-log decided, rejected_count true\nstderr: %s", s.Surface, s.Model, s.Decided, s.Alternatives, rc, stderr)
		}
	}
}

// TestVerifyEmbeddedPasses: verify passes the embedded target on the real
// clock, both families decided a sliding log counting refusals, in one
// run (or says why its timing left that open: deservedPass); and the run
// it archives is reported, analyzed and exported as documented (--label,
// --metrics, report.html, analyze --json and --junit).
func TestVerifyEmbeddedPasses(t *testing.T) {
	t.Parallel()
	prom := filepath.Join(t.TempDir(), "verify.prom")
	window := verifyWindow
	code, v, stderr := runVerifyJSON(t, window, "--label", "v1.4.2", "--metrics", prom)
	deservedPass(t, code, v, stderr)
	holdsEvidence(t, v)
	if v.Schema != 1 || v.WindowMS != window.Milliseconds() || len(v.Surfaces) != 2 || !strings.Contains(v.Run, "-verify") {
		t.Errorf("verdict %+v", v)
	}
	for _, s := range v.Surfaces {
		want := map[string]int{"rest": 240, "mcp": 120}[s.Surface]
		if s.ExpectedLimit != want || s.ObservedLimit == nil {
			t.Errorf("%s: expected limit %d, observed %v; want %d, and one observed", s.Surface, s.ExpectedLimit, s.ObservedLimit, want)
		}
		var names []string
		for _, c := range s.Checks {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, []string{"onset", "rolling", "rejected-count", "shape", "headers", "isolation", "spoof", "independence", "contract"}) {
			t.Errorf("%s checks %v", s.Surface, names)
		}
	}
	checkVerifyMetrics(t, v.Run, prom)
	// The run folder holds the HTML report (a figure of three charts per
	// surface), and `report` rewrites it.
	page, err := os.ReadFile(filepath.Join(v.Run, "report.html"))
	if err != nil || !bytes.Contains(page, []byte("first 429")) || bytes.Count(page, []byte("<svg")) != 2 || bytes.Count(page, []byte("fill:#FFFFFF")) != 6 {
		t.Errorf("report.html: %v; %d figures of %d charts, first 429 marked: %v", err, bytes.Count(page, []byte("<svg")), bytes.Count(page, []byte("fill:#FFFFFF")), bytes.Contains(page, []byte("first 429")))
	}
	other := filepath.Join(t.TempDir(), "r.html")
	if code, stdout, stderr := runCmd(t, "report", "--out", other, v.Run); code != exitOK || !strings.Contains(stdout, other) {
		t.Errorf("report: exit %d\n%s%s", code, stdout, stderr)
	}
	// analyze --json of the run folder: the verdict verify gave (its exit,
	// every surface's verdict, family and counts), in the same schema. A
	// run a busy host left inconclusive stays inconclusive, for the same
	// reason.
	again, stdout, stderr := runCmd(t, "analyze", "--json", v.Run)
	var w verdictJSON
	if err := json.Unmarshal([]byte(stdout), &w); err != nil || again != code || w.Verdict != v.Verdict || surfacesSaid(w) != surfacesSaid(v) {
		t.Errorf("analyze --json: exit %d, verdict %s (%v), verify's exit %d, verdict %s\nanalyze:\n%sverify:\n%sstderr: %s", again, w.Verdict, err, code, v.Verdict, surfacesSaid(w), surfacesSaid(v), stderr)
	} else {
		matchSchema(t, "verdict.json", stdout)
	}
	// analyze --junit: a test case per check per surface, the same exit.
	junit := filepath.Join(t.TempDir(), "junit.xml")
	if again, _, stderr := runCmd(t, "analyze", "--junit", junit, v.Run); again != code {
		t.Errorf("analyze --junit: exit %d, verify's %d\n%s", again, code, stderr)
	}
	if x, err := os.ReadFile(junit); err != nil || bytes.Count(x, []byte("<testcase ")) != 18 {
		t.Errorf("junit: %v, %d test cases, want 18 (nine checks, two surfaces):\n%s", err, bytes.Count(x, []byte("<testcase ")), x)
	}
}

// TestVerifyFailsAgainstServe: verify fails a reference target served by
// "ratecheck serve" with a token bucket, on the real clock: the bucket's
// refill admits requests whose window held the limit already, so rolling
// fails on both surfaces, exit 1.
func TestVerifyFailsAgainstServe(t *testing.T) {
	t.Parallel()
	base, _ := startServe(t, "--window", verifyWindow.String(), "--limiter", "token-bucket", "--quiet")
	code, v, stderr := runVerifyJSON(t, verifyWindow, "--target", base, "--checks", "limits")
	if code != exitCheckFailed || v.Verdict != "fail" || !slices.Contains(failing(v), "rest/rolling") || !slices.Contains(failing(v), "mcp/rolling") {
		t.Errorf("exit %d, verdict %s, failing %v; want 1, rolling failed on both surfaces\n%s\nstderr: %s", code, v.Verdict, failing(v), surfacesSaid(v), stderr)
	}
}

// readmeRun is a verify run against the embedded target archived in
// testdata (the README's first run): what compare makes of a run is held
// on it, not on a live run whose own tail decides what a shift proves.
const readmeRun = "testdata/readme-run/20261202T092826Z-verify"

// TestCompareVerifyRuns: a run compared with itself has no regression;
// with a copy whose answers all came back 50 ms later its p99 regressed
// (its own p99 is 4 ms); with a run made another way (a fleet's run.json,
// another window) compare warns and exits 2.
func TestCompareVerifyRuns(t *testing.T) {
	t.Parallel()
	if code, stdout, stderr := runCmd(t, "compare", readmeRun, readmeRun); code != exitOK || !strings.Contains(stdout, "no regression") {
		t.Errorf("compare with itself: exit %d\n%s%s", code, stdout, stderr)
	}
	slow := slowCopy(t, filepath.Join(readmeRun, "results.bin"), 50*time.Millisecond)
	if code, stdout, stderr := runCmd(t, "compare", "--window", "6s", readmeRun, slow); code != exitCheckFailed || !strings.Contains(stdout, "regression: rest: p99") {
		t.Errorf("compare with a slower run: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCmd(t, "compare", "--json", "--window", "6s", readmeRun, slow)
	if code != exitCheckFailed || !strings.Contains(stdout, `"rest: p99`) {
		t.Errorf("compare --json with a slower run: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	matchSchema(t, "compare.json", stdout)
	unlike := unlikeCopy(t, readmeRun)
	code, stdout, stderr = runCmd(t, "compare", "--json", readmeRun, unlike)
	if code != exitUsage || !strings.Contains(stderr, "were made in different ways (kind verify → fleet; window 6s → 30s)") || !strings.Contains(stdout, `"verdict": "incomparable"`) {
		t.Errorf("compare with an unlike run: exit %d, want 2\n%s%s", code, stdout, stderr)
	}
	matchSchema(t, "compare.json", stdout)
}

// unlikeCopy copies run folder dir with its run.json saying a fleet made
// it with a window of 30s.
func unlikeCopy(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	var info map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err == nil {
		err = json.Unmarshal(b, &info)
	}
	if err != nil {
		t.Fatal(err)
	}
	info["command"], info["window_ms"] = "fleet", 30000
	b, _ = json.Marshal(info)
	res, err := os.ReadFile(filepath.Join(dir, "results.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.WriteFile(filepath.Join(out, "run.json"), b, 0o644), os.WriteFile(filepath.Join(out, "results.bin"), res, 0o644)); err != nil {
		t.Fatal(err)
	}
	return out
}

// surfacesSaid is what a verdict says of each surface, a line a check:
// readable where a struct printed whole runs to one line of kilobytes.
func surfacesSaid(v verdictJSON) string {
	var b strings.Builder
	for _, s := range v.Surfaces {
		fmt.Fprintf(&b, "%s: %s, model %s (decided %v, alternatives %v), missing %q, timing %q, %d requests (%d admitted, %d refused, %d faults), p99 %.1f ms\n",
			s.Surface, s.Verdict, s.Model, s.Decided, s.Alternatives, s.Missing, s.Timing, s.Requests, s.Admitted, s.Refused, s.Faults, s.Latency.P99MS)
		for _, c := range s.Checks {
			fmt.Fprintf(&b, "  %s %s: %s\n", c.Name, c.Verdict, c.Detail)
		}
	}
	return b.String()
}

func TestVerifyUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "--checks", "speed"}, `--checks: unknown group "speed"`},
		{[]string{"verify", "--sources", "host"}, `--sources: "host" is not an IP address`},
		{[]string{"verify", "--rest-limit", "0"}, "--rest-limit must be at least 1, got 0"},
		{[]string{"verify", "--target", "http://127.0.0.1:1"}, "is unreachable"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		want := exitUsage
		if strings.Contains(tc.want, "unreachable") {
			want = exitUnreachable
		}
		if code != want || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, want, tc.want)
		}
	}
}
