package attack

import (
	"fmt"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// FailureGuard watches the last Window results and trips when more than
// Max of them were transport errors or 5xx: the target is failing, and a
// load generator must stop adding load to it.
type FailureGuard struct {
	// Window is how many of the latest results are judged (default 100).
	Window int
	// Max is the share of failures that trips the guard; 0 never trips.
	Max float64

	ring          []bool
	next, n, fail int
}

// FailingError says the guard tripped.
type FailingError struct {
	Failed, Of int
	Max        float64
}

func (e *FailingError) Error() string {
	return fmt.Sprintf("the target is failing: %d of the last %d results were transport errors or 5xx (more than %.0f%%), so the attack stopped adding load",
		e.Failed, e.Of, 100*e.Max)
}

// Add counts r and returns a *FailingError once the target is failing.
func (g *FailureGuard) Add(r *vegeta.Result) error {
	if g.Max <= 0 {
		return nil
	}
	if g.ring == nil {
		if g.Window <= 0 {
			g.Window = 100
		}
		g.ring = make([]bool, g.Window)
	}
	if g.n == len(g.ring) {
		if g.ring[g.next] {
			g.fail--
		}
	} else {
		g.n++
	}
	bad := r.Code == 0 || r.Code >= 500
	g.ring[g.next] = bad
	if bad {
		g.fail++
	}
	g.next = (g.next + 1) % len(g.ring)
	if g.n == len(g.ring) && float64(g.fail) > g.Max*float64(g.n) {
		return &FailingError{Failed: g.fail, Of: g.n, Max: g.Max}
	}
	return nil
}
