package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFreshStartSpentOnBothSurfaces: the limit address sent a few requests
// to each surface of a correct target just before the run (an earlier run,
// another job). The first bursts are refused early on both surfaces, and
// the other surface's onset does not explain it (more was admitted on the
// two than one counter for both would admit): every check is inconclusive
// and names the spent budget, none fails.
func TestFreshStartSpentOnBothSurfaces(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano() // simulatePlan's
	for _, spent := range []int{1, 20, 60, 150} {
		t.Run(fmt.Sprint(spent), func(t *testing.T) {
			t.Parallel()
			srv := documented(1, 0)
			for key, n := range map[string]int{"rest|" + srcA: spent, "mcp|" + srcA: spent / 2} {
				log := srv.rest.(*slidingLogSim).log
				if strings.HasPrefix(key, "mcp") {
					log = srv.mcp.(*slidingLogSim).log
				}
				for i := range n {
					log[key] = append(log[key], t0-int64(time.Second)+int64(i))
				}
			}
			rep := judge(simulate(srv, quiet))
			if got := failed(rep); len(got) > 0 {
				t.Errorf("failed %v, want none: the budget was spent before the run", got)
			}
			for _, s := range rep.Verdict.Surfaces {
				if s.Verdict != Inconclusive || !strings.Contains(s.Missing, "budget was already spent") {
					t.Errorf("%s: %s, missing %q, want inconclusive naming the spent budget", s.Surface, s.Verdict, s.Missing)
				}
			}
		})
	}
}
