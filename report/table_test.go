package report

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/connectbyjbrh/ratecheck/analyze"
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
		Surfaces: []analyze.SurfaceDetail{{Requests: 250, Admitted: 240, Refused: 10, Sources: []string{"127.0.0.1"}}, {Requests: 130, Admitted: 130, Sources: []string{"127.0.0.1"}}},
		Warnings: []string{"results.bin: ends mid-record; read the 380 complete records before it"},
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		file  string
		write func(*bytes.Buffer, *analyze.Report) error
	}{
		{"testdata/tables.golden", func(b *bytes.Buffer, r *analyze.Report) error { return Tables(b, r) }},
		{"testdata/verdict.golden.json", func(b *bytes.Buffer, r *analyze.Report) error { return JSON(b, r) }},
	} {
		var got bytes.Buffer
		if err := tc.write(&got, sample()); err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(tc.file, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), got.String()); diff != "" {
			t.Errorf("%s differs (-want +got):\n%s", tc.file, diff)
		}
	}
}

func TestWrap(t *testing.T) {
	if got := wrap("aa bb cc dd", 5); got != "aa bb\ncc dd" {
		t.Errorf("wrap = %q", got)
	}
}
