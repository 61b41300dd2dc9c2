package refserver

import (
	"testing"
	"time"
)

// TestStallsAfterTheBarrier: the stall meter judges the stalls that ended
// after the barrier opened; any number of stalls while the programs
// started up cannot crowd one out, and a start-up stall does not count.
func TestStallsAfterTheBarrier(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	opened := t0.Add(time.Minute)
	var s stalls
	s.add(t0, 800*time.Millisecond) // programs starting: delays only arrivals
	for i := range 3 * maxStalls {
		s.add(t0.Add(time.Duration(i)*time.Millisecond), 2*time.Millisecond)
	}
	s.add(opened.Add(time.Second), 300*time.Microsecond) // timer jitter
	if got := s.worst(opened); got != 300*time.Microsecond {
		t.Errorf("before any stall after the barrier: %v, want the jitter 300µs", got)
	}
	s.add(opened.Add(2*time.Second), 120*time.Millisecond)
	for i := range 10 {
		s.add(opened.Add(3*time.Second+time.Duration(i)*time.Millisecond), 3*time.Millisecond)
	}
	if got := s.worst(opened); got != 120*time.Millisecond {
		t.Errorf("worst after the barrier: %v, want 120ms", got)
	}
	if got := s.worst(time.Time{}); got != 120*time.Millisecond {
		t.Errorf("worst of all kept: %v, want 120ms (the start-up's 800ms was crowded out of the ring)", got)
	}
}
