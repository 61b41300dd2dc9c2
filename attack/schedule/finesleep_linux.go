package schedule

import (
	"syscall"
	"time"
)

// fineSleep sleeps for d, a millisecond or two, to within tens of
// microseconds: in nanosleep(2), holding its thread. Go's timers on Linux
// wake through epoll_wait, whose timeout is in whole milliseconds, so a
// timer's last millisecond is rounded up and a request would go out up to
// a millisecond late. A Waiter sleeps on a timer until a little before a
// request is due and here for the rest.
func fineSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
