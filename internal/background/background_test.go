package background

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestYield: after Yield, every thread of the process, those the runtime
// makes afterwards too, runs at nice 19 (field 19 of /proc/PID/task/TID/stat).
func TestYield(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc/self/task to read threads' priorities from")
	}
	if err := Yield(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for range 8 { // busy goroutines make the runtime start more threads
		go func() {
			for {
				select {
				case <-done:
					return
				default:
				}
			}
		}()
	}
	defer close(done)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/stat")
		if err != nil {
			continue // the thread ended
		}
		// the fields after the command's closing parenthesis: state is
		// field 3, nice field 19
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		if nice, _ := strconv.Atoi(fields[16]); nice != lowest {
			t.Errorf("thread %s runs at nice %d, want %d", task.Name(), nice, lowest)
		}
	}
}
