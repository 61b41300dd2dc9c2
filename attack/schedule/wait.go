package schedule

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Waiter waits for a hit's due time, as precisely as the system allows:
// on a runtime timer until fineWait before it, then the rest in fineSleep
// (nanosleep on Linux) when a slot of the fine cap is free. Every pacer
// that waits for its hits itself waits with one (the engine's, and
// capacity/runner's). It reuses one timer, so waiting allocates
// nothing. Its zero value is ready to use; it is not safe for concurrent
// use.
type Waiter struct {
	timer *time.Timer
}

// Until waits until deadline or until stop is closed (a nil stop never
// is), and reports whether stop ended the wait: it returns true as soon
// as stop closes during a wait on the timer, false once deadline has
// passed (at once if it had; a stop closed by then is the caller's to
// check). Deadline is read with its monotonic reading, if it has one
// (time.Now and Add keep it), so a step of the wall clock changes no
// wait. Until never returns false before deadline.
func (w *Waiter) Until(deadline time.Time, stop <-chan struct{}) bool {
	yielded := false
	for {
		wait := time.Until(deadline)
		switch {
		case wait <= 0:
			return false
		case wait <= fineWait && !yielded:
			// Let the goroutines this one woke run first: Vegeta hands each
			// hit to a worker just before asking for the next, and the
			// worker, queued to run next on this P, would wait through the
			// sleep below for another P to take it.
			runtime.Gosched()
			yielded = true
			continue
		case wait <= fineWait && fine.take():
			fineSleep(wait)
			fine.give()
			continue
		}
		d := wait // the whole wait, when other pacers hold every fine slot
		if wait > fineWait {
			d = wait - fineWait/2 // to within fineWait, whatever the timer's lateness
		}
		if w.timer == nil {
			w.timer = time.NewTimer(d)
		} else {
			w.timer.Reset(d) // its channel holds nothing stale (Go 1.23 timers)
		}
		select {
		case <-w.timer.C:
		case <-stop:
			w.timer.Stop()
			return true
		}
	}
}

// fineWait is how close to a hit's due time a Waiter stops waiting on a
// timer (which may fire up to a millisecond late) and sleeps the rest
// precisely (see fineSleep).
const fineWait = 2 * time.Millisecond

// fine counts the waiters in fineSleep, over the whole process. A thread
// asleep in a system call keeps its P (the runtime's right to run Go
// code) until the runtime's monitor takes it back, which can take
// milliseconds; so at most GOMAXPROCS−1 waiters sleep finely at once, one
// P always left to run everything else, and the others wait on a timer
// for the whole wait.
var fine sleepers

// sleepers counts waiters in fineSleep against a cap of GOMAXPROCS−1.
type sleepers struct{ n atomic.Int32 }

// take reports whether one more waiter may sleep finely, and counts it.
func (s *sleepers) take() bool {
	if s.n.Add(1) <= int32(runtime.GOMAXPROCS(0)-1) {
		return true
	}
	s.n.Add(-1)
	return false
}

// give counts a waiter out of fineSleep.
func (s *sleepers) give() { s.n.Add(-1) }
