package attack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
)

// TestEngineRefusesRunAboveDescriptorLimit: a fleet with more clients than
// this process may open descriptors is refused before anything is sent or
// written, with a *SetupError naming the limit and how to raise it; the
// embedded target doubles the estimate.
func TestEngineRefusesRunAboveDescriptorLimit(t *testing.T) {
	soft, hard, ok := raiseDescriptorLimit()
	if !ok || hard > 1<<24 {
		t.Skipf("the descriptor limit is not known or not bounded (soft %d, hard %d)", soft, hard)
	}
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer ts.Close()
	f := wideJob{int(hard) + 1}
	out := t.TempDir()
	run, err := Execute(context.Background(), f, Options{Command: "fleet", Target: ts.URL, Out: out, ReachTimeout: time.Second})
	var setup *SetupError
	var de *descriptorError
	if run != nil || !errors.As(err, &setup) || !errors.As(err, &de) {
		t.Fatalf("run %v, error %v; want a *SetupError of a *DescriptorError", run, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "ulimit -n") || de.Soft != hard {
		t.Errorf("%q: does not say how to raise it, or the soft limit %d was not raised to the hard %d", msg, de.Soft, hard)
	}
	if entries, _ := os.ReadDir(out); hits.Load() != 0 || len(entries) != 0 {
		t.Errorf("%d requests sent, %d entries written", hits.Load(), len(entries))
	}
	small := wideJob{10}
	if err := checkDescriptors(small, true); err != nil {
		t.Errorf("a fleet of 10 refused: %v", err)
	}
}

// TestDescriptorEstimates: the estimates grow with what a run opens.
func TestDescriptorEstimates(t *testing.T) {
	p, err := scenario.ParseProfile("p.yaml", []byte("name: p\npolicy: {surface: rest}\nstreams:\n  - name: s\n    surface: rest\n    sources: [127.0.0.1, 127.0.0.2]\n    requests: [{path: /api/public/search}]\n    pacer: {type: constant, rate: 1/s, count: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan := Plan{Profile: p, Window: time.Second}
	if got := plan.Descriptors(false); got != 2*vegetaWorkers+DescriptorMargin {
		t.Errorf("a plan of 2 attackers: %d descriptors", got)
	}
}

// wideJob is a job that needs a descriptor per client, two when the
// target is embedded, as a fleet of n clients does.
type wideJob struct{ n int }

func (j wideJob) Run(context.Context, string, func(archive.Result) error) error { return nil }
func (j wideJob) Duration() time.Duration                                       { return time.Second }
func (j wideJob) Info() archive.RunInfo                                         { return archive.RunInfo{} }
func (j wideJob) Descriptors(embedded bool) int {
	if embedded {
		return 2*j.n + DescriptorMargin
	}
	return j.n + DescriptorMargin
}
