package main

import (
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
)

// TestAnalysisConfigWarnings: what run.json records, or its absence, is
// said in the verdict's warnings: a window assumed, a run that did not
// finish, a run that fell far behind its schedule (not a few milliseconds).
func TestAnalysisConfigWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		runs   []archive.RunInfo
		window time.Duration
		want   []string // each in some warning; nil: no warning at all
	}{
		{"no run.json", nil, 0, []string{"has no run.json: judged against the documented window of 1m0s"}},
		{"--window given", nil, 2 * time.Second, nil},
		{"finished run", []archive.RunInfo{{Dir: "r", WindowMS: 4000}}, 0, nil},
		{"killed run", []archive.RunInfo{{Dir: "r", WindowMS: 4000, InProgress: true}}, 0, []string{"r: the run did not finish"}},
		{"a little late", []archive.RunInfo{{Dir: "r", WindowMS: 4000, BehindMS: 30, LateRequests: 3}}, 0, nil},
		{"fell behind", []archive.RunInfo{{Dir: "r", WindowMS: 4000, BehindMS: 1234, LateRequests: 812}}, 0,
			[]string{"r: the run fell behind its schedule: 812 requests went out more than 10ms late, the latest 1.234s late"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := analysisConfig(&decode.Meta{Runs: tt.runs}, tt.window, 240, 120, nil, "results.bin")
			all := strings.Join(cfg.Warnings, "\n")
			if tt.want == nil && len(cfg.Warnings) > 0 {
				t.Errorf("warnings %q, want none", all)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q, want one with %q", all, w)
				}
			}
		})
	}
}
