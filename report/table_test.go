package report

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// sample is a fixed report: one passing and one failing surface.
func sample() *analyze.Report {
	limit, yes := 240, true
	return &analyze.Report{
		Verdict: analyze.Verdict{Schema: 1, Verdict: analyze.Fail, Target: "http://127.0.0.1:8080", WindowMS: 60000, Run: "results/20261129T120000Z-verify",
			Surfaces: []analyze.SurfaceVerdict{
				{Surface: "rest", ExpectedLimit: 240, ObservedLimit: &limit, Model: "sliding-log", RejectedCount: &yes, Verdict: analyze.Pass,
					Checks: []analyze.Check{{Name: "onset", Verdict: analyze.Pass, Detail: "from 127.0.0.1 the first 429 came after exactly 240 admitted in one window (observed_limit 240)"}}},
				{Surface: "mcp", ExpectedLimit: 120, Model: "none", Verdict: analyze.Fail,
					Checks: []analyze.Check{{Name: "onset", Verdict: analyze.Fail, Detail: "no 429 at all"}, {Name: "shape", Verdict: analyze.Skip, Detail: "no 429 to inspect"}}},
			}},
		Surfaces: []analyze.SurfaceDetail{{Requests: 250, Admitted: 240, Refused: 10, Sources: []string{"127.0.0.1"}, Latency: analyze.LatencyMetrics(sampleLatencies())},
			{Requests: 130, Admitted: 130, Sources: []string{"127.0.0.1"}}},
		Warnings: []string{"results.bin: ends mid-record; read the 380 complete records before it"},
	}
}

// sampleLatencies are 250 latencies from 0.3 ms to 8.8 ms and one of
// 15.3 ms, which the last bin of the histogram holds.
func sampleLatencies() []time.Duration {
	lat := []time.Duration{15300 * time.Microsecond}
	for i := range 249 {
		lat = append(lat, 300*time.Microsecond+time.Duration(i*i)*137*time.Nanosecond)
	}
	return lat
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file  string
		write func(*bytes.Buffer, *analyze.Report) error
	}{
		{"testdata/tables.golden", func(b *bytes.Buffer, r *analyze.Report) error { return Tables(b, r) }},
		{"testdata/verdict.golden.json", func(b *bytes.Buffer, r *analyze.Report) error { return JSON(b, r) }},
		{"testdata/junit.golden.xml", func(b *bytes.Buffer, r *analyze.Report) error { return JUnit(b, "ratecheck verify", VerdictSuites(r)) }},
	} {
		var got bytes.Buffer
		if err := tc.write(&got, sample()); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.file, got.Bytes())
	}
	var tables bytes.Buffer
	if err := Tables(&tables, sample()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tables.String(), "13.8ms-15.3ms:1\n") {
		t.Errorf("the histogram's last bin does not end at the maximum, 15.3ms, holding it:\n%s", tables.String())
	}
}

func TestWrap(t *testing.T) {
	if got := wrap("aa bb cc dd", 5); got != "aa bb\ncc dd" {
		t.Errorf("wrap = %q", got)
	}
}

// fleetSample is a two-wave fleet report with one failed check.
func fleetSample() *jitter.Report {
	return &jitter.Report{Verdict: analyze.Fail, CollisionRatio: 1.04, RecollisionRate: 0.02, KSP: 0.61, EpsilonMS: 2, Alpha: 0.01, Null: "equal", Sims: 3599,
		Clients: 100, Requests: 216, AttemptsMean: 3.78, AttemptsMax: 4,
		Waves: []jitter.Wave{
			{Attempt: 2, Clients: 100, RangeLowMS: 50, RangeMS: 100, Collisions: 190, Expected: 189.5, Bound: 243, CollisionRatio: 1.003, Recollided: 3, RecollisionRate: 0.016, RecollisionMax: 0.02, RecollBound: 10, KSP: 0.52, PeakBin: 5, PeakBound: 10, LateP99MS: 12.5, Verdict: analyze.Pass},
			{Attempt: 3, Clients: 100, RangeLowMS: 100, RangeMS: 200, Collisions: 52, Expected: 52.8, Bound: 82, CollisionRatio: 0.985, KSP: 0.7, PeakBin: 4, PeakBound: 7, LateP99MS: 3.25, Verdict: analyze.Pass},
		},
		Checks: []analyze.Check{
			{Name: "jitter", Verdict: analyze.Pass, Detail: "every wave is within the bounds of independent jitter"},
			{Name: "retry-answers", Verdict: analyze.Fail, Detail: "an answer was retried 1 times: only 429, 5xx and transport faults may be"},
		}}
}

func TestFleetGolden(t *testing.T) {
	var got bytes.Buffer
	if err := FleetTables(&got, fleetSample(), "equal", "results/20261130T000000Z-fleet"); err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/fleet.golden", got.Bytes())
}

// golden compares got with a golden file (rewritten with -update).
func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", file, diff)
	}
}

// TestJUnitSchema: the JUnit file validates against the JUnit XML schema
// (testdata/junit.xsd) with xmllint, and the check does fail a file that
// breaks the schema. Skipped where xmllint is absent.
func TestJUnitSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("no xmllint on PATH (apt-get install libxml2-utils; .ci/run installs it)")
	}
	var good bytes.Buffer
	if err := JUnit(&good, "ratecheck verify", VerdictSuites(sample())); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(good.Bytes(), []byte("<testcase "), []byte("<testcase bogus=\"1\" "), 1)
	for _, tc := range []struct {
		name  string
		data  []byte
		valid bool
	}{{"ours", good.Bytes(), true}, {"broken", bad, false}} {
		path := filepath.Join(t.TempDir(), "junit.xml")
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", path).CombinedOutput()
		if (err == nil) != tc.valid {
			t.Errorf("%s: xmllint said %v, want valid=%v:\n%s", tc.name, err, tc.valid, out)
		}
	}
}

// TestSummaryLineSaysWhatIsOpen: a surface's first line names the fitted
// limiter as the fit found it (replicas, a limit other than the
// documented), and what the run left open beside it, of another family
// or of the same one: "model sliding-log" alone read as decided where the
// run could not tell 2 replicas of 240 from one log of 480.
func TestSummaryLineSaysWhatIsOpen(t *testing.T) {
	t.Parallel()
	log := func(replicas, limit int) analyze.Candidate {
		return analyze.Candidate{Family: "sliding-log", Replicas: replicas, Limit: limit}
	}
	for _, tt := range []struct {
		name    string
		decided bool
		best    analyze.Candidate
		alts    []analyze.Candidate
		fams    []string
		want    string
	}{
		{"decided", true, log(0, 240), nil, nil, "model sliding-log, "},
		{"replicas or one of their sum", false, log(2, 240), []analyze.Candidate{log(0, 480)}, nil,
			"model 2 replicas of sliding-log (or sliding-log of 480: the run's timing cannot tell them apart), "},
		{"a higher limit or replicas", false, log(0, 480), []analyze.Candidate{log(2, 240)}, nil,
			"model sliding-log of 480 (or 2 replicas of sliding-log: the run's timing cannot tell them apart), "},
		{"another family", false, log(0, 240), []analyze.Candidate{{Family: "sliding-window-counter", Limit: 240}}, []string{"sliding-window-counter"},
			"model sliding-log (or sliding-window-counter: the run's timing cannot tell them apart), "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := analyze.SurfaceVerdict{Surface: "rest", ExpectedLimit: 240, Model: tt.best.Family, ModelReplicas: max(tt.best.Replicas, 1),
				ModelDecided: tt.decided, ModelAlternatives: tt.fams}
			d := analyze.SurfaceDetail{Fit: analyze.Fit{Best: tt.best, Alternatives: tt.alts, Decided: tt.decided}}
			if got := summaryLine(s, d); !strings.Contains(got, tt.want) {
				t.Errorf("%q lacks %q", got, tt.want)
			}
		})
	}
}
