package analyze

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/decode"
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

// TestUnordered: refusals, which a limiter answers at once, held by the
// host a twentieth of the window longer than the run's fastest and let go at
// three moments or more leave the fit's orders untrusted; a freeze that
// held many and let them all go at once, one heavy tail, or a target that
// holds every refusal alike do not; the timing note says so, and what
// window would decide.
func TestUnordered(t *testing.T) {
	t.Parallel()
	const w, ms = 6 * time.Second, int64(time.Millisecond)
	type refusal struct{ start, lat int64 } // ms
	steady := func(from, to int64, lat func(s int64) int64) []refusal {
		var out []refusal
		for s := from; s < to; s += 25 {
			out = append(out, refusal{s, lat(s)})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		refusals []refusal
		want     bool
	}{
		{"a quiet host", steady(0, 2000, func(int64) int64 { return 1 }), false},
		// a freeze over the first 1.4 s: every refusal sent in it comes back at its end
		{"a freeze", steady(0, 2000, func(s int64) int64 {
			if s < 1400 {
				return max(1, 1400-s)
			}
			return 1
		}), false},
		{"one heavy tail", append(steady(0, 2000, func(int64) int64 { return 1 }), refusal{1010, 1064}), false},
		{"a target holding every refusal a second", steady(0, 2000, func(s int64) int64 { return 1000 + s%7 }), false},
		// a starved host: the flood's six refusals each held 1 to 2.2 s, let go one by one
		{"a starved host", []refusal{{444, 2148}, {451, 1030}, {474, 1457}, {612, 1433}, {680, 1348}, {703, 1265}, {1758, 96}}, true},
		// a busy suite machine, at 6 s what it did at 4 s: the spoof
		// probes, sent over 0.12 s and refused at once, came back 0.3 to
		// 0.53 s later, one by one
		{"a busy machine's spoof probes", append(steady(0, 660, func(int64) int64 { return 1 }), steady(660, 830, func(s int64) int64 { return 300 + (s-660)*3/2 })...), true},
		{"held under a twentieth", append(steady(0, 660, func(int64) int64 { return 1 }), steady(660, 830, func(s int64) int64 { return 100 + (s-660)/2 })...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := &groupRun{}
			recs := make([]decode.Record, len(tc.refusals))
			for i, r := range tc.refusals {
				recs[i] = decode.Record{Start: r.start * ms, End: (r.start + r.lat) * ms, Code: 429}
				g.addRefusal(&recs[i], w)
			}
			slices.SortFunc(recs, func(a, b decode.Record) int { return cmp.Compare(a.Start, b.Start) })
			for i := range recs {
				g.heldApart(&recs[i], int64(orderedShare*float64(w)))
			}
			g.source = "127.0.0.1"
			s := &surfaceRun{W: w, primary: g}
			if got := s.unordered(); got != tc.want {
				t.Errorf("unordered = %v, want %v (held apart, by response, in %v)", got, tc.want, g.heldApartEnds)
			}
			observed := 240
			note := s.timingNote(&SurfaceVerdict{Model: familyUnknown, ObservedLimit: &observed})
			if said := strings.Contains(note, "the host held refusals to 127.0.0.1 apart") && strings.Contains(note, "or a quieter host, would decide it"); said != tc.want {
				t.Errorf("timing note %q; want the refusals held apart said: %v", note, tc.want)
			}
		})
	}
}

// TestHoldsAdmissions: admissions whose p99 is over three times the
// refusals', on a run whose answers took longer than the plan decides
// through (1 % of the window, 40 ms of 4 s), mark a target (or host)
// holding what it admits, where a fit left open names no family; quick
// answers, admissions as quick as refusals, or no refusal do not.
func TestHoldsAdmissions(t *testing.T) {
	t.Parallel()
	const w, ms = 4 * time.Second, time.Millisecond
	for _, tc := range []struct {
		name     string
		adm, ref time.Duration
		refusals int
		want     bool
	}{
		{"nginx's delay on a busy host", 2460 * ms, 120 * ms, 50, true},
		{"nginx's delay on a quiet host", 1900 * ms, 5 * ms, 50, true},
		{"a busy host holding all alike", 900 * ms, 800 * ms, 50, false},
		{"three times, not over", 300 * ms, 100 * ms, 50, false},
		{"quick answers", 36 * ms, 2 * ms, 50, false},
		{"nothing refused", 2 * time.Second, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := &groupRun{source: "127.0.0.1", refusals: tc.refusals, admLat: newReservoir(timingSample), refLat: newReservoir(timingSample)}
			for range 50 {
				g.admLat.add(int64(tc.adm))
				if tc.refusals > 0 {
					g.refLat.add(int64(tc.ref))
				}
			}
			s := &surfaceRun{W: w, primary: g}
			if got := s.holdsAdmissions(); got != tc.want {
				t.Errorf("holdsAdmissions = %v, want %v (admissions %v, refusals %v)", got, tc.want, tc.adm, tc.ref)
			}
		})
	}
}
