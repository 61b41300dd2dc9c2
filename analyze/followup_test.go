package analyze

import (
	"slices"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
)

// TestFollowUpFromALateSecondBurst: a host that stalls for 0.4 W while the
// flood is answered sends the second burst that much late (it waits for
// the flood's last answer), and every rival gives capacity back that much
// later. The follow-up is timed from the burst as it went out, so a
// correct sliding log still passes with its family decided (timed from
// the plan, its probes ended before the log's ageing and left the log and
// the counter open: 6 of 6 runs passed undecided), and a sliding-window
// counter still fails, no run naming a wrong family.
func TestFollowUpFromALateSecondBurst(t *testing.T) {
	t.Parallel()
	w := simW
	host := hostsim.Quiet
	host.Fixed = []hostsim.Stall{{At: w * 6 / 100, D: w * 4 / 10}}
	const runs = 6
	for _, tc := range []struct {
		name string
		// right: every run exactly right (decided family); else each
		// failed, none deciding a wrong family
		right bool
	}{
		{"sliding log, refusals counted (documented)", true},
		{"sliding-window counter", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ti := slices.IndexFunc(planTruths, func(tr planTruth) bool { return tr.name == tc.name })
			if ti < 0 {
				t.Fatalf("no truth %q", tc.name)
			}
			c := runCell(planTruths[ti], host, 0, runs, 0x5ec0d)
			if tc.right && c.right != runs || !tc.right && (c.fail != runs || c.wrongFamily > 0) {
				t.Errorf("%d of %d runs right, %d failed, %d inconclusive, %d of a wrong family (%d followed up): %s",
					c.right, runs, c.fail, c.inconclusive, c.wrongFamily, c.followedUp, c.firstWrong)
			}
		})
	}
}

// TestSecondEndIsTheBurstAsSent: the follow-up's origin is the second
// burst's last send, from the run's first request, never before the
// plan's own time for it.
func TestSecondEndIsTheBurstAsSent(t *testing.T) {
	t.Parallel()
	w := 6 * time.Second
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		sent time.Duration // the burst's last send, from t0 (0: none)
		want float64
	}{
		{"none", 0, plannedSecondEnd},
		{"on time", time.Duration(1.1699 * float64(w)), plannedSecondEnd},
		{"late by 0.4 W", time.Duration(1.57 * float64(w)), 1.57},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &Report{Start: t0, Surfaces: []SurfaceDetail{{}}}
			if tc.sent > 0 {
				r.Surfaces[0].SecondEnd = t0.Add(tc.sent)
			}
			if got := r.secondEnd(0, w); got < tc.want-1e-9 || got > tc.want+1e-9 {
				t.Errorf("secondEnd = %.4f W, want %.4f W", got, tc.want)
			}
		})
	}
}
