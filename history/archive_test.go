package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// capacityRun is one capacity run folder to write: its label and start,
// and what its search recorded in run.json's capacity section.
type capacityRun struct {
	label    string
	start    time.Time
	info     archive.CapacityInfo
	contract *archive.ContractInfo // nil: the built-in contract
}

// writeCapacityRun writes a capacity run folder under root as the capacity
// command leaves it: results.bin, and run.json with the search's section
// marshalled from archive.CapacityInfo as capacity/runner's Finish does.
// It returns the folder.
func writeCapacityRun(t *testing.T, root string, r capacityRun) string {
	t.Helper()
	w, err := archive.Create(root, "capacity", r.start)
	if err != nil {
		t.Fatal(err)
	}
	section, err := json.Marshal(r.info)
	if err != nil {
		t.Fatal(err)
	}
	info := archive.RunInfo{Command: "capacity", Profile: "capacity", Target: "http://127.0.0.1:41234", Embedded: true,
		Policy: archive.PolicyInfo{Surface: r.info.Surface}, Version: "test", Start: r.start, End: r.start.Add(time.Minute),
		Label: r.label, Capacity: section, Contract: r.contract}
	if err := w.Close(info); err != nil {
		t.Fatal(err)
	}
	return w.Dir
}

// capacityResult is a search's result with a knee at knee/s (0: none
// passed), the first failing rate at high/s (0: none failed), held to a
// p99 of sloMS milliseconds and an error budget.
func capacityResult(verdict capacity.Verdict, knee, high, sloMS, budget float64) *capacity.Result {
	r := &capacity.Result{Verdict: verdict, SLO: "p99<=" + (time.Duration(sloMS) * time.Millisecond).String(), Quantile: 0.99,
		SLOMS: clock.Millis(sloMS), ErrorBudget: budget, Confidence: 0.95, Precision: 0.05, StartRPS: 100, MaxRPS: 10000, Steps: []capacity.StepResult{}}
	if knee > 0 {
		r.KneeRPS, r.KneeLowRPS = &knee, &knee
	}
	if high > 0 {
		r.KneeHighRPS = &high
	}
	return r
}

// TestReadCapacityRun reads capacity run folders back: the verdict and
// the knee come from the result the search recorded in run.json, through
// archive; a folder whose run.json holds no search, or no result,
// or that is another shard than the first of a sharded search, is unread
// with why.
func TestReadCapacityRun(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	const p99 = "p99<=100ms, error budget 1%"
	tests := []struct {
		name      string
		info      archive.CapacityInfo
		verdict   capacity.Verdict
		objective string
		knee      float64 // 0: no knee figure
		high      float64 // 0: no high bound
		note      string  // in the run's notes
		unread    string  // the reason it is unread, "" when read
	}{
		{"found", archive.CapacityInfo{Surface: "mcp", SLO: "p99<=100ms", ErrorBudget: 0.01, Result: capacityResult(capacity.VerdictFound, 1480, 1560, 100, 0.01)},
			capacity.VerdictFound, p99, 1480, 1560, "", ""},
		{"nothing failed", archive.CapacityInfo{Surface: "rest", Result: capacityResult(capacity.VerdictFound, 2000, 0, 250, 0.05)},
			capacity.VerdictFound, "p99<=250ms, error budget 5%", 2000, 0, "", ""},
		{"none passed", archive.CapacityInfo{Surface: "rest", Result: capacityResult(capacity.VerdictNotFound, 0, 100, 100, 0.01)},
			capacity.VerdictNotFound, p99, 0, 0, "", ""},
		{"the client's limit", archive.CapacityInfo{Surface: "rest", Result: capacityResult(capacity.VerdictClient, 900, 1000, 100, 0.01)},
			capacity.VerdictClient, p99, 900, 1000, "the knee is the client's", ""},
		{"first shard", archive.CapacityInfo{Shard: "0/2", Surface: "rest", Result: capacityResult(capacity.VerdictFound, 1500, 1600, 100, 0.01)},
			capacity.VerdictFound, p99, 1500, 1600, "", ""},
		{"second shard", archive.CapacityInfo{Shard: "1/2", Surface: "rest", Result: capacityResult(capacity.VerdictFound, 1500, 1600, 100, 0.01)},
			"", "", 0, 0, "", "shard 1/2 of a sharded capacity search"},
		{"no result", archive.CapacityInfo{Surface: "rest"}, "", "", 0, 0, "", "recorded no result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeCapacityRun(t, t.TempDir(), capacityRun{label: "v1", start: t0, info: tt.info})
			runs, unread := ReadArchive([]string{filepath.Dir(dir)}, ReadOptions{})
			if tt.unread != "" {
				if len(runs) != 0 || len(unread) != 1 || unread[0].Path != dir || !strings.Contains(unread[0].Why, tt.unread) {
					t.Fatalf("runs %+v, unread %+v: want %s unread, %q", runs, unread, dir, tt.unread)
				}
				return
			}
			if len(runs) != 1 || len(unread) != 0 {
				t.Fatalf("runs %+v, unread %+v: want the run read", runs, unread)
			}
			a := runs[0]
			want := Run{ID: dir, Kind: "capacity", Target: Embedded, Contract: BuiltinContract, Label: "v1", Start: t0,
				Surfaces: []Sample{{Surface: tt.info.Surface, Verdict: string(tt.verdict), Objective: tt.objective,
					Values: map[Figure]float64{}, Bounds: map[Figure]Bounds{}}}}
			if tt.knee > 0 {
				want.Surfaces[0].Values[Knee] = tt.knee
				b := Bounds{Low: &tt.knee}
				if tt.high > 0 {
					b.High = &tt.high
				}
				want.Surfaces[0].Bounds[Knee] = b
			}
			if tt.note != "" {
				if len(a.Notes) != 1 || !strings.Contains(a.Notes[0], tt.note) {
					t.Errorf("notes %q, want one saying %q", a.Notes, tt.note)
				}
				a.Notes = nil
			}
			if diff := cmp.Diff(want, a.Run); diff != "" {
				t.Errorf("run read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadCapacityRunWithoutSection: a run.json that says capacity but
// holds no search is unread, and no capacity.json beside it is looked for.
func TestReadCapacityRunWithoutSection(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	w, err := archive.Create(root, "capacity", time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(archive.RunInfo{Command: "capacity", Target: "http://127.0.0.1:8080"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir, "capacity.json"), []byte(`{"verdict":"found","knee_rps":1000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, unread := ReadArchive([]string{w.Dir}, ReadOptions{})
	if len(runs) != 0 || len(unread) != 1 || !strings.Contains(unread[0].Why, "no capacity section") {
		t.Errorf("runs %+v, unread %+v: want the run unread, its run.json having no capacity section", runs, unread)
	}
}

// TestCapacityOfContract: a search of a contract's route is read under the
// contract's name and as its route's sample, so that searches of one route
// of one contract make one series and another contract's or route's
// another, and two files saying the same limits name one contract.
func TestCapacityOfContract(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	text := []byte("routes:\n  - name: search\n    path: /api/public/search\n")
	root := t.TempDir()
	for i, c := range []struct{ file, route string }{{"my-api.yaml", "search"}, {"/etc/other/my-api.yaml", "search"}, {"my-api.yaml", "export"}} {
		ci := archive.NewContractInfo(c.file, text)
		ci.Route = c.route
		writeCapacityRun(t, root, capacityRun{label: fmt.Sprintf("v%d", i+1), start: t0.Add(time.Duration(i) * time.Hour), contract: ci,
			info: archive.CapacityInfo{Surface: "rest", Result: capacityResult(capacity.VerdictFound, 1480, 1560, 100, 0.01)}})
	}
	runs, unread := ReadArchive([]string{root}, ReadOptions{})
	if len(runs) != 3 || len(unread) != 0 {
		t.Fatalf("runs %d, unread %+v: want 3 read", len(runs), unread)
	}
	sum := sha256.Sum256(text)
	name := "my-api.yaml@" + hex.EncodeToString(sum[:])[:12]
	for i, want := range []string{"search", "search", "export"} {
		if r := runs[i]; r.Contract != name || len(r.Surfaces) != 1 || r.Surfaces[0].Surface != want {
			t.Errorf("run %d: contract %q, samples %+v; want %q and one sample of route %s", i, r.Contract, r.Surfaces, name, want)
		}
	}
}
