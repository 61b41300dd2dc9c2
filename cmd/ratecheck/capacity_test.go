package main

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/capacity"
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
// and analyze's re-judgement of the archive to the live result.
func TestCapacityEndToEnd(t *testing.T) {
	t.Parallel() // its forms hold whatever the knee a busy host leaves
	out := t.TempDir()
	junit := filepath.Join(out, "capacity.xml")
	code, stdout, stderr := runCmd(t, "capacity", "--slo", "p99<=100ms", "--start-rate", "300", "--max-rate", "2000",
		"--step", "1.5s", "--warmup", "0.5s", "--json", "--junit", junit, "--out", out, "--expect-rate", "100000")
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
	ccode, cout, cerr := runCmd(t, "compare", dirs[0], dirs[0])
	if res.KneeRPS != nil && (ccode != exitOK || !strings.Contains(cout, "knee change: +0.0/s")) {
		t.Errorf("compare of a run with itself: exit %d\n%s%s", ccode, cout, cerr)
	}
}

// testCapacityTargetFailing: a target that answers every request 503 from
// the start is exit 3, and the search never goes past its first step.
func testCapacityTargetFailing(t *testing.T) {
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
