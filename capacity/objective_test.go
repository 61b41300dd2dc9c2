package capacity

import (
	"strings"
	"testing"
	"time"
)

func TestParseSLO(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		q       float64
		max     time.Duration
		wantErr string
	}{
		{in: "p99<=100ms", q: 0.99, max: 100 * time.Millisecond},
		{in: "p95<=80ms", q: 0.95, max: 80 * time.Millisecond},
		{in: "p99.9<=1.5s", q: 0.999, max: 1500 * time.Millisecond},
		{in: " p50 <= 2ms ", q: 0.5, max: 2 * time.Millisecond},
		{in: "p99<100ms", wantErr: `slo "p99<100ms": want a quantile, <= and a duration`},
		{in: "99<=100ms", wantErr: "want a quantile, <= and a duration"},
		{in: "p100<=1s", wantErr: "the quantile p100 must be above p0 and below p100"},
		{in: "p0<=1s", wantErr: "the quantile p0 must be above p0"},
		{in: "p99<=soon", wantErr: `"soon" is not a duration above zero`},
		{in: "p99<=0s", wantErr: `"0s" is not a duration above zero`},
		{in: "", wantErr: `slo "": want a quantile`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSLO(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSLO(%q) error %v, want it to contain %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := got.Quantile - tc.q; diff > 1e-12 || diff < -1e-12 || got.Max != tc.max {
				t.Errorf("ParseSLO(%q) = %v, %v; want %v, %v", tc.in, got.Quantile, got.Max, tc.q, tc.max)
			}
			if s := got.String(); s != strings.Join(strings.Fields(tc.in), "") {
				t.Errorf("String() = %q", s)
			}
			// The quantile's name is what the objective writes before <=.
			if q, _, _ := strings.Cut(got.String(), "<="); got.QuantileName() != q {
				t.Errorf("QuantileName() = %q, want %q", got.QuantileName(), q)
			}
			if err := (Objective{SLO: got, ErrorBudget: defaultErrorBudget}).Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSLOStringWithoutText(t *testing.T) {
	t.Parallel()
	if s := (SLO{Quantile: 0.999, Max: time.Second}).String(); s != "p99.9<=1s" {
		t.Errorf("String() = %q, want p99.9<=1s", s)
	}
}

func TestParseErrorBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    float64
		wantErr string
	}{
		{in: "0.01", want: 0.01},
		{in: "0.001", want: 0.001},
		{in: "1%", want: 0.01},
		{in: "0", wantErr: `error_budget "0": want a ratio above 0 and below 1`},
		{in: "1", wantErr: "want a ratio above 0 and below 1"},
		{in: "-0.1", wantErr: "want a ratio above 0 and below 1"},
		{in: "lots", wantErr: `error_budget "lots": want the share of requests that may fail`},
		{in: "NaN", wantErr: "want the share of requests that may fail"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseErrorBudget(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseErrorBudget(%q) error %v, want it to contain %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseErrorBudget(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestObjective: an objective is named one way however the run spelled
// it, and objectives that differ are named apart.
func TestObjective(t *testing.T) {
	t.Parallel()
	tests := []struct {
		slo    string
		budget float64
		want   string
	}{
		{"p99<=100ms", 0.01, "p99<=100ms, error budget 1%"},
		{"p99<=0.1s", 0.01, "p99<=100ms, error budget 1%"},
		{"p99 <= 100ms", 0.01, "p99<=100ms, error budget 1%"},
		{"p99<=100ms", 0.07, "p99<=100ms, error budget 7%"},
		{"p99<=50ms", 0.01, "p99<=50ms, error budget 1%"},
		{"p95<=100ms", 0.01, "p95<=100ms, error budget 1%"},
		{"p99.9<=1.5s", 0.001, "p99.9<=1.5s, error budget 0.1%"},
		{"not an objective", 0.01, "not an objective, error budget 1%"},
	}
	for _, tt := range tests {
		if got := (&Result{SLO: tt.slo, ErrorBudget: tt.budget}).Objective(); got != tt.want {
			t.Errorf("objective(%q, %g) = %q, want %q", tt.slo, tt.budget, got, tt.want)
		}
	}
}
