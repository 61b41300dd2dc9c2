package timeline

import (
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/method"
)

const ms = time.Millisecond

// every returns a Due of count hits, one every gap from start.
func every(start, gap time.Duration, count uint64) func(uint64) (time.Duration, bool) {
	return func(n uint64) (time.Duration, bool) { return start + time.Duration(n)*gap, n < count }
}

func stream(key string, start, gap time.Duration, count uint64) Stream {
	return Stream{Key: key, Due: every(start, gap, count), Start: start, Count: count}
}

// TestGroupOrder: the hits of a group's streams go out in due order
// across them, ties in the streams' order: a hit is Ready only once every
// hit of the group due before it was sent, so that a host that stalled
// past all of them still sends them interleaved; a stream of another
// group, or of none, is not held; a stream that ended holds nothing.
func TestGroupOrder(t *testing.T) {
	t.Parallel()
	plain := stream("rest/spoof-control", 0, 2*ms, 3)     // 0, 2, 4
	forged := stream("rest/spoof-forwarded", ms, 2*ms, 2) // 1, 3
	tie := stream("rest/spoof-x-real-ip", 2*ms, 10*ms, 1) // 2, tied with plain's second
	other := stream("rest/probe", 0, ms, 6)
	plain.Group, forged.Group, tie.Group = "spoof", "spoof", "spoof"
	tl := New(time.Second, []Stream{plain, forged, tie, other})
	want := []struct {
		i  int
		at time.Duration
	}{{0, 0}, {1, ms}, {0, 2 * ms}, {2, 2 * ms}, {1, 3 * ms}, {0, 4 * ms}}
	next := []uint64{0, 0, 0}
	for k, w := range want {
		for i := range next {
			at, st := tl.Due(i, next[i])
			switch {
			case i == w.i && (st != Ready || at != w.at):
				t.Fatalf("send %d: stream %d hit %d: %v at %v, want ready at %v", k, i, next[i], st, at, w.at)
			case i != w.i && st == Ready:
				t.Fatalf("send %d: stream %d hit %d ready at %v before stream %d's hit due at %v", k, i, next[i], at, w.i, w.at)
			}
		}
		if at, st := tl.Due(3, uint64(k)); st != Ready || at != time.Duration(k)*ms {
			t.Errorf("a stream of no group held: hit %d %v at %v", k, st, at)
		}
		if !tl.Sent(w.i, next[w.i]) {
			t.Errorf("send %d: Sent did not say the group may move", k)
		}
		next[w.i]++
	}
	for i := range next {
		if _, st := tl.Due(i, next[i]); st != Ended {
			t.Errorf("stream %d after its last hit: %v, want ended", i, st)
		}
	}
	if tl.Sent(3, 0) {
		t.Errorf("Sent of a stream of no group said the timeline changed")
	}
}

// TestGroupBehindAGate: a stream of a group whose partner waits for a
// gate is held until the gate opens (the order is not known before), and
// then in the order the gate moved them into.
func TestGroupBehindAGate(t *testing.T) {
	t.Parallel()
	onset := stream("rest/onset", 0, ms, 1)
	a := stream("rest/spoof-control", 10*ms, ms, 2)
	b := stream("rest/spoof-forwarded", 10*ms, ms, 2)
	a.Group, b.Group = "spoof", "spoof"
	b.After = []string{"rest/onset"}
	tl := New(time.Second, []Stream{onset, a, b})
	if _, st := tl.Due(1, 0); st != Blocked {
		t.Fatalf("a group stream whose partner's gate is closed: %v, want blocked", st)
	}
	tl.Answered(0, 30*ms)
	if _, st := tl.Due(2, 0); st != Blocked {
		t.Errorf("the gated stream's first hit, due at 30ms, before the ungated one's at 10ms went: %v, want blocked", st)
	}
	for n := range uint64(2) {
		if at, st := tl.Due(1, n); st != Ready || at != 10*ms+time.Duration(n)*ms {
			t.Fatalf("the ungated stream's hit %d: %v at %v, want ready at %v", n, st, at, 10*ms+time.Duration(n)*ms)
		}
		tl.Sent(1, n)
	}
	if at, st := tl.Due(2, 0); st != Ready || at != 30*ms {
		t.Errorf("the gated stream's first hit: %v at %v, want ready at 30ms (the gate's)", st, at)
	}
}

// TestGate: a stream that waits for another sends nothing until every hit
// of that one is answered, then goes out at its planned time or Lag after
// the last answer, whichever is later, keeping its pacing.
func TestGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		lag        time.Duration
		lastAnswer time.Duration
		want       []time.Duration // the waiting stream's three hits
	}{
		{"answered before its start", 0, 30 * ms, []time.Duration{40 * ms, 50 * ms, 60 * ms}},
		{"answered at its start", 0, 40 * ms, []time.Duration{40 * ms, 50 * ms, 60 * ms}},
		{"answered late", 0, 70 * ms, []time.Duration{70 * ms, 80 * ms, 90 * ms}},
		{"answered late, with a lag", 5 * ms, 70 * ms, []time.Duration{75 * ms, 85 * ms, 95 * ms}},
		{"a lag that still ends before its start", 5 * ms, 20 * ms, []time.Duration{40 * ms, 50 * ms, 60 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first := stream("rest/onset", 0, ms, 2)
			waits := stream("rest/over", 40*ms, 10*ms, 3)
			waits.After, waits.Lag = []string{"rest/onset"}, tc.lag
			tl := New(time.Second, []Stream{first, waits})
			if at, st := tl.Due(0, 1); st != Ready || at != ms {
				t.Fatalf("the first stream's hit 1: %v %v, want ready at 1ms", at, st)
			}
			if _, st := tl.Due(1, 0); st != Blocked {
				t.Fatalf("before any answer: %v, want blocked", st)
			}
			if tl.Answered(0, tc.lastAnswer-ms) {
				t.Errorf("one answer of two said the timeline changed")
			}
			if _, st := tl.Due(1, 0); st != Blocked {
				t.Fatalf("after one answer of two: %v, want blocked", st)
			}
			if !tl.Answered(0, tc.lastAnswer) {
				t.Errorf("the last answer did not say the gate opened")
			}
			for n, want := range tc.want {
				if at, st := tl.Due(1, uint64(n)); st != Ready || at != want {
					t.Errorf("hit %d: %v %v, want ready at %v", n, at, st, want)
				}
			}
			if _, st := tl.Due(1, 3); st != Ended {
				t.Errorf("hit 3: %v, want ended", st)
			}
		})
	}
}

// TestGateOverNothing: a stream waiting for a stream that plans no hits,
// or for several, opens when the last of them is answered.
func TestGateOverNothing(t *testing.T) {
	t.Parallel()
	empty := stream("rest/none", 0, ms, 0)
	a, b := stream("rest/a", 0, ms, 1), stream("mcp/a", 0, ms, 1)
	waits := stream("rest/late", 10*ms, ms, 1)
	waits.After = []string{"rest/none"}
	both := stream("rest/both", 10*ms, ms, 1)
	both.After = []string{"rest/a", "mcp/a"}
	tl := New(time.Second, []Stream{empty, a, b, waits, both})
	if at, st := tl.Due(3, 0); st != Ready || at != 10*ms {
		t.Errorf("waiting for nothing: %v %v, want ready at 10ms", at, st)
	}
	tl.Answered(2, 30*ms)
	if _, st := tl.Due(4, 0); st != Blocked {
		t.Errorf("one of two answered: %v, want blocked", st)
	}
	tl.Answered(1, 20*ms)
	if at, st := tl.Due(4, 0); st != Ready || at != 30*ms {
		t.Errorf("both answered: %v %v, want ready at the later answer, 30ms", at, st)
	}
}

// followUpPlan is a plan of W = 1 s whose rest surface has a plan stream
// of two hits and the follow-up's probes (from 1.2 W, one every 0.02 W)
// and burst (10 hits over 0.03 W), held.
func followUpPlan() *Timeline {
	const w = time.Second
	probes := stream("rest/"+method.StreamFollowUp, 1200*ms, 20*ms, 1000)
	burst := stream("rest/"+method.StreamFollowUpBurst, 1200*ms, 3*ms, 10)
	mcp := stream("mcp/"+method.StreamFollowUp, 1200*ms, 20*ms, 1000)
	probes.Held, burst.Held, mcp.Held = true, true, true
	return New(w, []Stream{stream("rest/onset", 0, ms, 2), probes, burst, mcp})
}

// TestFollowUpWaitsForThePlan: held streams are blocked until every other
// stream is answered and the follow-up decided, and Deciding says when.
func TestFollowUpWaitsForThePlan(t *testing.T) {
	t.Parallel()
	tl := followUpPlan()
	for i := 1; i < 4; i++ {
		if _, st := tl.Due(i, 0); st != Blocked {
			t.Errorf("held stream %d before the decision: %v, want blocked", i, st)
		}
	}
	if tl.Answered(0, 5*ms) || tl.Deciding() {
		t.Errorf("deciding after one answer of two")
	}
	if !tl.Answered(0, 9*ms) || !tl.Deciding() {
		t.Errorf("the plan answered at 9ms: not deciding")
	}
	tl.Decide(nil, DefaultMaxDuration, 50*ms)
	if tl.Deciding() {
		t.Errorf("still deciding after the decision")
	}
	for i := 1; i < 4; i++ {
		if _, st := tl.Due(i, 0); st != Ended {
			t.Errorf("held stream %d with nothing decided for it: %v, want ended", i, st)
		}
	}
}

// TestDecide: what each need sends, from when until when, and what the
// decision says; the other surface's held streams send nothing.
func TestDecide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		need     Need
		now      time.Duration
		maxUntil float64
		want     Decision
		// probes and burst: the first hit due and the number of hits
		// sent (0: ended at once).
		probesAt, burstAt time.Duration
		probes, burst     int
	}{
		{name: "probes and a burst", need: Need{Surface: "rest", Until: 2.3, BurstAt: 2.26}, now: 1300 * ms, maxUntil: 3.5,
			want: Decision{Sent: true, Wait: 1000 * ms, MaxUntil: 3.5}, probesAt: 1300 * ms, probes: 50, burstAt: 2260 * ms, burst: 10},
		{name: "decided before the probes' start", need: Need{Surface: "rest", Until: 2.3, BurstAt: 2.26}, now: 1100 * ms, maxUntil: 3.5,
			want: Decision{Sent: true, Wait: 1200 * ms, MaxUntil: 3.5}, probesAt: 1200 * ms, probes: 55, burstAt: 2260 * ms, burst: 10},
		{name: "a burst past the probes' end", need: Need{Surface: "rest", Until: 2.3, BurstAt: 2.3}, now: 1300 * ms, maxUntil: 3.5,
			want: Decision{Sent: true, Wait: 1000 * ms, MaxUntil: 3.5}, probesAt: 1300 * ms, probes: 50},
		{name: "a burst whose time has passed", need: Need{Surface: "rest", Until: 2.3, BurstAt: 1.2}, now: 1300 * ms, maxUntil: 3.5,
			want: Decision{Sent: true, Wait: 1000 * ms, MaxUntil: 3.5}, probesAt: 1300 * ms, probes: 50, burstAt: 1300 * ms, burst: 10},
		// A busy host: the probes were due to end before the plan's
		// analysis did; late they would weigh nothing.
		{name: "probes due before the decision", need: Need{Surface: "rest", Until: 1.5, BurstAt: 1.46}, now: 1700 * ms, maxUntil: 3.5,
			want: Decision{Wait: 200 * ms, MaxUntil: 3.5}},
		// The plan's last answer came at 0.9 s: the burst goes out 1.05
		// windows later, uncut.
		{name: "aged out", need: Need{Surface: "rest", AgedOut: true, BurstAt: 2.25, Until: 2.29}, now: 1000 * ms, maxUntil: 3.5,
			want: Decision{Sent: true, Wait: 950 * ms, MaxUntil: 3.5}, burstAt: 1950 * ms, burst: 10},
		{name: "aged out past the longest run", need: Need{Surface: "rest", AgedOut: true, BurstAt: 2.25, Until: 2.29}, now: 1000 * ms, maxUntil: 1.98,
			want: Decision{MaxUntil: 1.98}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tl := followUpPlan()
			tl.Answered(0, 800*ms)
			tl.Answered(0, 900*ms)
			got := tl.Decide([]Need{tc.need}, tc.maxUntil, tc.now)
			tc.want.Need = tc.need
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("decisions %+v, want [%+v]", got, tc.want)
			}
			for _, s := range []struct {
				i     int
				first time.Duration
				sent  int
			}{{1, tc.probesAt, tc.probes}, {2, tc.burstAt, tc.burst}, {3, 0, 0}} {
				n := 0
				for ; ; n++ {
					at, st := tl.Due(s.i, uint64(n))
					if st == Blocked {
						t.Fatalf("stream %d blocked after the decision", s.i)
					}
					if st == Ended {
						break
					}
					if n == 0 && at != s.first {
						t.Errorf("stream %d's first hit at %v, want %v", s.i, at, s.first)
					}
				}
				if n != s.sent {
					t.Errorf("stream %d sends %d hits, want %d", s.i, n, s.sent)
				}
			}
		})
	}
}

// TestMaxUntil: --max-duration in windows, the default, and no follow-up
// when it leaves no room for one or the plan sends no limit probes.
func TestMaxUntil(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		max, w time.Duration
		limits bool
		want   float64
	}{
		{0, 6 * time.Second, true, DefaultMaxDuration},
		{12 * time.Second, 6 * time.Second, true, 2},
		{7200 * ms, 6 * time.Second, true, 0}, // 1.2 windows: the plan alone
		{7300 * ms, 6 * time.Second, true, 7.3 / 6},
		{0, 6 * time.Second, false, 0},
	} {
		if got := MaxUntil(tc.max, tc.w, tc.limits); got != tc.want {
			t.Errorf("MaxUntil(%v, %v, %v) = %v, want %v", tc.max, tc.w, tc.limits, got, tc.want)
		}
	}
}

// BenchmarkDue measures asking for a hit's due time, the engine's pacers'
// hot path (behind an open gate).
func BenchmarkDue(b *testing.B) {
	first := stream("rest/onset", 0, ms, 1)
	waits := stream("rest/probe", 0, time.Microsecond, 1<<62)
	waits.After = []string{"rest/onset"}
	tl := New(time.Second, []Stream{first, waits})
	tl.Answered(0, ms)
	var n uint64
	for b.Loop() {
		tl.Due(1, n)
		n++
	}
}
