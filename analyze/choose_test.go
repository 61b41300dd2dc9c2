package analyze

import (
	"strings"
	"testing"
	"time"
)

// TestOutdone: a candidate is outdone by another that fits better in
// every order the fit replays, each by more than one misplaced
// admission, unless either is replicas or only the winner was chosen
// afresh in each order (a token bucket is then held to its scores at one
// refill for every order).
func TestOutdone(t *testing.T) {
	t.Parallel()
	log := Candidate{Family: familySlidingLog, Limit: 240, slot: 1, orders: [3]int{1, 72, 30}}
	scanLog := Candidate{Family: familySlidingLog, Limit: 240, slot: -1}
	counter := Candidate{Family: familySlidingWindow, Limit: 240, slot: 40}
	bucket := Candidate{Family: familyTokenBucket, Limit: 240, slot: 3}
	fixed := Candidate{Family: familyFixedWindow, Limit: 240, slot: 20}
	with := func(c Candidate, orders [3]int) Candidate { c.orders = orders; return c }
	once := func(c Candidate, once [3]int) Candidate { c.once, c.onced = once, true; return c }
	for _, tt := range []struct {
		name string
		a, b Candidate
		want bool
	}{
		{"worse in every order", log, with(scanLog, [3]int{72, 140, 100}), true},
		{"better in one order", log, with(scanLog, [3]int{72, 60, 100}), false},
		{"within one misplaced admission in one order", log, with(scanLog, [3]int{72, 74, 100}), false},
		{"a counter worse in every order", log, with(counter, [3]int{9, 90, 40}), true},
		{"two families chosen afresh in each order", with(bucket, [3]int{4, 30, 10}), with(counter, [3]int{20, 50, 30}), true},
		// the starved host: a fixed window at its best phase in each order
		// beat the log that made the run in every one
		{"the log by a window fitted in each order", with(fixed, [3]int{10, 12, 11}), with(log, [3]int{14, 60, 30}), false},
		{"replicas", log, with(Candidate{Family: familySlidingLog, Limit: 240, Replicas: 2, slot: 60}, [3]int{90, 140, 100}), false},
		// nginx's leaky bucket: its refill fitted once beats a log at the
		// observed limit in every order; fitted afresh in each order it
		// would be held to nothing (a bucket of the fit is always onced)
		{"the log by a bucket at one refill", once(with(bucket, [3]int{0, 48, 0}), [3]int{0, 48, 0}), with(log, [3]int{68, 116, 68}), true},
		{"the log by a bucket better only refill by refill", once(with(bucket, [3]int{0, 48, 0}), [3]int{0, 120, 0}), with(log, [3]int{68, 116, 68}), false},
		{"the log by a bucket not replayed once", with(bucket, [3]int{0, 48, 0}), with(log, [3]int{68, 116, 68}), false},
		{"a scan's log by a bucket: each chose afresh", once(with(bucket, [3]int{0, 48, 0}), [3]int{0, 120, 0}), with(scanLog, [3]int{68, 116, 68}), true},
	} {
		if got := outdone(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: outdone(%v %v, %v %v) = %v, want %v", tt.name, tt.a, tt.a.orders, tt.b, tt.b.orders, got, tt.want)
		}
	}
}

// TestChooseOrderByOrder: a counter whose score the log's timing spread
// covers is no alternative when the log fits better in every order
// (a run of the embedded target beside two CPU hogs, p99 173 ms of a 4 s
// window, left its family open this way); it stays one when it fits
// better in one order.
func TestChooseOrderByOrder(t *testing.T) {
	t.Parallel()
	log := Candidate{Family: familySlidingLog, CountsRefused: boolPtr(true), Limit: 240, Window: 4 * time.Second, Mismatches: 1, TimingSpread: 71, slot: 1, orders: [3]int{1, 72, 30}}
	for _, tt := range []struct {
		name    string
		counter [3]int
		decided bool
	}{
		{"worse in every order", [3]int{60, 130, 70}, true},
		{"better at the responses", [3]int{60, 66, 70}, false},
	} {
		counter := Candidate{Family: familySlidingWindow, CountsRefused: boolPtr(true), Limit: 240, Window: 4 * time.Second, slot: 40, orders: tt.counter}
		counter.Mismatches = min(tt.counter[0], tt.counter[1], tt.counter[2])
		counter.TimingSpread = max(tt.counter[0], tt.counter[1]) - counter.Mismatches
		fit := Fit{Candidates: []Candidate{{Family: familyNone, Limit: 240, Mismatches: 900}, log, counter}}
		fit.choose(leakProof{}, 240, 4*time.Second)
		if fit.Best.Family != familySlidingLog || fit.Decided != tt.decided {
			t.Errorf("%s: best %v, decided %v (alternatives %v), want sliding-log decided %v", tt.name, fit.Best, fit.Decided, fit.Alternatives, tt.decided)
		}
	}
}

// TestChooseLeaksRuleOutLongerLogs: an admission with more than the limit
// surely in its window of W rules out a sliding log at W and at any
// longer window, whose window holds the same requests and more, however
// well the scan fitted it; it does not rule out a shorter one. nginx's
// limit_req refilling one request per window (a token bucket), on a host
// whose answers took up to 20 % of W, fitted a log of 1.97 W counting
// refusals by 3 mismatches against the bucket's 6, and the fit named that
// log, decided, beside the two leaks (admitted with 493 and 290 requests
// surely in their window of W) that refute it.
func TestChooseLeaksRuleOutLongerLogs(t *testing.T) {
	t.Parallel()
	w := 4 * time.Second
	bucket := Candidate{Family: familyTokenBucket, CountsRefused: boolPtr(false), Limit: 240, Window: w, Mismatches: 6, slot: 3, orders: [3]int{6, 8, 7}}
	leaks := leakProof{All: 494, Admitted: 178}
	for _, tt := range []struct {
		name   string
		window time.Duration
		best   string
	}{
		{"longer", 7880 * time.Millisecond, familyTokenBucket},
		{"shorter", 3 * time.Second, familySlidingLog},
	} {
		scan := Candidate{Family: familySlidingLog, CountsRefused: boolPtr(true), Limit: 240, Window: tt.window, Mismatches: 1, slot: -1, orders: [3]int{1, 2, 1}}
		fit := Fit{Candidates: []Candidate{{Family: familyNone, Limit: 240, Mismatches: 900}, bucket}, Scan: []Candidate{scan}}
		fit.choose(leaks, 240, w)
		if fit.Best.Family != tt.best {
			t.Errorf("%s log: best %v (alternatives %v), want %s", tt.name, fit.Best, fit.Alternatives, tt.best)
		}
		if got := fit.Scan[0].ruled; got != (tt.window >= w) {
			t.Errorf("%s log: ruled out %v", tt.name, got)
		}
	}
}

// TestRejectedCountOrderByOrder: refusals counted are not left open
// because a log forgetting them comes within the counting log's timing
// spread, when the counting log fits better in every order; they are when
// the forgetting log fits better in one.
func TestRejectedCountOrderByOrder(t *testing.T) {
	t.Parallel()
	claim := Candidate{Family: familySlidingLog, CountsRefused: boolPtr(true), Limit: 240, Window: 4 * time.Second, Mismatches: 1, TimingSpread: 71, slot: 1, orders: [3]int{1, 72, 30}}
	for _, tt := range []struct {
		name   string
		forget [3]int
		open   bool
	}{
		{"worse in every order", [3]int{72, 150, 95}, false},
		{"better at the responses", [3]int{72, 65, 95}, true},
	} {
		forget := Candidate{Family: familySlidingLog, CountsRefused: boolPtr(false), Limit: 240, Window: 4200 * time.Millisecond, slot: -1, orders: tt.forget}
		forget.Mismatches = min(tt.forget[0], tt.forget[1], tt.forget[2])
		forget.TimingSpread = max(tt.forget[0], tt.forget[1]) - forget.Mismatches
		sd := &SurfaceDetail{Fit: Fit{Best: claim, Candidates: []Candidate{{Family: familyNone, Limit: 240, Mismatches: 900}, claim}, Scan: []Candidate{forget}}}
		e := &evidence{surfaceRun: &surfaceRun{primary: &groupRun{answered: 1600, refusals: 500}}, sd: sd, primary: "127.0.0.1"}
		why := rival(e, true)
		if open := why != ""; open != tt.open {
			t.Errorf("%s: rival says %q, want the reading left open %v", tt.name, why, tt.open)
		}
		if tt.open && !strings.Contains(why, "not counting refusals") {
			t.Errorf("%s: %q does not name the log forgetting refusals", tt.name, why)
		}
	}
}

// TestRejectedCountByReading: the reading of refusals is decided when, in
// every order the fit replays, some limiter of the claimed reading fits
// better than a rival of the other, even where the claim itself fits
// worse than the rival in one order (nginx's delay beside a busy
// process: the bucket, forgetting refusals, scored 15, 98 and 3; a log
// counting them at another window 78, 92 and 79; a counter forgetting
// them 15, 63 and 16). Replicas are beaten by their score less what
// chance gives them, and a limiter with nothing to choose is not beaten
// by one chosen afresh in each order.
func TestRejectedCountByReading(t *testing.T) {
	t.Parallel()
	forget, count := boolPtr(false), boolPtr(true)
	with := func(c Candidate, orders [3]int) Candidate {
		c.orders = orders
		c.Mismatches = min(orders[0], orders[1], orders[2])
		c.TimingSpread = max(orders[0], orders[1]) - c.Mismatches
		return c
	}
	bucket := with(Candidate{Family: familyTokenBucket, CountsRefused: forget, Limit: 120, Window: 4 * time.Second, slot: 3}, [3]int{15, 98, 3})
	scanLog := Candidate{Family: familySlidingLog, CountsRefused: count, Limit: 161, Window: 2080 * time.Millisecond, slot: -1}
	counter := Candidate{Family: familySlidingWindow, CountsRefused: forget, Limit: 161, Window: 4 * time.Second, slot: 40}
	log := Candidate{Family: familySlidingLog, CountsRefused: forget, Limit: 161, Window: 4 * time.Second, slot: 2}
	replicas := Candidate{Family: familySlidingLog, CountsRefused: count, Limit: 120, Window: 4 * time.Second, Replicas: 2, slot: 60, chance: 7}
	for _, tt := range []struct {
		name   string
		others []Candidate
		open   bool
	}{
		{"a counter forgetting refusals beats the log at the responses", []Candidate{with(scanLog, [3]int{78, 92, 79}), with(counter, [3]int{15, 63, 16})}, false},
		{"nothing forgetting refusals beats the log at the responses", []Candidate{with(scanLog, [3]int{78, 92, 79}), with(counter, [3]int{15, 91, 16})}, true},
		{"replicas worse less their chance", []Candidate{with(replicas, [3]int{85, 87, 85}), with(log, [3]int{50, 77, 50})}, false},
		{"replicas within one misplaced admission less their chance", []Candidate{with(replicas, [3]int{85, 87, 85}), with(log, [3]int{50, 78, 50})}, true},
		{"replicas beaten at the responses only by a counter fitted there", []Candidate{with(replicas, [3]int{85, 87, 85}), with(counter, [3]int{15, 63, 16})}, true},
	} {
		sd := &SurfaceDetail{Fit: Fit{Best: bucket, Candidates: append([]Candidate{{Family: familyNone, Limit: 120, Mismatches: 900}, bucket}, tt.others...)}}
		e := &evidence{surfaceRun: &surfaceRun{primary: &groupRun{answered: 900, refusals: 140}}, sd: sd, primary: "127.0.0.1"}
		why := rival(e, false)
		if open := why != ""; open != tt.open {
			t.Errorf("%s: rival says %q, want the reading left open %v", tt.name, why, tt.open)
		}
	}
}
