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
			code, rep, stderr := judgePrograms(t, "node ../../examples/clients/node/full_jitter.js", true, "--clients", "12", "--surface", surface)
			if hostStalled(rep) {
				t.Skipf("the host stalled the target in 3 runs, too loaded to judge jitter: %s", checkNamed(rep, "target").Detail)
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

// judgePrograms runs client programs cmd as runProgramsJSON does, again
// while the host stalled the target (three runs at most), and, for
// programs that should pass, once more when jitter alone failed: the
// jitter check's false-alarm rate is 1 % by design, so a correct client
// fails it twice in a row once in 10 000 runs, as
// TestFleetFullPassesLockstepFails allows its own fleet.
func judgePrograms(t *testing.T, cmd string, wantPass bool, args ...string) (int, jitter.Report, string) {
	t.Helper()
	code, rep, stderr := runProgramsJSON(t, cmd, args...)
	stalls, jitterRetried := 0, false
	for {
		switch {
		case hostStalled(rep) && stalls < 2:
			stalls++
			t.Logf("inconclusive, the host's doing (%s): run again", checkNamed(rep, "target").Detail)
		case wantPass && !jitterRetried && onlyJitterFailed(rep):
			jitterRetried = true
			t.Logf("jitter alone failed (%s), as it may in 1 %% of a correct client's runs: run again", checkNamed(rep, "jitter").Detail)
		default:
			return code, rep, stderr
		}
		code, rep, stderr = runProgramsJSON(t, cmd, args...)
	}
}

// onlyJitterFailed says whether jitter is the one check that failed.
func onlyJitterFailed(rep jitter.Report) bool {
	for _, c := range rep.Checks {
		if (c.Verdict == analyze.Fail) != (c.Name == "jitter") {
			return false
		}
	}
	return rep.Verdict == analyze.Fail
}

// hostStalled says whether a run is inconclusive only because the target
// stalled (a loaded host), every check of the client itself passing.
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
