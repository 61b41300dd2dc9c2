package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
)

// TestFleetNodeClient: the Node example (standard library only, full
// jitter, retrying only 429s and transport faults, at most 4 attempts)
// passes on both surfaces, judged from the server's records alone as the
// other examples are: independent full jitter re-collides no more than
// chance, no answer is retried, every fault is. A run the host stalled
// (the target check inconclusive, nothing else amiss) is run again, and
// so is one whose jitter alone failed (see judgePrograms).
func TestFleetNodeClient(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("client processes on 2 cores, checked by the plain run")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node command here (.ci/run installs nodejs): the Node example is not run")
	}
	for _, surface := range []string{"rest", "mcp"} {
		t.Run(surface, func(t *testing.T) {
			t.Parallel()
			code, rep, stderr := runProgramsJSON(t, "node ../../examples/clients/node/full_jitter.js", "--clients", "12", "--surface", surface)
			if hostStalled(rep) {
				t.Logf("inconclusive, every check of the clients passing: the host stalled the target (%s)", checkNamed(rep, "target").Detail)
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
		})
	}
}

// hostStalled says whether a run is inconclusive only because the target
// stalled (a loaded host), every check of the client itself passing: the
// right answer for a correct client on a host that loaded, held as such
// rather than by another run. A correct client's one run otherwise
// stands: the jitter check's false-alarm rate is jitter.DefaultAlpha.
func hostStalled(rep jitter.Report) bool {
	if rep.Verdict != analyze.Inconclusive || checkNamed(rep, "target").Verdict != analyze.Inconclusive {
		return false
	}
	for _, c := range rep.Checks {
		if c.Name != "target" && (c.Verdict == analyze.Fail || c.Verdict == analyze.Inconclusive) {
			return false
		}
	}
	return true
}
