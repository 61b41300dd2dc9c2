package refserver

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

const ms = time.Millisecond

// allowN calls Allow n times for key at now and returns how many were admitted.
func allowN(l *Limiter, key string, now time.Duration, n int) int {
	admitted := 0
	for range n {
		if l.Allow(key, now) {
			admitted++
		}
	}
	return admitted
}

func mustLimiter(t testing.TB, mode LimiterMode, limit int, window time.Duration) *Limiter {
	t.Helper()
	l, err := NewLimiter(mode, limit, window)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// step is one call to Allow and the outcome the test expects.
type step struct {
	key  string
	at   time.Duration
	n    int // requests at that instant (1 if zero)
	want int // how many of them are admitted
}

func TestLimiterModes(t *testing.T) {
	const W = 60 * time.Second
	tests := []struct {
		name  string
		mode  LimiterMode
		limit int
		steps []step
	}{
		{"rolling admits exactly L", Rolling, 3, []step{
			{key: "a", at: 0, n: 4, want: 3},
		}},
		{"rolling capacity returns exactly W after the oldest", Rolling, 3, []step{
			{key: "a", at: 0, want: 1},
			{key: "a", at: 10 * ms, n: 2, want: 2},
			{key: "a", at: W, want: 1},        // the first ages out at exactly W
			{key: "a", at: W + 5*ms, want: 0}, // the second and third are still in
			{key: "b", at: 0, n: 3, want: 3},
			{key: "b", at: W - 1, n: 3, want: 0}, // refused, and counted:
			{key: "b", at: W, want: 0},           // so W after the oldest is not enough
		}},
		{"rolling refused requests extend a lockout", Rolling, 3, []step{
			{key: "a", at: 0, n: 3, want: 3},
			{key: "a", at: 2 * time.Second, n: 3, want: 0}, // refused, counted
			{key: "a", at: W, want: 0},                     // the burst aged out, the refusals did not
			{key: "a", at: W + 2*time.Second - 1, want: 0},
			{key: "a", at: W + 2*time.Second, want: 1}, // refusals aged out... but the refusal at W counts
		}},
		{"rolling is per key", Rolling, 2, []step{
			{key: "a", at: 0, n: 3, want: 2},
			{key: "b", at: 0, n: 2, want: 2},
		}},
		{"admitted-only forgets refusals", AdmittedOnly, 3, []step{
			{key: "a", at: 0, n: 3, want: 3},
			{key: "a", at: 2 * time.Second, n: 5, want: 0},
			{key: "a", at: W, want: 1},
		}},
		{"off-by-one admits L+1", OffByOne, 3, []step{
			{key: "a", at: 0, n: 5, want: 4},
		}},
		// a time read before the lock and decided after a later one
		{"fixed-window decides a stale time at the key's last", FixedWindow, 2, []step{
			{key: "a", at: W + 500*ms, want: 1},
			{key: "a", at: W - 100*ms, want: 1}, // decided at W+500ms: not the window before
			{key: "a", at: W + 600*ms, want: 0},
		}},
		{"fixed-window resets at the boundary", FixedWindow, 3, []step{
			{key: "a", at: W - 10*ms, n: 4, want: 3},
			{key: "a", at: W, n: 4, want: 3},
			{key: "a", at: 2*W - 1, want: 0},
		}},
		// previous window's admissions × the share still in the rolling
		// window, + the current's; admitted while that + 1 ≤ L
		{"sliding-window-counter weighs the previous window", SlidingWindowCounter, 10, []step{
			{key: "a", at: 0, n: 15, want: 10},        // refusals not counted
			{key: "a", at: W + W/4, n: 5, want: 2},    // 10·0.75 = 7.5: 8.5 and 9.5 fit, 10.5 does not
			{key: "a", at: 2*W + W/2, n: 12, want: 9}, // 2·0.5 = 1: nine more fit
			{key: "a", at: 4 * W, n: 12, want: 10},    // a whole window without requests: empty
		}},
		{"shared-budget has one budget for every address", SharedBudget, 3, []step{
			{key: "a", at: 0, n: 2, want: 2},
			{key: "b", at: 10 * ms, n: 2, want: 1},
			{key: "c", at: 20 * ms, want: 0},
			{key: "c", at: W, want: 0},         // b's two and c's, refused or not, count
			{key: "c", at: W + 20*ms, want: 1}, // b's aged out
		}},
		{"fixed-window-per-address opens a window at the first request after the last", FixedWindowPerAddress, 3, []step{
			{key: "a", at: 10 * time.Second, n: 4, want: 3},
			{key: "b", at: 30 * time.Second, n: 3, want: 3},
			{key: "a", at: 10*time.Second + W - 1, want: 0},
			{key: "a", at: 10*time.Second + W + 5*time.Second, n: 4, want: 3}, // opened at 75 s
			{key: "b", at: 30*time.Second + W - 1, want: 0},
			{key: "a", at: 10*time.Second + 2*W + 4*time.Second, want: 0}, // 134 s: still that one
			{key: "a", at: 10*time.Second + 2*W + 5*time.Second, want: 1}, // 135 s: a new one
		}},
		// nginx's limit_req at 4 per W (one per 15 s), burst 3: the first
		// request and three more at once; the excess drains one per 15 s;
		// refusals change nothing.
		{"leaky-bucket admits L at once, then one per W/L", LeakyBucket, 4, []step{
			{key: "a", at: 0, n: 5, want: 4},
			{key: "a", at: 15 * time.Second, n: 3, want: 1},
			{key: "a", at: 29 * time.Second, n: 3, want: 0},
			{key: "a", at: 30 * time.Second, want: 1},
			{key: "a", at: 30*time.Second + 60*time.Second, n: 5, want: 4}, // drained
		}},
		// HAProxy's http_req_rate: every request counted, refused or not,
		// periods from the address's first request; refused when the
		// reading, itself included, passes L.
		{"counter-with-refusals counts refusals, periods from the first request", CounterWithRefusals, 10, []step{
			{key: "a", at: 5 * time.Second, n: 15, want: 10},          // 15 counted
			{key: "a", at: 5*time.Second + W + W/4, n: 5, want: 0},    // 15·0.75 + 1 > 10; 5 counted
			{key: "a", at: 5*time.Second + 2*W + W/2, n: 12, want: 7}, // 5·0.5 = 2.5: seven fit
			{key: "a", at: 5*time.Second + 5*W, n: 12, want: 10},      // two idle periods: empty
		}},
		{"token-bucket refills L per W", TokenBucket, 3, []step{
			{key: "a", at: 0, n: 4, want: 3},
			{key: "a", at: W / 3, n: 2, want: 1},
			{key: "a", at: W/3 + 5*time.Second, want: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustLimiter(t, tt.mode, tt.limit, W)
			for i, s := range tt.steps {
				n := max(s.n, 1)
				if got := allowN(l, s.key, s.at, n); got != s.want {
					t.Fatalf("step %d (%d from %s at %v): admitted %d, want %d", i, n, s.key, s.at, got, s.want)
				}
			}
		})
	}
}

// TestFixedWindowPerAddressSurvivesTheSweep: the limiter forgets an idle
// key only once its window has ended, when its next request would open a
// new one anyway: a busy key's window is never restarted early. At L = 3
// and W = 10 s, requests at 0, 5, 15, 21, 22, 23, 25 and 26 s admit three
// in [15 s, 25 s) and one more at 25 s, never five in one window.
func TestFixedWindowPerAddressSurvivesTheSweep(t *testing.T) {
	const W = 10 * time.Second
	l := mustLimiter(t, FixedWindowPerAddress, 3, W)
	var got []bool
	for _, at := range []time.Duration{0, 5, 15, 21, 22, 23, 25, 26} {
		got = append(got, l.Allow("a", at*time.Second))
	}
	want := []bool{true, true, true, true, true, false, true, true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("admitted %v, want %v", got, want)
	}
}

// TestLeakyBucketHolds: nginx holds an admitted request whose excess
// passed the delay (L/2) until the excess has drained to it: at 4 per W
// (one per 15 s), delay 2, the fourth of a burst waits 15 s; refusals are
// answered at once.
func TestLeakyBucketHolds(t *testing.T) {
	const W = 60 * time.Second
	l := mustLimiter(t, LeakyBucket, 4, W)
	for i, want := range []struct {
		ok   bool
		hold time.Duration
	}{{true, 0}, {true, 0}, {true, 0}, {true, 15 * time.Second}, {false, 0}} {
		if ok, hold := l.Decide("a", 0); ok != want.ok || hold != want.hold {
			t.Errorf("request %d: admitted %v held %v, want %v held %v", i+1, ok, hold, want.ok, want.hold)
		}
	}
	// 7.5 s later half a request has drained: the excess is 3.5, and one
	// more would be 4.5 > 3.
	if ok, _ := l.Decide("a", 7500*ms); ok {
		t.Errorf("admitted with the bucket still full")
	}
	if ok, hold := l.Decide("a", 15*time.Second); !ok || hold != 15*time.Second {
		t.Errorf("15 s later: admitted %v held %v, want held 15s", ok, hold)
	}
}

// TestStaleTimeLeavesTheLogInOrder: the server reads the clock before the
// limiter's lock, so a request may be decided after one that read the
// clock later. It is decided at the key's last time, so the log's oldest
// stays at its head, and a refusal leaves no quota: before, a log holding
// 5 s, 1 s, 1 s refused at 63 s on its head (5 s) while advertising 2
// requests remaining.
func TestStaleTimeLeavesTheLogInOrder(t *testing.T) {
	t.Parallel()
	const W = 60 * time.Second
	l := mustLimiter(t, Rolling, 3, W)
	for _, at := range []time.Duration{5 * time.Second, time.Second, time.Second} {
		if ok, _, _ := l.decide("a", at, true); !ok {
			t.Fatalf("refused at %v with room in the window", at)
		}
	}
	ok, _, st := l.decide("a", W+3*time.Second, true)
	if ok || st.remaining != 0 || st.reset != 2*time.Second {
		t.Errorf("at W+3s: admitted %v, remaining %d, reset %v; want refused, 0, 2s (the three counted at 5s)", ok, st.remaining, st.reset)
	}
	if ok, _, _ := l.decide("a", W+5*time.Second, true); !ok {
		t.Error("refused at W+5s, when the three counted at 5s have aged out")
	}
}

// TestRollingLockoutEndsExactly checks the edge of the refusal-extended
// lockout: after a burst of L at 0 and L refusals at 2 s, the first request
// admitted is the one at exactly 2 s + W, when the refusals have aged out,
// provided nothing was sent in between.
func TestRollingLockoutEndsExactly(t *testing.T) {
	const W, L = 4 * time.Second, 240
	l := mustLimiter(t, Rolling, L, W)
	if got := allowN(l, "a", 0, L); got != L {
		t.Fatalf("burst admitted %d, want %d", got, L)
	}
	if got := allowN(l, "a", 2*time.Second, L); got != 0 {
		t.Fatalf("refusals admitted %d, want 0", got)
	}
	if l.Allow("a", 2*time.Second+W-time.Nanosecond) {
		t.Fatal("admitted a nanosecond before the refusals aged out")
	}
	// That probe was refused and counted; it ages out W later. The L-th
	// newest is now the second refusal at 2 s, so capacity is back at 2 s + W.
	if !l.Allow("a", 2*time.Second+W) {
		t.Fatal("refused at exactly 2 s + W")
	}
}

func TestLimiterEvictsIdleClients(t *testing.T) {
	const W = time.Second
	for _, mode := range LimiterModes {
		t.Run(string(mode), func(t *testing.T) {
			l := mustLimiter(t, mode, 5, W)
			for i := range 100 {
				l.Allow(fmt.Sprintf("10.0.0.%d", i), 0)
			}
			want := 100
			if mode == SharedBudget {
				want = 1 // one budget for every address
			}
			if got := l.Clients(); got != want {
				t.Fatalf("Clients() = %d, want %d", got, want)
			}
			l.Allow("late", 3*W)
			if got := l.Clients(); got != 1 {
				t.Fatalf("after an idle window Clients() = %d, want 1", got)
			}
		})
	}
}

func TestNewLimiterRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		mode   LimiterMode
		limit  int
		window time.Duration
		want   string
	}{
		{Rolling, 0, time.Second, "limit must be at least 1, got 0"},
		{Rolling, 1, 0, "window must be positive, got 0s"},
		{"leaky", 1, time.Second, `unknown limiter "leaky" (want one of [rolling fixed-window token-bucket admitted-only off-by-one sliding-window-counter shared-budget fixed-window-per-address leaky-bucket counter-with-refusals])`},
	} {
		_, err := NewLimiter(tc.mode, tc.limit, tc.window)
		if err == nil || err.Error() != tc.want {
			t.Errorf("NewLimiter(%q, %d, %v) error = %v, want %q", tc.mode, tc.limit, tc.window, err, tc.want)
		}
	}
}

// BenchmarkLimiterFlood measures one Allow call while a single address floods
// (most calls refused), and reports the memory held per address.
func BenchmarkLimiterFlood(b *testing.B) {
	for _, mode := range LimiterModes {
		b.Run(string(mode), func(b *testing.B) {
			l := mustLimiter(b, mode, 240, time.Minute)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				l.Allow("127.0.0.1", time.Duration(i)*50*time.Microsecond)
			}
		})
	}
}

// BenchmarkLimiterManyAddresses measures Allow over 10 000 flooding
// addresses and reports the heap held per address once each holds a full
// window of requests.
func BenchmarkLimiterManyAddresses(b *testing.B) {
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := mustLimiter(b, Rolling, 240, time.Minute)
	for i := range 300 * len(keys) {
		l.Allow(keys[i%len(keys)], time.Duration(i)*time.Microsecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		l.Allow(keys[i%len(keys)], 3*time.Second+time.Duration(i)*time.Microsecond)
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(l.Clients()), "B/address")
}
