package attack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
)

// TestRunAfter: a stream with after waits for every result of the streams
// it names, however slow their answers, and every planned request of every
// stream gets exactly one result.
func TestRunAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") == "slow" {
			time.Sleep(30 * time.Millisecond)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	prof, err := scenario.ParseProfile("after.yaml", []byte(`
policy: {surface: rest}
sources: [127.0.0.1]
streams:
  - name: burst
    surface: rest
    requests: [{path: /api/public/search, query: {q: slow}}]
    pacer: {type: constant, rate: 1000/s, count: 5}
  - name: next
    surface: rest
    after: [burst]
    requests: [{path: /api/public/search, query: {q: fast}}]
    pacer: {type: constant, rate: 1000/s, count: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	var burstEnd, nextStart time.Time
	n := map[string]int{}
	err = Plan{Profile: prof, Window: time.Second}.Run(context.Background(), srv.URL, func(r archive.Result) error {
		name := r.Labels.Stream
		n[name]++
		switch end := r.Timestamp.Add(r.Latency); {
		case name == "burst" && end.After(burstEnd):
			burstEnd = end
		case name == "next" && (nextStart.IsZero() || r.Timestamp.Before(nextStart)):
			nextStart = r.Timestamp
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n["burst"] != 5 || n["next"] != 3 {
		t.Fatalf("results %v, want burst 5, next 3", n)
	}
	if nextStart.Before(burstEnd) {
		t.Errorf("next started %v before the burst's last answer", burstEnd.Sub(nextStart))
	}
}

// TestRunStopReleasesGates: cancelling a run whose gated stream still waits
// returns promptly with every result sent so far.
func TestRunStopReleasesGates(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer srv.Close()
	defer close(release)
	prof, err := scenario.ParseProfile("stop.yaml", []byte(`
policy: {surface: rest}
streams:
  - {name: hang, surface: rest, requests: [{path: /api/public/search}], pacer: {type: constant, rate: 10/s, count: 1}}
  - {name: never, surface: rest, after: [hang], requests: [{path: /api/public/search}], pacer: {type: constant, rate: 10/s, count: 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	n := 0
	err = Plan{Profile: prof, Window: time.Second, Timeout: 200 * time.Millisecond}.Run(ctx, srv.URL, func(r archive.Result) error {
		n++
		if r.Labels.Stream == "never" {
			t.Error("the gated stream went out although its gate never opened")
		}
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("Run: %v, %d results; want the hung request's one", err, n)
	}
}

// TestRunStopsWaitingStreams: cancelling a run stops at once the streams
// that wait (to start, behind a gate, or for their next hit), and nothing
// reaches the target after the cancel. Each waiting stream is due in an
// hour: a Run that slept through its wait, as Vegeta's attack loop does,
// would not return within the bound below (which is far above any noise).
func TestRunStopsWaitingStreams(t *testing.T) {
	tests := []struct {
		name, stream string
		lateSent     int // the late stream's hits before the wait
	}{
		{"starts in an hour", `{name: late, surface: rest, start: 1w, requests: [{path: /api/public/search, query: {q: late}}], pacer: {type: constant, rate: 10/s, count: 3}}`, 0},
		{"behind a gate, next hit in an hour", `{name: late, surface: rest, after: [first], requests: [{path: /api/public/search, query: {q: late}}], pacer: {type: constant, rate: 1/w, count: 3}}`, 1},
		{"next hit in an hour", `{name: late, surface: rest, requests: [{path: /api/public/search, query: {q: late}}], pacer: {type: constant, rate: 1/w, count: 3}}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cancelled atomic.Bool
			var after, late atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if cancelled.Load() {
					after.Add(1)
				}
				if r.URL.Query().Get("q") == "late" {
					late.Add(1)
				}
			}))
			defer srv.Close()
			prof, err := scenario.ParseProfile("late.yaml", []byte(`
policy: {surface: rest}
streams:
  - {name: first, surface: rest, requests: [{path: /api/public/search, query: {q: first}}], pacer: {type: constant, rate: 100/s, count: 2}}
  - `+tt.stream))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := map[string]int{}
			done := make(chan error, 1)
			go func() {
				// The window is an hour: the late stream is due an hour on.
				done <- Plan{Profile: prof, Window: time.Hour}.Run(ctx, srv.URL, func(r archive.Result) error {
					seen[r.Labels.Stream]++
					if seen["first"] == 2 && seen["late"] == tt.lateSent && !cancelled.Load() { // every stream now waits
						cancelled.Store(true)
						cancel()
					}
					return nil
				})
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Run still running 20 s after the cancel: a stream due in an hour was not woken")
			}
			if !cancelled.Load() {
				t.Fatalf("the run ended before it was cancelled: %v", seen)
			}
			if after.Load() != 0 || late.Load() != int64(tt.lateSent) {
				t.Errorf("%d requests reached the target after the cancel, %d of the late stream in all (want 0 and %d)", after.Load(), late.Load(), tt.lateSent)
			}
		})
	}
}

// TestBehindGatedStream: a stream behind a gate keeps its own pacing from
// when the gate opens, so the gate's wait is not lateness: Behind counts
// nothing of a 1 s gate (before, every hit after the first was recorded
// as late by the whole gate).
func TestBehindGatedStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") == "slow" {
			time.Sleep(time.Second)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	prof, err := scenario.ParseProfile("gated.yaml", []byte(`
policy: {surface: rest}
sources: [127.0.0.1]
streams:
  - name: first
    surface: rest
    requests: [{path: /api/public/search, query: {q: slow}}]
    pacer: {type: constant, rate: 10/s, count: 1}
  - name: gated
    surface: rest
    after: [first]
    requests: [{path: /api/public/search, query: {q: fast}}]
    pacer: {type: constant, rate: 10/s, count: 5}
`))
	if err != nil {
		t.Fatal(err)
	}
	b := &Behind{}
	if err := (Plan{Profile: prof, Window: time.Second, Behind: b}).Run(context.Background(), srv.URL, func(archive.Result) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// A machine may run a hit a little late; the gate's second never is.
	if b.Sent != 6 || b.Max >= 500*time.Millisecond {
		t.Errorf("behind: %v (sent %d), want 6 sent and none anywhere near the gate's 1s late", b, b.Sent)
	}
}

// TestGroupSharesClient: the units of a group from one source send through
// one HTTP client (one connection pool), so that how a request reaches the
// target does not depend on which of the group's streams it belongs to;
// every other unit, and the group's units from another source, have a
// client of their own.
func TestGroupSharesClient(t *testing.T) {
	t.Parallel()
	prof, err := scenario.ParseProfile("group.yaml", []byte(`
policy: {surface: rest}
sources: [127.0.0.1, 127.0.0.2]
streams:
  - name: forged
    surface: rest
    requests: [{path: /a}]
    pacer: {type: constant, rate: 10/s, count: 2}
  - name: plain
    surface: rest
    requests: [{path: /a}]
    pacer: {type: constant, rate: 10/s, count: 2}
  - name: other
    surface: rest
    requests: [{path: /a}]
    pacer: {type: constant, rate: 10/s, count: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	prof.Streams[0].Group, prof.Streams[1].Group = "rest/spoof", "rest/spoof"
	pl := Plan{Profile: prof, Window: time.Second}
	units := pl.units()
	_, clients := pl.attackers(units)
	at := map[[2]string]*http.Client{}
	for i, u := range units {
		at[[2]string{u.stream.Name, u.source}] = clients[i]
	}
	for _, src := range []string{"127.0.0.1", "127.0.0.2"} {
		if at[[2]string{"forged", src}] != at[[2]string{"plain", src}] {
			t.Errorf("%s: the group's two streams send through two clients, want one", src)
		}
		if at[[2]string{"other", src}] == at[[2]string{"plain", src}] {
			t.Errorf("%s: a stream outside the group shares the group's client", src)
		}
	}
	if at[[2]string{"plain", "127.0.0.1"}] == at[[2]string{"plain", "127.0.0.2"}] {
		t.Error("the group's units from two sources share a client: each source needs its own")
	}
	if len(units) != 6 {
		t.Fatalf("%d units, want 6", len(units))
	}
}
