package analyze

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/method"
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
				lim := srv.rest
				if strings.HasPrefix(key, "mcp") {
					lim = srv.mcp
				}
				for i := range n {
					if !lim.allow(key, t0-int64(time.Second)+int64(i)) {
						t.Fatalf("%s: request %d before the run refused", key, i)
					}
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

// TestFreshStartSpentOnOneSurfaceAfterAKnownRun: an earlier run (verify
// --no-wait) spent the limit address's MCP budget half a window before
// this run, its REST budget not at all. MCP's first burst is refused in
// full while REST's is admitted in full: one counter for both surfaces
// would explain that as well (REST's 240 fill it), but so does the earlier
// run the analysis is told of (Config.SentBefore), so the premise is not
// proved and nothing fails. Without SentBefore, nothing tells a shared
// counter from a spent budget the run knows nothing of: MCP's premise names
// both, and nothing is failed on its first burst's evidence either.
func TestFreshStartSpentOnOneSurfaceAfterAKnownRun(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano() // simulatePlan's
	srv := documented(1, 0)
	for i := range 120 {
		if !srv.mcp.allow("mcp|"+srcA, t0-int64(synthW)/2+int64(i)) {
			t.Fatalf("request %d before the run refused", i)
		}
	}
	in := simulate(srv, quiet)
	rep, err := Analyze(in, Config{Window: synthW, Limits: map[string]int{method.REST: 240, method.MCP: 120},
		SentBefore: time.Unix(0, t0-int64(synthW)/2+120)})
	if err != nil {
		t.Fatal(err)
	}
	if got := failed(rep); len(got) > 0 {
		t.Errorf("failed %v, want none: an earlier run known to the analysis spent the MCP budget", got)
	}
	for _, s := range rep.Verdict.Surfaces {
		if s.Verdict != Inconclusive || !strings.Contains(s.Missing, "budget was already spent") {
			t.Errorf("%s: %s, missing %q, want inconclusive naming the spent budget", s.Surface, s.Verdict, s.Missing)
		}
	}
	unknown, err := Analyze(simulate(srv2(t, t0), quiet), Config{Window: synthW, Limits: map[string]int{method.REST: 240, method.MCP: 120}})
	if err != nil {
		t.Fatal(err)
	}
	if got := failed(unknown); len(got) > 0 {
		t.Errorf("without the earlier run known: failed %v, want none: a spent budget and a shared counter explain MCP's first burst alike", got)
	}
	for _, s := range unknown.Verdict.Surfaces {
		if s.Surface == method.MCP && (s.Verdict != Inconclusive || !strings.Contains(s.Missing, "budget was already spent") || !strings.Contains(s.Missing, "share one counter")) {
			t.Errorf("without the earlier run known: mcp %s, missing %q, want inconclusive naming a spent budget and a shared counter", s.Verdict, s.Missing)
		}
	}
}

// srv2 is the documented target whose limit address spent its MCP budget
// half a window before t0 (TestFreshStartSpentOnOneSurfaceAfterAKnownRun).
func srv2(t *testing.T, t0 int64) server {
	t.Helper()
	srv := documented(1, 0)
	for i := range 120 {
		if !srv.mcp.allow("mcp|"+srcA, t0-int64(synthW)/2+int64(i)) {
			t.Fatalf("request %d before the run refused", i)
		}
	}
	return srv
}

// refuseAll is a limiter that admits nothing.
type refuseAll struct{}

func (refuseAll) allow(string, int64) bool { return false }

// TestNothingAdmittedIsNoSpentBudget: a target that refuses every request
// has its first burst refused before L were admitted, as a spent budget
// would; but probes a window after the run began, whose window no request
// sent before the run can be in and that provably held fewer than L, are
// refused too: the onset fails (the limit is not honoured) and the rest
// stays inconclusive, saying why. Where the timing proves no such probe,
// the onset stays inconclusive; a correct limiter with a spent budget
// admits again, and is never failed.
func TestNothingAdmittedIsNoSpentBudget(t *testing.T) {
	t.Parallel()
	onsetOf := func(rep *Report, surface string) Check {
		for _, s := range rep.Verdict.Surfaces {
			for _, c := range s.Checks {
				if s.Surface == surface && c.Name == "onset" {
					return c
				}
			}
		}
		return Check{}
	}
	rep := judge(simulate(server{refuseAll{}, refuseAll{}, perAddress}, quiet))
	if got := failed(rep); len(got) != 2 || got[0] != "rest/onset" || got[1] != "mcp/onset" {
		t.Errorf("failed %v, want rest/onset and mcp/onset", got)
	}
	for _, s := range rep.Verdict.Surfaces {
		if c := onsetOf(rep, s.Surface); !strings.Contains(c.Detail, "nothing was admitted in the whole run") || !strings.Contains(c.Detail, "the limit is not honoured") {
			t.Errorf("%s onset: %s", s.Surface, c.Detail)
		}
		if s.ObservedLimit == nil || *s.ObservedLimit != 0 || s.Model != familyUnknown {
			t.Errorf("%s: observed_limit %v, model %s, want 0 and unknown", s.Surface, s.ObservedLimit, s.Model)
		}
		for _, c := range s.Checks {
			if c.Name == "headers" && c.Verdict == Skip && strings.Contains(c.Detail, "nothing advertised") {
				continue // judged as in any run: what is advertised does not need a whole budget
			}
			if c.Name != "onset" && (c.Verdict != Inconclusive || c.Detail != notJudged) {
				t.Errorf("%s/%s %s: %s", s.Surface, c.Name, c.Verdict, c.Detail)
			}
		}
		if !strings.Contains(s.Missing, "which a budget spent before the run does not explain (see onset)") {
			t.Errorf("%s: missing %q, want the reason the checks were not judged, once", s.Surface, s.Missing)
		}
	}
	// Latency of a window blurs every probe: nothing is proven.
	rep = judge(simulate(server{refuseAll{}, refuseAll{}, perAddress}, func(int) time.Duration { return synthW }))
	for _, s := range rep.Verdict.Surfaces {
		if s.Verdict != Inconclusive || !strings.Contains(s.Missing, "budget was already spent") {
			t.Errorf("latency of a window: %s %s, missing %q, want inconclusive naming the spent budget", s.Surface, s.Verdict, s.Missing)
		}
	}
}
