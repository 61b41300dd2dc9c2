package archive

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestClockStep: a wall clock that jumps against the monotonic one is a
// step; a little drift is not.
func TestClockStep(t *testing.T) {
	for _, tc := range []struct {
		wall, mono time.Duration
		step       bool
	}{
		{10 * time.Second, 10 * time.Second, false},
		{10*time.Second + 50*time.Millisecond, 10 * time.Second, false},
		{13 * time.Second, 10 * time.Second, true},
		{7 * time.Second, 10 * time.Second, true},
		{time.Hour + 30*time.Second, time.Hour, false}, // under 1 %
	} {
		if got, step := ClockStep(tc.wall, tc.mono); step != tc.step || got != tc.wall-tc.mono {
			t.Errorf("ClockStep(%v, %v) = %v, %v; want %v, %v", tc.wall, tc.mono, got, step, tc.wall-tc.mono, tc.step)
		}
	}
}

// TestArchiveDiskFull: a full disk while archiving is an error that says
// so and names the file (/dev/full stands in for the disk).
func TestArchiveDiskFull(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here")
	}
	a, err := Create(t.TempDir(), "full", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a.f.Close()
	a.f, a.bw = full, bufio.NewWriterSize(full, 64<<10)
	a.enc = vegeta.NewEncoder(a.bw)
	if err := a.Add(&vegeta.Result{Code: 200, Timestamp: time.Now()}); err != nil {
		t.Fatal(err) // buffered: not written yet
	}
	err = a.Flush()
	if err == nil || !strings.Contains(err.Error(), "the disk is full") || !strings.Contains(err.Error(), ResultsFile) {
		t.Errorf("flush to a full disk: %v", err)
	}
}
