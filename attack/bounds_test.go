package attack

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/contract"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"rest-limit", true},
		{"capacity_2.v1", true},
		{"A", true},
		{strings.Repeat("a", MaxNameLen), true},
		{strings.Repeat("a", MaxNameLen+1), false},
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
			err := CheckName(tt.name)
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
		"/tmp/" + strings.Repeat("b", 99):      strings.Repeat("b", MaxNameLen),
		`C:\profiles\caf` + "\u00e9" + ".yaml": "caf--",
	} {
		p, err := ParseProfile(file, []byte(body))
		if err != nil {
			t.Fatalf("%q: %v", file, err)
		}
		if p.Name != want || CheckName(p.Name) != nil {
			t.Errorf("%q: named %q, want %q", file, p.Name, want)
		}
	}
}

func TestSpanInSaturates(t *testing.T) {
	tests := []struct {
		span Span
		w    time.Duration
		want time.Duration
	}{
		{Span{W: 1e300}, time.Minute, math.MaxInt64},
		{Span{W: 1000}, 100000 * time.Hour, math.MaxInt64},
		{Span{W: 1e-300}, time.Minute, 1}, // never rounds to nothing
		{Span{W: 0.5}, 2 * time.Second, time.Second},
		{Span{W: 1}, 0, 0},
		{Span{D: time.Second}, time.Minute, time.Second},
	}
	for _, tt := range tests {
		if got := tt.span.In(tt.w); got != tt.want {
			t.Errorf("%v.In(%v) = %v, want %v", tt.span, tt.w, got, tt.want)
		}
	}
}

// walk is the busiest count of hits in any span shorter than d, found by
// checking every pair of hits: the reference busiest must match.
func walk(s Schedule, d time.Duration, takes func(uint64) bool) int {
	ts := times(s)
	best := 0
	for i := range ts {
		n := 0
		for j := i; j < len(ts) && ts[j]-ts[i] < d; j++ {
			if takes(uint64(j)) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// TestBusiest: busiest counts exactly the busiest second of a schedule's
// share, and every schedule's bound from its highest rate (what busiest
// answers for a schedule too long to walk) is at least that.
func TestBusiest(t *testing.T) {
	const s = time.Second
	scheds := map[string]Schedule{
		"constant":           Constant(333.3, 3*s, 0),
		"constant by count":  Constant(50, 0, 120),
		"linear up":          Linear(10, 400, 2*s, 0),
		"linear down":        Linear(400, 10, 2*s, 0),
		"sine":               Sine(200, 150, 700*time.Millisecond, 3*s, 0),
		"steps":              Steps([]StepSpec{{100, 800 * time.Millisecond}, {0, 300 * time.Millisecond}, {500, 400 * time.Millisecond}, {30, 2 * s}}, 0),
		"burst at once":      BurstThenProbe(250, 0, 0, 0, 0),
		"burst then probes":  BurstThenProbe(250, 1200*time.Millisecond, 100*time.Millisecond, 37*time.Millisecond, 3*s),
		"probes inside over": BurstThenProbe(40, 2*s, 0, 9*time.Millisecond, 2500*time.Millisecond),
	}
	for name, sched := range scheds {
		t.Run(name, func(t *testing.T) {
			for _, shares := range [][]Pacer{
				{{Sched: sched, K: 1}},
				{{Sched: sched, K: 3, J: 0}, {Sched: sched, K: 3, J: 1}, {Sched: sched, K: 3, J: 2}},
				{{Sched: sched, K: 3, J: 1}},
				{{Sched: sched, K: 4, J: 0}, {Sched: sched, K: 4, J: 2}},
			} {
				var units []unit
				for _, p := range shares {
					units = append(units, unit{pacer: p})
				}
				takes := func(g uint64) bool {
					for _, u := range units {
						if u.pacer.takes(g) {
							return true
						}
					}
					return false
				}
				want := walk(sched, s, takes)
				if got := busiest(units, s); got != want {
					t.Errorf("%d shares: busiest = %d, want %d", len(shares), got, want)
				}
				all := walk(sched, s, func(uint64) bool { return true })
				// The bound may count one hit more per piece of the
				// schedule the second overlaps (a rounded send time),
				// and one for rounding up.
				if bound := sched.(mostIn).most(s); bound < uint64(all) || bound > uint64(all)+4 {
					t.Errorf("bound %d for a busiest second of %d hits: want at least that, at most 4 more", bound, all)
				}
			}
		})
	}
}

// plan is a one-stream plan of pacer ps at window w, bypassing the
// profile's limits.
func plan(ps PacerSpec, start Span, w time.Duration) Plan {
	return Plan{Window: w, Profile: &Profile{Policy: Policy{Surface: contract.REST}, Streams: []Stream{{Name: "s", Surface: contract.REST, Start: start, Pacer: ps}}}}
}

// TestAbsurdPlansEnd: whatever the numbers (the profile's limits bypassed,
// a --window that stretches or squeezes them), PeakRate and Duration
// answer without walking the schedule, never negative, and above the
// default ceilings. Without the bound, each would run for hours.
func TestAbsurdPlansEnd(t *testing.T) {
	rate := func(n float64) Rate { return Rate{N: n, Per: Span{D: time.Second}} }
	forever := Span{W: 1e300}
	tests := []struct {
		name     string
		plan     Plan
		wantPeak bool // above --max-rate's default
		wantLong bool // above --max-duration's default
	}{
		{"rate 1e18/s", plan(PacerSpec{Type: "constant", Rate: rate(1e18), Duration: Span{D: time.Second}}, Span{}, time.Minute), true, false},
		{"rate 1e8/s for 60s", plan(PacerSpec{Type: "constant", Rate: rate(1e8), Duration: Span{D: time.Minute}}, Span{}, time.Minute), true, false},
		{"rate 1e18/s for ever", plan(PacerSpec{Type: "constant", Rate: rate(1e18), Duration: forever}, Span{}, time.Minute), true, true},
		{"linear to 1e18/s", plan(PacerSpec{Type: "linear", From: rate(1), To: rate(1e18), Duration: Span{D: time.Second}}, Span{}, time.Minute), true, false},
		{"sine at 1e18/s", plan(PacerSpec{Type: "sine", Rate: rate(1e18), Amplitude: rate(1), Period: Span{D: time.Second}, Duration: Span{D: time.Second}}, Span{}, time.Minute), true, false},
		{"steps at 1e18/s", plan(PacerSpec{Type: "steps", Steps: []Step{{rate(1), Span{D: time.Hour}}, {rate(1e18), Span{D: time.Second}}}}, Span{}, time.Minute), true, true},
		{"burst of 1e18", plan(PacerSpec{Type: "burst-then-probe", Burst: 1e18}, Span{}, time.Minute), true, false},
		{"probes every 1ns", plan(PacerSpec{Type: "burst-then-probe", Burst: 1, ProbeEvery: Span{W: 1e-300}, Until: Span{W: 1}}, Span{}, time.Minute), true, false},
		{"1/s for 1e300w", plan(PacerSpec{Type: "constant", Rate: rate(1), Duration: forever}, Span{}, time.Minute), false, true},
		{"1/s, count 1e18", plan(PacerSpec{Type: "constant", Rate: rate(1), Count: 1e18}, Span{}, time.Minute), false, true},
		{"start 1e300w", plan(PacerSpec{Type: "constant", Rate: rate(1), Count: 1}, forever, time.Minute), false, true},
		{"start 1000w at window 100000h", plan(PacerSpec{Type: "constant", Rate: rate(1), Count: 1e9}, Span{W: 1000}, 100000*time.Hour), false, true},
		{"216/w at window 1ns", plan(PacerSpec{Type: "constant", Rate: Rate{N: 216, Per: Span{W: 1}}, Duration: Span{D: time.Hour}}, Span{}, 1), true, true},
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
