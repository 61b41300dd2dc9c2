package attack

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/method"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"rest-limit", true},
		{"capacity_2.v1", true},
		{"A", true},
		{strings.Repeat("a", scenario.MaxNameLen), true},
		{strings.Repeat("a", scenario.MaxNameLen+1), false},
		{"", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"-flag", false},
		{"x/../../../../tmp/ESCAPED", false},
		{`x\y`, false},
		{"x\ny", false},
		{"x\x1b[31m", false},
		{"x\u202ey", false}, // right-to-left override
		{"x y", false},
		{"x=y", false},
		{"café", false},
		{"x\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := scenario.CheckName(tt.name)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckName(%q) = %v, want ok %v", tt.name, err, tt.ok)
			}
			if err != nil && strings.ContainsFunc(err.Error(), func(r rune) bool { return r < 0x20 || r >= 0x7f }) {
				t.Errorf("the error holds a control or non-ASCII character: %q", err.Error())
			}
		})
	}
}

// TestDefaultNameIsSafe: a profile without a name is named for its file,
// every character CheckName refuses replaced.
func TestDefaultNameIsSafe(t *testing.T) {
	const body = "policy: {surface: rest}\nstreams:\n  - surface: rest\n    requests: [{path: /x}]\n    pacer: {type: constant, rate: 1/s, count: 1}\n"
	for file, want := range map[string]string{
		"profiles/rest-limit.yaml":             "rest-limit",
		"dir/my profile\x1b[31m.yml":           "my-profile--31m",
		"..yaml":                               "profile",
		"/tmp/" + strings.Repeat("b", 99):      strings.Repeat("b", scenario.MaxNameLen),
		`C:\profiles\caf` + "\u00e9" + ".yaml": "caf--",
	} {
		p, err := scenario.ParseProfile(file, []byte(body))
		if err != nil {
			t.Fatalf("%q: %v", file, err)
		}
		if p.Name != want || scenario.CheckName(p.Name) != nil {
			t.Errorf("%q: named %q, want %q", file, p.Name, want)
		}
	}
}

func TestSpanInSaturates(t *testing.T) {
	tests := []struct {
		span scenario.Span
		w    time.Duration
		want time.Duration
	}{
		{scenario.Span{W: 1e300}, time.Minute, math.MaxInt64},
		{scenario.Span{W: 1000}, 100000 * time.Hour, math.MaxInt64},
		{scenario.Span{W: 1e-300}, time.Minute, 1}, // never rounds to nothing
		{scenario.Span{W: 0.5}, 2 * time.Second, time.Second},
		{scenario.Span{W: 1}, 0, 0},
		{scenario.Span{D: time.Second}, time.Minute, time.Second},
	}
	for _, tt := range tests {
		if got := tt.span.In(tt.w); got != tt.want {
			t.Errorf("%v.In(%v) = %v, want %v", tt.span, tt.w, got, tt.want)
		}
	}
}

func plan(ps scenario.PacerSpec, start scenario.Span, w time.Duration) Plan {
	return Plan{Window: w, Profile: &scenario.Profile{Policy: scenario.Policy{Surface: method.REST}, Streams: []scenario.Stream{{Name: "s", Surface: method.REST, Start: start, Pacer: ps}}}}
}

// TestAbsurdPlansEnd: whatever the numbers (the profile's limits bypassed,
// a --window that stretches or squeezes them), PeakRate and Duration
// answer without walking the schedule, never negative, and above the
// default ceilings. Without the bound, each would run for hours.
func TestAbsurdPlansEnd(t *testing.T) {
	rate := func(n float64) scenario.Rate { return scenario.Rate{N: n, Per: scenario.Span{D: time.Second}} }
	forever := scenario.Span{W: 1e300}
	tests := []struct {
		name     string
		plan     Plan
		wantPeak bool // above --max-rate's default
		wantLong bool // above --max-duration's default
	}{
		{"rate 1e18/s", plan(scenario.PacerSpec{Type: "constant", Rate: rate(1e18), Duration: scenario.Span{D: time.Second}}, scenario.Span{}, time.Minute), true, false},
		{"rate 1e8/s for 60s", plan(scenario.PacerSpec{Type: "constant", Rate: rate(1e8), Duration: scenario.Span{D: time.Minute}}, scenario.Span{}, time.Minute), true, false},
		{"rate 1e18/s for ever", plan(scenario.PacerSpec{Type: "constant", Rate: rate(1e18), Duration: forever}, scenario.Span{}, time.Minute), true, true},
		{"linear to 1e18/s", plan(scenario.PacerSpec{Type: "linear", From: rate(1), To: rate(1e18), Duration: scenario.Span{D: time.Second}}, scenario.Span{}, time.Minute), true, false},
		{"sine at 1e18/s", plan(scenario.PacerSpec{Type: "sine", Rate: rate(1e18), Amplitude: rate(1), Period: scenario.Span{D: time.Second}, Duration: scenario.Span{D: time.Second}}, scenario.Span{}, time.Minute), true, false},
		{"steps at 1e18/s", plan(scenario.PacerSpec{Type: "steps", Steps: []scenario.Step{{Rate: rate(1), Duration: scenario.Span{D: time.Hour}}, {Rate: rate(1e18), Duration: scenario.Span{D: time.Second}}}}, scenario.Span{}, time.Minute), true, true},
		{"burst of 1e18", plan(scenario.PacerSpec{Type: "burst-then-probe", Burst: 1e18}, scenario.Span{}, time.Minute), true, false},
		{"probes every 1ns", plan(scenario.PacerSpec{Type: "burst-then-probe", Burst: 1, ProbeEvery: scenario.Span{W: 1e-300}, Until: scenario.Span{W: 1}}, scenario.Span{}, time.Minute), true, false},
		{"1/s for 1e300w", plan(scenario.PacerSpec{Type: "constant", Rate: rate(1), Duration: forever}, scenario.Span{}, time.Minute), false, true},
		{"1/s, count 1e18", plan(scenario.PacerSpec{Type: "constant", Rate: rate(1), Count: 1e18}, scenario.Span{}, time.Minute), false, true},
		{"start 1e300w", plan(scenario.PacerSpec{Type: "constant", Rate: rate(1), Count: 1}, forever, time.Minute), false, true},
		{"start 1000w at window 100000h", plan(scenario.PacerSpec{Type: "constant", Rate: rate(1), Count: 1e9}, scenario.Span{W: 1000}, 100000*time.Hour), false, true},
		{"216/w at window 1ns", plan(scenario.PacerSpec{Type: "constant", Rate: scenario.Rate{N: 216, Per: scenario.Span{W: 1}}, Duration: scenario.Span{D: time.Hour}}, scenario.Span{}, 1), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peak, d := tt.plan.PeakRate(), tt.plan.Duration()
			if peak < 0 || d < 0 || (peak > 1000) != tt.wantPeak || (d > 15*time.Minute) != tt.wantLong {
				t.Errorf("PeakRate %d, Duration %v; want above 1000/s %v, above 15m %v", peak, d, tt.wantPeak, tt.wantLong)
			}
		})
	}
}
