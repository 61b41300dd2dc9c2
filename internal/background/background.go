// Package background is test support: it moves a test binary whose tests
// are CPU-bound simulations on injected clocks (analyze's plan and fit
// simulations, the fleet's calibration) to the machine's lowest CPU
// priority, so that when go test ./... runs it beside the packages whose
// tests measure real time (end-to-end verify runs on loopback, capacity
// searches), those get the cores when they need them and their timing is
// their own, not the simulations'. A simulation's result does not depend
// on how fast it runs; a verify run's does.
package background

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// Main is a TestMain for such a package: it yields (see Yield), saying on
// stderr if it could not, then runs the tests and exits with their code.
func Main(m *testing.M) {
	if err := Yield(); err != nil {
		fmt.Fprintln(os.Stderr, "could not lower the CPU priority:", err)
	}
	os.Exit(m.Run())
}

// lowest is the nicest value Linux knows: a task at 19 gets about 1.5 % of
// a core beside one at 0 that wants it.
const lowest = 19

// Yield sets every thread of this process to the lowest CPU priority
// (Linux keeps a priority per thread, and a thread made later inherits its
// maker's). Call it from TestMain before m.Run. Where the threads cannot
// be listed (no /proc) it sets the calling thread's alone.
func Yield() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return syscall.Setpriority(syscall.PRIO_PROCESS, 0, lowest)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, lowest); err != nil && err != syscall.ESRCH {
			return err
		}
	}
	return nil
}
