package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
)

// TestFleetNodeClientREST and TestFleetNodeClientMCP: the Node example
// (standard library only, full jitter, retrying only 429s and transport
// faults, at most 4 attempts) passes on both surfaces, judged from the
// server's records alone as the other examples are: independent full
// jitter re-collides no more than chance, no answer is retried, every
// fault is. A run the verdict says the host left inconclusive, every check
// of the clients passing, stands as that (hostSaid). A test a surface,
// not subtests, for the reason TestFleetFullJitterPasses gives.
func TestFleetNodeClientREST(t *testing.T) { testNodeClient(t, "rest") }

// TestFleetNodeClientMCP: see TestFleetNodeClientREST.
func TestFleetNodeClientMCP(t *testing.T) { testNodeClient(t, "mcp") }

// testNodeClient judges 12 copies of the Node example on surface.
func testNodeClient(t *testing.T, surface string) {
	t.Parallel()
	if raceEnabled {
		t.Skip("client processes on 2 cores, checked by the plain run")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node command here (.ci/run installs nodejs): the Node example is not run")
	}
	code, rep, stderr := runProgramsJSON(t, "node ../../examples/clients/node/full_jitter.js", "--clients", "12", "--surface", surface)
	if hostSaid(rep) {
		t.Logf("inconclusive, every check of the clients passing, for the host's sake: target %q; jitter %q", checkNamed(rep, "target").Detail, checkNamed(rep, "jitter").Detail)
		return
	}
	if rep.Verdict != analyze.Pass || code != verdictExit(analyze.Pass) {
		t.Fatalf("exit %d, verdict %s, want pass\n%+v\n%s", code, rep.Verdict, rep.Checks, stderr)
	}
	for _, name := range []string{"clients", "jitter", "retry-answers", "attempt-cap", "faults-retried"} {
		if c := checkNamed(rep, name); c.Verdict != analyze.Pass {
			t.Errorf("%s %+v, want pass", name, c)
		}
	}
	if rep.EpsilonMS < 50 || !strings.Contains(rep.EpsilonBasis, "from the data") {
		t.Errorf("ε %vms (%s), want from the data, at least 50ms", rep.EpsilonMS, rep.EpsilonBasis)
	}
}

// hostSaid says whether a run of client programs is inconclusive only
// for a reason the verdict puts on the host, every check of the clients
// themselves passing: the target stalled (a loaded host; the jitter check
// then fails no wave the stall could have gathered), or the shared 429s
// were written so far apart that the collision distance the data gives is
// as wide as the spacing of the clients' attempts, where no fleet could fail. A
// client's verdict is held whole otherwise: the jitter check's false-alarm
// rate is jitter.DefaultAlpha.
func hostSaid(rep jitter.Report) bool {
	if rep.Verdict != analyze.Inconclusive {
		return false
	}
	said := false
	for _, c := range rep.Checks {
		switch {
		case c.Name == "target" && c.Verdict == analyze.Inconclusive:
			said = true
		case c.Name == "jitter" && c.Verdict == analyze.Inconclusive && (strings.Contains(c.Detail, "so no fleet could fail here") || strings.Contains(c.Detail, "does not prove the clients at fault")):
			said = true
		case c.Verdict == analyze.Fail || c.Verdict == analyze.Inconclusive:
			return false
		}
	}
	return said
}
