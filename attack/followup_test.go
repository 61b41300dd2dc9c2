package attack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
)

// TestFollowUp: held streams send nothing until every result of the
// others is in; Decide sees exactly those results; a stream it leaves out
// sends nothing, one it sends starts when told and stops when told, and
// run.json records what Decide said.
func TestFollowUp(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("q") == "slow" {
			time.Sleep(20 * time.Millisecond)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	prof, err := scenario.ParseProfile("followup.yaml", []byte(`
policy: {surface: rest}
sources: [127.0.0.1]
streams:
  - name: plan
    surface: rest
    requests: [{path: /api/public/search, query: {q: slow}}]
    pacer: {type: constant, rate: 100/s, count: 5}
  - name: more
    surface: rest
    requests: [{path: /api/public/search, query: {q: more}}]
    pacer: {type: constant, rate: 100/s, duration: 10s}
  - name: never
    surface: rest
    requests: [{path: /api/public/search, query: {q: never}}]
    pacer: {type: constant, rate: 100/s, duration: 10s}
`))
	if err != nil {
		t.Fatal(err)
	}
	var decided time.Time
	var seen int
	fu := &FollowUp{Streams: []string{"rest/more", "rest/never"}, Decide: func(rs []*vegeta.Result) (map[string]Span, []string) {
		decided, seen = time.Now(), len(rs)
		return map[string]Span{"rest/more": {Start: 50 * time.Millisecond, Stop: 250 * time.Millisecond}}, []string{"rest: more, for a question left open"}
	}}
	pl := Plan{Profile: prof, Window: time.Second, FollowUp: fu}
	if d := pl.Duration(); d > time.Second {
		t.Errorf("Duration %v counts the held streams", d)
	}
	var planEnd, moreFirst time.Time
	n := map[string]int{}
	err = pl.Run(context.Background(), srv.URL, func(r *vegeta.Result) error {
		name := archive.LabelValue(r.Attack, "stream")
		n[name]++
		switch {
		case name == "plan" && r.Timestamp.Add(r.Latency).After(planEnd):
			planEnd = r.Timestamp.Add(r.Latency)
		case name == "more":
			if moreFirst.IsZero() || r.Timestamp.Before(moreFirst) {
				moreFirst = r.Timestamp
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != 5 || n["plan"] != 5 || n["never"] != 0 {
		t.Fatalf("Decide saw %d results; results %v: want 5 seen, plan 5, never 0", seen, n)
	}
	if n["more"] == 0 || n["more"] > 26 {
		t.Errorf("more sent %d requests, want about 20 (100/s for 200 ms)", n["more"])
	}
	if decided.Before(planEnd) {
		t.Errorf("decided %v before the plan's last answer", planEnd.Sub(decided))
	}
	// The gate opens on a timer, never early; the cut is held by the
	// count above (the schedule gives no more than 20 in 200 ms, however
	// late a loaded host sends them).
	if moreFirst.Before(decided.Add(50 * time.Millisecond)) {
		t.Errorf("more began %v after the decision, want 50ms or later", moreFirst.Sub(decided))
	}
	var info archive.RunInfo
	pl.Finish(&info)
	if len(info.FollowUps) != 1 {
		t.Errorf("run.json's follow_ups %q, want what Decide said", info.FollowUps)
	}
}
