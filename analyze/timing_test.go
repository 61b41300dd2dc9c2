package analyze

import (
	"strings"
	"testing"
	"time"
)

// TestTimingNote: a run whose timing left the family open says how long
// the limit address's answers took against the window, and what would
// decide it: a window where that is within 1 %, and, where the admissions
// took much longer than the refusals, that a target holding them for a
// share of its window would hold them at any. Nothing is said when nothing
// is open, or when the answers were quick enough for the plan.
func TestTimingNote(t *testing.T) {
	t.Parallel()
	const w = 4 * time.Second
	open := SurfaceVerdict{Model: familyTokenBucket, ModelAlternatives: []string{familySlidingLog}}
	decided := SurfaceVerdict{Model: familyTokenBucket, ModelDecided: true, ModelAlternatives: []string{}}
	observed := 163
	unexplained := SurfaceVerdict{Model: familyUnknown, ModelAlternatives: []string{}, ObservedLimit: &observed}
	inconclusive := SurfaceVerdict{Model: familyTokenBucket, ModelDecided: true, ModelAlternatives: []string{},
		Checks: []Check{{Name: "rejected-count", Verdict: Inconclusive, Detail: "… within what the run's timing can move …"}}}
	for _, tc := range []struct {
		name     string
		sv       SurfaceVerdict
		adm, ref time.Duration // every admission's and refusal's latency
		want     []string      // in the note ("": no note)
	}{
		{"a busy host", open, 180 * time.Millisecond, 160 * time.Millisecond,
			[]string{"the answers to 127.0.0.1 took up to 180ms (p99; admissions 180ms, refusals 160ms), 4.5 % of the 4s window", "a window of 18s or more, or a quieter host, would decide it"}},
		{"a check left open", inconclusive, 90 * time.Millisecond, 90 * time.Millisecond,
			[]string{"took up to 90ms (p99; admissions 90ms, refusals 90ms), 2.2 % of the 4s window", "a window of 9s or more"}},
		{"admissions held long past refusals", open, 1900 * time.Millisecond, 5 * time.Millisecond,
			[]string{"took up to 1.9s (p99; admissions 1.9s, refusals 5ms), 47.5 % of the 4s window", "a window of 3m10s or more", "unless the target holds what it admits for a share of its window (as nginx's burst and delay does), which no window undoes"}},
		{"no family explaining the run", unexplained, 1200 * time.Millisecond, 1000 * time.Millisecond,
			[]string{"took up to 1.2s (p99; admissions 1.2s, refusals 1s), 30.0 % of the 4s window", "a window of 2m0s or more"}},
		{"quick answers", open, 30 * time.Millisecond, 30 * time.Millisecond, nil},
		{"decided", decided, 900 * time.Millisecond, 900 * time.Millisecond, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := &groupRun{source: "127.0.0.1", refusals: 50, admLat: newReservoir(timingSample), refLat: newReservoir(timingSample)}
			for range 50 {
				g.admLat.add(int64(tc.adm))
				g.refLat.add(int64(tc.ref))
			}
			s := &surfaceRun{W: w, primary: g}
			sv := tc.sv
			note := s.timingNote(&sv)
			if tc.want == nil {
				if note != "" {
					t.Errorf("note %q, want none", note)
				}
				return
			}
			for _, want := range tc.want {
				if !strings.Contains(note, want) {
					t.Errorf("note %q\nlacks %q", note, want)
				}
			}
		})
	}
}
