package attack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// TestFollowUp: held streams send nothing until every result of the
// others is in; Needs sees exactly those results, with run.json as the run
// started; the follow-up probes of the surface it names go out from the
// decision (until the need's end, which the timeline's tests hold), its
// burst, due after that end, sends nothing, and run.json records what Say
// said.
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
  - name: follow-up
    surface: rest
    requests: [{path: /api/public/search, query: {q: more}}]
    pacer: {type: constant, rate: 100/s, count: 20}
  - name: follow-up-burst
    surface: rest
    requests: [{path: /api/public/search, query: {q: never}}]
    pacer: {type: constant, rate: 100/s, duration: 10s}
`))
	if err != nil {
		t.Fatal(err)
	}
	var decided time.Time
	var seen int
	var target string
	fu := &FollowUp{Streams: []string{"rest/follow-up", "rest/follow-up-burst"}, MaxUntil: 3.5,
		Needs: func(info archive.RunInfo, rs []archive.Result) []timeline.Need {
			decided, seen, target = time.Now(), len(rs), info.Target
			return []timeline.Need{{Surface: "rest", Why: "a question left open", Until: 1000, BurstAt: 2000}}
		},
		Say: func(d timeline.Decision) string { return d.Surface + ": " + d.Why }}
	pl := Plan{Profile: prof, Window: time.Second, FollowUp: fu}
	if d := pl.Duration(); d > time.Second {
		t.Errorf("Duration %v counts the held streams", d)
	}
	pl.Started(archive.RunInfo{Target: srv.URL})
	var planEnd, moreFirst time.Time
	n := map[string]int{}
	err = pl.Run(context.Background(), srv.URL, func(r archive.Result) error {
		l := r.Labels
		n[l.Surface+"/"+l.Stream]++
		switch {
		case l.Stream == "plan" && r.Timestamp.Add(r.Latency).After(planEnd):
			planEnd = r.Timestamp.Add(r.Latency)
		case l.Stream == "follow-up" && (moreFirst.IsZero() || r.Timestamp.Before(moreFirst)):
			moreFirst = r.Timestamp
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != 5 || n["rest/plan"] != 5 || n["rest/follow-up-burst"] != 0 || target != srv.URL {
		t.Fatalf("Needs saw %d results of %q; results %v: want 5 of %q seen, plan 5, the burst 0", seen, target, n, srv.URL)
	}
	if n["rest/follow-up"] != 20 {
		t.Errorf("the follow-up sent %d probes, want its 20", n["rest/follow-up"])
	}
	if decided.Before(planEnd) {
		t.Errorf("decided %v before the plan's last answer", planEnd.Sub(decided))
	}
	if moreFirst.Before(decided) {
		t.Errorf("the follow-up began %v before the decision", decided.Sub(moreFirst))
	}
	var info archive.RunInfo
	pl.Finish(&info)
	if len(info.FollowUps) != 1 || info.FollowUps[0] != "rest: a question left open" {
		t.Errorf("run.json's follow_ups %q, want what Say said", info.FollowUps)
	}
}
