package scenario

import (
	"fmt"
	"time"
)

// Ceilings are an operator's bounds on one run, far below the format's
// own limits (maxRate, maxSpan) and checked at the run's window: a
// profile, or a window that compresses it, that would send more or run
// longer does not start. The zero value allows nothing; start from
// DefaultCeilings.
type Ceilings struct {
	// Rate is the most requests the run may send in any one second.
	Rate int
	// Duration is the longest the run may last.
	Duration time.Duration
}

// DefaultCeilings are the ceilings of a run unless its operator raises
// them.
var DefaultCeilings = Ceilings{Rate: 1000, Duration: 15 * time.Minute}

// CeilingError is a run above one of its ceilings: its busiest second
// (OverRate: Rate above Ceilings.Rate), or its length (Duration above
// Ceilings.Duration).
type CeilingError struct {
	// Profile names the profile; Window is the run's window.
	Profile string
	Window  time.Duration
	// OverRate says the run's busiest second, Rate, is what is above.
	OverRate bool
	Rate     int
	// Duration is how long the run lasts, when that is what is above.
	Duration time.Duration
	// Ceilings are the ceilings it is above.
	Ceilings Ceilings
}

func (e *CeilingError) Error() string {
	if e.OverRate {
		return fmt.Sprintf("%s at window %v sends up to %d requests in one second, above the ceiling of %d", e.Profile, e.Window, e.Rate, e.Ceilings.Rate)
	}
	return fmt.Sprintf("%s at window %v runs for %v, above the ceiling of %v", e.Profile, e.Window, e.Duration.Round(time.Second), e.Ceilings.Duration)
}

// Check returns a *CeilingError when a run of profile at window, whose
// busiest second holds peak requests and which lasts planned, is above
// the ceilings (the rate is checked first), else nil.
func (c Ceilings) Check(profile string, window time.Duration, peak int, planned time.Duration) error {
	switch {
	case peak > c.Rate:
		return &CeilingError{Profile: profile, Window: window, OverRate: true, Rate: peak, Ceilings: c}
	case planned > c.Duration:
		return &CeilingError{Profile: profile, Window: window, Duration: planned, Ceilings: c}
	}
	return nil
}
