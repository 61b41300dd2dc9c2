package analyze

import (
	"testing"
	"time"
)

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
