package simrun

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
)

// TestRun: a plan runs on the virtual clock as its timeline says. A stream
// that waits for another goes out once every request of that one is
// answered; a target that holds an answer (Clock.Sleep) holds it on the
// virtual clock and sees its own time move on; one that aborts a request
// (http.ErrAbortHandler) gives a reset; and each result carries the labels
// it was sent with, in the order the answers came back.
func TestRun(t *testing.T) {
	t.Parallel()
	prof, err := scenario.ParseProfile("sim.yaml", []byte(`
policy: {surface: rest}
sources: [127.0.0.1]
streams:
  - name: first
    surface: rest
    requests: [{path: /api/public/search, query: {q: held}}]
    pacer: {type: constant, rate: 100/s, count: 3}
  - name: then
    surface: rest
    after: [first]
    requests: [{path: /api/public/search, query: {q: reset}}]
    pacer: {type: constant, rate: 100/s, count: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	clk := NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 0)
	var seenAt []time.Duration
	target := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") == "reset" {
			panic(http.ErrAbortHandler)
		}
		_ = clk.Sleep(r.Context(), 50*time.Millisecond)
		seenAt = append(seenAt, clk.Since()) // after its sleep: the target's time moved on
		w.WriteHeader(http.StatusOK)
	})
	host := hostsim.Host{Median: time.Millisecond} // a millisecond each way, no noise
	w := &World{Target: target, Clock: clk, Host: host, Rand: rand.New(rand.NewPCG(1, 2))}
	var got []archive.Result
	err = Run(attack.Plan{Profile: prof, Window: time.Second}, w, URL, func(r archive.Result) error {
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d results, want 5", len(got))
	}
	var firstEnd time.Time
	for i, r := range got {
		switch r.Labels.Stream {
		case "first":
			if r.Code != 200 || r.Latency < 50*time.Millisecond || r.Labels.Source != "127.0.0.1" || r.Labels.Surface != "rest" {
				t.Errorf("result %d: %+v, labels %+v: want 200 held 50ms, from 127.0.0.1 on rest", i, r.Result, r.Labels)
			}
			if end := r.Timestamp.Add(r.Latency); end.After(firstEnd) {
				firstEnd = end
			}
		case "then":
			if r.Code != 0 || r.Error == "" || r.Timestamp.Before(firstEnd) {
				t.Errorf("result %d: code %d, error %q, sent %v: want a reset, sent after the first stream's last answer (%v)", i, r.Code, r.Error, r.Timestamp, firstEnd)
			}
		default:
			t.Errorf("result %d of stream %q", i, r.Labels.Stream)
		}
		if i > 0 && r.Timestamp.Add(r.Latency).Before(got[i-1].Timestamp.Add(got[i-1].Latency)) {
			t.Errorf("result %d came back before result %d", i, i-1)
		}
	}
	for i, at := range seenAt {
		if at < 50*time.Millisecond {
			t.Errorf("request %d: the target's clock read %v after a sleep of 50ms from a start at 0", i, at)
		}
	}
}
