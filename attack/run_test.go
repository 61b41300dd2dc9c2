package attack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
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
	prof, err := ParseProfile("after.yaml", []byte(`
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
	err = Plan{Profile: prof, Window: time.Second}.Run(context.Background(), srv.URL, func(r *vegeta.Result) error {
		name := archive.LabelValue(r.Attack, "stream")
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
	prof, err := ParseProfile("stop.yaml", []byte(`
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
	err = Plan{Profile: prof, Window: time.Second, Timeout: 200 * time.Millisecond}.Run(ctx, srv.URL, func(r *vegeta.Result) error {
		n++
		if archive.LabelValue(r.Attack, "stream") == "never" {
			t.Error("the gated stream went out although its gate never opened")
		}
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("Run: %v, %d results; want the hung request's one", err, n)
	}
}
