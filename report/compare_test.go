package report

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
)

// surfaceOfRun summarizes a run's latencies as Summarize does.
func surfaceOfRun(lat, sent []time.Duration) analyze.SurfaceSummary {
	s := slices.Clone(lat)
	slices.Sort(s)
	limit := 240
	at := func(q float64) clock.Millis { return clock.Ms(s[min(max(int(float64(len(s))*q+0.5)-1, 0), len(s)-1)]) }
	rate := float64(len(lat)) / max(sent[len(sent)-1].Seconds(), 1e-3)
	return analyze.SurfaceSummary{Surface: "rest", Requests: len(lat), Rate: rate, Throughput: rate * 240 / float64(len(lat)),
		P50MS: at(0.5), P95MS: at(0.95), P99MS: at(0.99), MaxMS: clock.Ms(s[len(s)-1]),
		ObservedLimit: &limit, Model: "sliding-log", Verdict: "pass", Latencies: lat, Sent: sent}
}

// pairOf is a baseline and a run of one surface.
func pairOf(base, baseSent, run, runSent []time.Duration) (analyze.RunSummary, analyze.RunSummary) {
	return analyze.RunSummary{Run: "base", Verdict: "pass", Surfaces: []analyze.SurfaceSummary{surfaceOfRun(base, baseSent)}},
		analyze.RunSummary{Run: "run", Verdict: "pass", Surfaces: []analyze.SurfaceSummary{surfaceOfRun(run, runSent)}}
}

var defaults = analyze.CompareOptions{MaxP99Increase: 0.10, P99Floor: time.Millisecond}

func TestCompareGolden(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	delayed := hostsim.Quiet
	delayed.AddLo, delayed.Add = 20*time.Millisecond, 40*time.Millisecond
	bl, bs := hostsim.Quiet.Run(rng, 560)
	rl, rs := delayed.Run(rng, 560)
	base, run := pairOf(bl, bs, rl, rs)
	base.Run, run.Run = "results/20261206T120000Z-verify", "results/20261206T130000Z-verify"
	var got bytes.Buffer
	if err := CompareTable(&got, analyze.Compare(base, run, defaults)); err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/compare.golden", got.Bytes())
	if !strings.Contains(got.String(), "regression: rest: p99 ") {
		t.Errorf("no regression line:\n%s", got.String())
	}
}

// TestCompareTableUnlike: runs made in different ways get a warning per
// difference and no verdict of regression.
func TestCompareTableUnlike(t *testing.T) {
	lat := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	b, r := pairOf(lat, lat, lat, lat)
	b.Kind, b.WindowMS, r.Kind, r.WindowMS = "verify", 6000, "fleet", 30000
	var buf bytes.Buffer
	if err := CompareTable(&buf, analyze.Compare(b, r, analyze.CompareOptions{MaxP99Increase: 0.1, P99Floor: time.Millisecond})); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"warning: not comparable: kind verify → fleet", "warning: not comparable: window 6s → 30s", "no verdict: the runs were made in different ways"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "regression:") || strings.Contains(out, "no regression") {
		t.Errorf("the table judges regressions of unlike runs:\n%s", out)
	}
}
