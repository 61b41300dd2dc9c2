package schedule

import (
	"math"
	"testing"
	"time"
)

// times returns every planned hit time of a
func times(s Schedule) []time.Duration {
	var ts []time.Duration
	for n := uint64(0); ; n++ {
		t, ok := s.At(n)
		if !ok {
			return ts
		}
		ts = append(ts, t)
	}
}

func TestSchedules(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name      string
		sched     Schedule
		wantCount int
		wantLast  time.Duration
		check     func(ts []time.Duration) string
	}{
		{"constant by duration", Constant(10, s, 0), 10, 900 * time.Millisecond, nil},
		{"constant by count", Constant(4, 0, 6), 6, 1250 * time.Millisecond, nil},
		{"linear 0 to 100 over 1s", Linear(0, 100, s, 0), 50, 0, func(ts []time.Duration) string {
			// Cumulative hits by t are 50 t²: hit 49 is due at sqrt(49/50) s.
			if want := time.Duration(math.Sqrt(49.0/50) * float64(s)); absDur(ts[49]-want) > time.Microsecond {
				return "hit 49 at " + ts[49].String() + ", want " + want.String()
			}
			return ""
		}},
		{"sine averages its mean", Sine(100, 50, s, 2*s, 0), 200, 0, func(ts []time.Duration) string {
			// The first half period runs above the mean: more than 50 hits in 0.5 s.
			n := 0
			for _, t := range ts {
				if t < s/2 {
					n++
				}
			}
			if n <= 50 || n >= 75 {
				return "hits in the first half period: " + time.Duration(n).String()
			}
			return ""
		}},
		{"steps", Steps([]StepSpec{{10, s}, {0, s}, {20, s}}, 0), 30, 2*s + 950*time.Millisecond, func(ts []time.Duration) string {
			for _, t := range ts {
				if t >= s && t < 2*s {
					return "a hit during the zero-rate step at " + t.String()
				}
			}
			return ""
		}},
		{"burst then probe", BurstThenProbe(5, 40*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond, 500*time.Millisecond), 10, 500 * time.Millisecond, func(ts []time.Duration) string {
			if ts[4] != 40*time.Millisecond || ts[5] != 100*time.Millisecond {
				return "burst end " + ts[4].String() + ", first probe " + ts[5].String()
			}
			return ""
		}},
		{"burst only, at once", BurstThenProbe(3, 0, 0, 0, 0), 3, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := times(tt.sched)
			if len(ts) != tt.wantCount {
				t.Fatalf("%d hits, want %d", len(ts), tt.wantCount)
			}
			if Count(tt.sched) != uint64(tt.wantCount) {
				t.Errorf("Count = %d, want %d", Count(tt.sched), tt.wantCount)
			}
			if tt.wantLast != 0 && Planned(tt.sched) != tt.wantLast {
				t.Errorf("Planned = %v, want %v", Planned(tt.sched), tt.wantLast)
			}
			for i := 1; i < len(ts); i++ {
				if ts[i] < ts[i-1] {
					t.Fatalf("hit %d at %v before hit %d at %v", i, ts[i], i-1, ts[i-1])
				}
			}
			if tt.check != nil {
				if msg := tt.check(ts); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// TestPacerSplitsAcrossSources: k pacers over one schedule, offset, send
// every hit exactly once between them, each at its planned time.
func TestPacerSplitsAcrossSources(t *testing.T) {
	sched := Constant(100, time.Second, 0)
	const k = 3
	offset := 500 * time.Millisecond
	seen := map[time.Duration]int{}
	for j := uint64(0); j < k; j++ {
		p := Pacer{Sched: sched, Offset: offset, K: k, J: j}
		for hits := uint64(0); ; hits++ {
			wait, stop := p.Pace(0, hits)
			if stop {
				break
			}
			seen[wait]++
			// Once due, the pacer says go at once.
			if w, _ := p.Pace(wait, hits); w != 0 {
				t.Fatalf("at its due time the pacer still waits %v", w)
			}
		}
	}
	if len(seen) != 100 {
		t.Fatalf("%d distinct send times, want 100", len(seen))
	}
	for n := range uint64(100) {
		due, _ := sched.At(n)
		if seen[offset+due] != 1 {
			t.Fatalf("hit %d (due %v) sent %d times", n, offset+due, seen[offset+due])
		}
	}
	if r := (Pacer{Sched: sched, K: 1}).Rate(300 * time.Millisecond); math.Abs(r-100) > 1 {
		t.Errorf("Rate = %v, want 100", r)
	}
}

// BenchmarkPace measures one pacing decision, the attack loop's hot path.
func BenchmarkPace(b *testing.B) {
	for _, tc := range []struct {
		name  string
		sched Schedule
	}{
		{"constant", Constant(1000, time.Hour, 0)},
		{"linear", Linear(10, 1000, time.Hour, 0)},
		{"sine", Sine(500, 200, time.Minute, time.Hour, 0)},
		{"burst-then-probe", BurstThenProbe(240, time.Second, 2*time.Second, 100*time.Millisecond, time.Hour)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := Pacer{Sched: tc.sched, K: 1}
			var hits uint64
			for b.Loop() {
				p.Pace(time.Duration(hits)*time.Millisecond, hits)
				hits = (hits + 1) % 100000
			}
		})
	}
}

// walk is the busiest count of hits in any span shorter than d, found by
// checking every pair of hits: the reference Busiest must match.
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

// TestBusiest: Busiest counts exactly the busiest second of a schedule's
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
				takes := func(g uint64) bool {
					for _, u := range shares {
						if u.takes(g) {
							return true
						}
					}
					return false
				}
				want := walk(sched, s, takes)
				if got := Busiest(shares, s); got != want {
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
