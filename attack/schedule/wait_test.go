package schedule

import (
	"runtime"
	"testing"
	"time"
)

// TestWaiterNeverEarly: Until returns at or after its deadline, whether
// the last of the wait is slept finely or, every fine slot taken, on the
// timer; a deadline already past returns at once.
func TestWaiterNeverEarly(t *testing.T) {
	for _, held := range []bool{false, true} {
		if held { // every fine slot taken: the whole wait on the timer
			n := int32(runtime.GOMAXPROCS(0))
			fine.n.Add(n)
			defer fine.n.Add(-n)
		}
		var w Waiter
		for _, d := range []time.Duration{-time.Second, 0, 50 * time.Microsecond, 700 * time.Microsecond, 1500 * time.Microsecond, 3 * time.Millisecond, 20 * time.Millisecond} {
			deadline := time.Now().Add(d)
			if stopped := w.Until(deadline, nil); stopped {
				t.Errorf("fine slots held %v, wait %v: stopped without a stop channel", held, d)
			}
			if early := time.Until(deadline); early > 0 {
				t.Errorf("fine slots held %v, wait %v: returned %v early", held, d, early)
			}
		}
	}
}

// TestWaiterStop: a stop closed during the wait ends it at once; one
// closed before a deadline already past is left to the caller.
func TestWaiterStop(t *testing.T) {
	t.Run("stopped while waiting an hour", func(t *testing.T) {
		stop := make(chan struct{})
		done := make(chan bool, 1)
		go func() {
			var w Waiter
			done <- w.Until(time.Now().Add(time.Hour), stop)
		}()
		time.Sleep(10 * time.Millisecond)
		close(stop)
		select {
		case stopped := <-done:
			if !stopped {
				t.Error("woken by the stop, Until said the deadline came")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Until slept through the stop")
		}
	})
	t.Run("due already", func(t *testing.T) {
		stop := make(chan struct{})
		close(stop)
		var w Waiter
		if w.Until(time.Now().Add(-time.Millisecond), stop) {
			t.Error("the deadline had passed, and Until reported the stop instead")
		}
	})
}

// TestWaitAllocs: waiting for a hit (on the timer, then finely)
// allocates nothing once the timer exists.
func TestWaitAllocs(t *testing.T) {
	stop := make(chan struct{})
	var w Waiter
	if n := testing.AllocsPerRun(20, func() { w.Until(time.Now().Add(3*time.Millisecond), stop) }); n != 0 {
		t.Errorf("Waiter.Until: %v allocations per wait, want 0", n)
	}
}

// TestSleepersCap: at most GOMAXPROCS−1 waiters sleep finely at once.
func TestSleepersCap(t *testing.T) {
	var s sleepers
	limit := runtime.GOMAXPROCS(0) - 1
	for i := range limit {
		if !s.take() {
			t.Fatalf("slot %d of %d refused", i+1, limit)
		}
	}
	if s.take() {
		t.Errorf("a slot beyond GOMAXPROCS−1 = %d was given", limit)
	}
	s.give()
	if limit > 0 && !s.take() {
		t.Error("a slot given back was refused to the next waiter")
	}
}
