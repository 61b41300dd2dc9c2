package analyze

import (
	"fmt"
	"time"

	"github.com/connectbyjbrh/ratecheck/method"

	"github.com/connectbyjbrh/ratecheck/timeline"
)

// Stacked is a limit that a contract holds a route to beside another
// limit of a shorter window over the same route (On), which verify
// probes. Where the run can reach its quota under On's limit, verify
// probes its onset with a stream of its own (method.StreamStacked, see
// onsetOnlyBy); otherwise it is judged only by whether the run reached it
// (see unreachedBy).
type Stacked struct {
	// On is the limit verify probes on the route; Route is the route.
	On, Route string
	// Window is this limit's window as the contract says it; the run
	// judges it at its own (Config.Windows).
	Window time.Duration
	// Onset, when set, says what probing its onset would take, where the
	// run did not (verify's plan: see unreachedBy).
	Onset string
}

// unreachedBy says why the run judges nothing of s, a stacked limit
// over st.Route, whose requests the run sent as on's: how many went from
// on's limit address against s's quota and, where fewer, that no refusal
// of s's can be in the run, and how long a run would have to be to probe
// it as verify probes a limit (timeline.DefaultMaxDuration of its
// windows). Never empty: a stacked limit is never passed.
func (s *surfaceRun) unreachedBy(on *surfaceRun, st Stacked) string {
	w := s.W
	n, from := 0, "the limit address"
	if on != nil && on.primary != nil {
		n, from = on.primary.n, on.primary.source
	}
	if n >= s.L {
		return fmt.Sprintf("limit %s (%d per %v) is stacked on %s over route %s and has no probes of its own: the run sent %d requests to the route from %s, at least its quota, so %s's refusals may be its; verify plans a stacked limit only where the run cannot reach it",
			s.name, s.L, w, st.On, st.Route, n, from, st.On)
	}
	onset := ""
	if st.Onset != "" {
		onset = "; " + st.Onset
	}
	return fmt.Sprintf("limit %s (%d per %v) is stacked on %s over route %s, and the run never reached it: it sent %d requests to the route from %s, fewer than %d, so, enforced as documented, it refused none of them; proving it as verify proves a limit takes a run of about %v (%.1f of its windows) with %s's probes paced under it, which verify does not plan yet%s",
		s.name, s.L, w, st.On, st.Route, n, from, s.L, time.Duration(timeline.DefaultMaxDuration*float64(w)), timeline.DefaultMaxDuration, st.On, onset)
}

// onsetOnlyBy says why the run leaves a stacked limit's checks but onset
// and shape open, where it probed the limit with a stream of its
// own (method.StreamStacked): requests paced under the limit it is stacked
// on, from an address of their own, until past its quota, which show its
// onset and its refusals and nothing of its window's recovery, its
// family or its isolation. Never empty.
func (s *surfaceRun) onsetOnlyBy(st Stacked) string {
	return fmt.Sprintf("limit %s (%d per %v) is stacked on %s over route %s: the run probes its onset alone, with requests paced under %s's limit from an address of their own; proving the rest as verify proves a limit takes a run of about %v (%.1f of its windows), which verify does not plan yet",
		s.name, s.L, s.W, st.On, st.Route, st.On, time.Duration(timeline.DefaultMaxDuration*float64(s.W)), timeline.DefaultMaxDuration)
}

// stackedJudged are the checks of a stacked limit probed by its onset
// that the run judges (see onsetOnlyBy). Not headers: what the target
// advertises on the route may be the shorter limit's, which the stacked
// limit's quota and window would be held to.
var stackedJudged = []string{method.CheckOnset, method.CheckShape}
