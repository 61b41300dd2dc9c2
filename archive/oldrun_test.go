package archive

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOldRunJSON: a run.json written when its durations were int64 and
// float64 fields (testdata/old/run.json, written by the code of then:
// whole windows, stream starts and a clock step, fractional lateness,
// fleet and capacity figures) reads back with every value, and writes
// the same bytes again, its capacity section too.
func TestOldRunJSON(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "old")
	want, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	run, ci, err := ReadCapacity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.WindowMS != 4000 || run.Window() != 4*time.Second || run.Policy.WindowMS != 60000 || run.BehindMS != 12.345 ||
		run.ClockStepMS != -5 || run.Streams[1].StartMS != 6839 || run.Fleet.CapMS != 2000.5 || run.Fleet.EpsilonMS != 1e-7 ||
		run.Fleet.Barrier.WaitedMS != 41.000001 || run.Fleet.StallMS != 0.25 {
		t.Errorf("read %+v", run)
	}
	if ci.WindowMS != 60000 || ci.StepMS != 5000 || ci.Segments[0].CutMS != 2345.678912 || ci.Segments[0].Length() != 6*time.Second ||
		ci.Result.SLOMS != 100 || ci.Result.Steps[0].QuantileMS != 4.123456 || *ci.Result.Steps[0].QuantileLowMS != 3.9 {
		t.Errorf("capacity section read %+v", ci)
	}
	got, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if got = append(got, '\n'); !bytes.Equal(got, want) {
		t.Errorf("run.json written again differs:\n%s\nwant\n%s", got, want)
	}
	section, err := json.Marshal(ci)
	if err != nil {
		t.Fatal(err)
	}
	var old bytes.Buffer
	if err := json.Compact(&old, run.Capacity); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(section, old.Bytes()) {
		t.Errorf("capacity section written again differs:\n%s\nwant\n%s", section, old.Bytes())
	}
}

// TestRunJSONWindow: run.json's window is a positive duration of at most
// a day, in milliseconds, whole as written or with a fraction; anything
// else is refused naming it as written.
func TestRunJSONWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		json string
		want time.Duration
		err  string
	}{
		{`{"window_ms": 4000}`, 4 * time.Second, ""},
		{`{"window_ms": 4000.5}`, 4000500 * time.Microsecond, ""},
		{`{}`, 0, ""},
		{`{"window_ms": 86400001}`, 0, "window_ms 86400001 is not a window (want 1 to 86400000 ms)"},
		{`{"window_ms": -4000}`, 0, "window_ms -4000 is not a window (want 1 to 86400000 ms)"},
		{`{"window_ms": 0.5}`, 0, "window_ms 0.5 is not a window (want 1 to 86400000 ms)"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, RunFile), []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		run, err := ReadRunInfo(dir)
		switch {
		case tc.err == "" && (err != nil || run.Window() != tc.want):
			t.Errorf("%s: %v, %v; want %v", tc.json, run, err, tc.want)
		case tc.err != "" && (err == nil || !strings.HasSuffix(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error ending %q", tc.json, err, tc.err)
		}
	}
}
