//go:build !linux

package schedule

import "time"

// fineSleep sleeps for d: on this system with the runtime's timers.
func fineSleep(d time.Duration) { time.Sleep(d) }
