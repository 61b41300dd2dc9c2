package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func summary(p99 float64, limit int, model, verdict string) RunSummary {
	return RunSummary{Run: "results/x", Verdict: verdict, Surfaces: []SurfaceSummary{
		{Surface: "rest", Requests: 566, Rate: 80, Throughput: 37, P50MS: 0.2, P95MS: 1, P99MS: p99, MaxMS: 3, ObservedLimit: &limit, Model: model, Verdict: verdict},
	}}
}

// TestCompare: each kind of regression, and none within the threshold.
func TestCompare(t *testing.T) {
	base := summary(2, 240, "sliding-log", "pass")
	tests := []struct {
		name string
		run  RunSummary
		want []string // substrings of the regressions, in order
	}{
		{"same", base, nil},
		{"p99 within 10%", summary(2.19, 240, "sliding-log", "pass"), nil},
		{"p99 up 50%", summary(3, 240, "sliding-log", "pass"), []string{"rest: p99 2.00 ms → 3.00 ms (+50%, more than +10%)"}},
		{"limit 241", summary(2, 241, "sliding-log", "pass"), []string{"rest: observed limit 240 → 241"}},
		{"fixed window, failing", summary(2, 240, "fixed-window", "fail"), []string{"verdict pass → fail", "rest: verdict pass → fail", "rest: model sliding-log → fixed-window"}},
		{"surface missing", RunSummary{Run: "results/y", Verdict: "pass"}, []string{"rest: not in the run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(base, tt.run, 0.10)
			if len(c.Regressions) != len(tt.want) {
				t.Fatalf("regressions %q, want %q", c.Regressions, tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(c.Regressions[i], w) {
					t.Errorf("regression %d %q, want %q", i, c.Regressions[i], w)
				}
			}
			if want := map[bool]string{true: "pass", false: "fail"}[len(tt.want) == 0]; c.Verdict != want {
				t.Errorf("verdict %s, want %s", c.Verdict, want)
			}
		})
	}
}

func TestCompareGolden(t *testing.T) {
	var got bytes.Buffer
	if err := CompareTable(&got, Compare(summary(2, 240, "sliding-log", "pass"), summary(3, 240, "sliding-log", "pass"), 0.10)); err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/compare.golden", got.Bytes())
	if !slices.Contains(strings.Split(got.String(), "\n"), "regression: rest: p99 2.00 ms → 3.00 ms (+50%, more than +10%)") {
		t.Errorf("no regression line:\n%s", got.String())
	}
}
