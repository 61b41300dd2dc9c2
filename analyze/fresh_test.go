package analyze

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/timeline"
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

// TestFreshStartSpentOnOneSurfaceAfterAKnownRun: an earlier run (verify
// --no-wait) spent the limit address's MCP budget half a window before
// this run, its REST budget not at all. MCP's first burst is refused in
// full while REST's is admitted in full: one counter for both surfaces
// would explain that as well (REST's 240 fill it), but so does the earlier
// run the analysis is told of (Config.SentBefore), so the premise is not
// proved and nothing fails. Without SentBefore, nothing tells a shared
// counter from a spent budget the run knows nothing of, and that run is
// judged (the independence check weighs the shared counter).
func TestFreshStartSpentOnOneSurfaceAfterAKnownRun(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano() // simulatePlan's
	srv := documented(1, 0)
	log := srv.mcp.(*slidingLogSim).log
	for i := range 120 {
		log["mcp|"+srcA] = append(log["mcp|"+srcA], t0-int64(synthW)/2+int64(i))
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
			t.Errorf("blurred: %s %s, missing %q, want inconclusive naming the spent budget", s.Surface, s.Verdict, s.Missing)
		}
	}
}

// spentBefore is a limiter whose key had sent n requests half a window
// before the first request it is asked about: an earlier run's.
type spentBefore struct {
	limiter
	key  string
	n    int
	w    int64
	done bool
}

func (s *spentBefore) allow(key string, t int64) bool {
	if !s.done {
		s.done = true
		for i := range s.n {
			s.limiter.allow(s.key, t-s.w/2+int64(i))
		}
	}
	return s.limiter.allow(key, t)
}

// TestSpentOrLowerFollowUp: MCP's first burst is refused early, on a
// correct sliding log whose limit address sent 30 calls half a window
// before the run, and on one whose limit is 100 instead of 120. Nothing
// in the plan may tell them apart (on a busy host the lower limit's
// refusals a window after the start are not provably below 120), and the
// premise must not name either alone; the follow-up burst, once the run's
// own requests have aged out, must: the spent budget stays inconclusive,
// naming it as proved (on REST too), and the lower limit, which the first
// burst had in full, fails onset with nothing left unjudged and REST
// passing, on every host of the simulation and every seed.
func TestSpentOrLowerFollowUp(t *testing.T) {
	t.Parallel()
	W := int64(simW)
	truths := []struct {
		name string
		srv  func() server
		fail bool
	}{
		{"a budget spent before the run", func() server {
			return server{rest: logOf(240, W, true), mcp: &spentBefore{limiter: logOf(120, W, true), key: method.MCP + "|" + srcA, n: 30, w: W}, key: perAddress}
		}, false},
		{"a lower limit", func() server {
			return server{rest: logOf(240, W, true), mcp: logOf(100, W, true), key: perAddress}
		}, true},
	}
	seeds := 16
	if raceEnabled {
		seeds = 1
	}
	for _, tr := range truths {
		for _, host := range []struct {
			name string
			h    hostsim.Host
		}{{"quiet", hostsim.Quiet}, {"busy", hostsim.Busy}, {"loaded", hostsim.Loaded}} {
			t.Run(tr.name+"/"+host.name, func(t *testing.T) {
				t.Parallel()
				cfg := Config{Window: simW, Limits: map[string]int{method.REST: 240, method.MCP: 120}}
				undecided := 0
				defer func() { t.Logf("the plan alone left MCP undecided in %d of %d runs", undecided, seeds) }()
				for i := range seeds {
					run := func(follow map[string]timeline.Need) *Report {
						rng := rand.New(rand.NewPCG(7, uint64(i)))
						rep, err := Analyze(simulateVerify(tr.srv(), host.h, simW, rng, follow), cfg)
						if err != nil {
							t.Fatal(err)
						}
						return rep
					}
					rep := run(nil)
					follow := map[string]timeline.Need{}
					for _, n := range rep.FollowUps(simMaxUntil) {
						follow[n.Surface] = n
					}
					mcp := rep.Verdict.Surfaces[1]
					if mcp.Verdict != Fail {
						// Undecided by the plan: the premise names both
						// readings.
						undecided++
						if !strings.Contains(mcp.Missing, "either the address's budget was already spent") || !strings.Contains(mcp.Missing, "or its limit is below 120") {
							t.Fatalf("seed %d before the follow-up: mcp %s, missing %q; want both readings named", i, mcp.Verdict, mcp.Missing)
						}
					}
					// Whatever the plan proved, the follow-up is the burst
					// alone, on MCP alone: where onset failed on late
					// refusals, the first burst's may still be a spent
					// budget's, and REST's verdict rests on telling them apart.
					if n, ok := follow[method.MCP]; len(follow) != 1 || !ok || !n.AgedOut {
						t.Fatalf("seed %d: follow-ups %v; want MCP's aged-out burst alone", i, follow)
					}
					rep = run(follow)
					mcp = rep.Verdict.Surfaces[1]
					rest := rep.Verdict.Surfaces[0]
					onset := ""
					for _, c := range mcp.Checks {
						if c.Name == method.CheckOnset {
							onset = c.Verdict
						}
					}
					if tr.fail {
						// The burst met a limit of 100, which the first burst
						// had in full: no budget was spent, and both surfaces
						// are judged on the whole run.
						if mcp.Verdict != Fail || onset != Fail || mcp.Missing != "" || rest.Verdict != Pass {
							t.Errorf("seed %d: mcp %s, onset %s, missing %q; rest %s, missing %q; want onset failed, nothing missing, rest passed", i, mcp.Verdict, onset, mcp.Missing, rest.Verdict, rest.Missing)
						}
						continue
					}
					// REST's own first burst was whole; it is held to a spent
					// budget where MCP's is proved one (the address sent
					// before the run: another job may still be sending).
					if mcp.Verdict != Inconclusive || !strings.Contains(mcp.Missing, "the address's budget was already spent:") || !strings.Contains(mcp.Missing, "was admitted in full, so the limit is not lower") || rest.Verdict != Inconclusive || rest.Missing != mcp.Missing {
						t.Errorf("seed %d: mcp %s, missing %q; rest %s, missing %q; want both inconclusive, the spent budget proved", i, mcp.Verdict, mcp.Missing, rest.Verdict, rest.Missing)
					}
				}
			})
		}
	}
}
