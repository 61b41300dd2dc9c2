package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
)

// runProgramsJSON runs fleet --client-cmd cmd --json in a process of its
// own and decodes the verdict. In its own process the harness's target
// shares neither a heap nor a scheduler with the tests beside it, whose
// collections and bursts would otherwise stall it for longer than ε.
func runProgramsJSON(t *testing.T, cmd string, args ...string) (int, jitter.Report, string) {
	t.Helper()
	out := t.TempDir()
	code, stdout, stderr := runProcess(t, append([]string{"fleet", "--client-cmd", cmd, "--json", "--out", out}, args...)...)
	var rep jitter.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("exit %d; stdout is not the fleet's JSON: %v\n%s\nstderr: %s", code, err, stdout, stderr)
	}
	matchSchema(t, "fleet.json", stdout)
	reanalyzeFleet(t, out, code, rep)
	return code, rep, stderr
}

// The TestFleetClientCmd tests: client programs this project did not
// write, judged from the server's records alone. The Go example (package
// client) and the standard-library Python one with full jitter pass; one
// retrying at a fixed interval fails, re-colliding at least ten times as
// often as independent jitter would, run with 50 copies as the README
// runs it (the harness's own scripted faults never stop the run as a
// failing target); one that retries a 422 fails naming it. The Go example
// polling one URL with 5 attempts passes --attempts 5: its next request,
// the same bytes after it gave up on one, is not read as a sixth attempt.
//
// A run the verdict says the host left inconclusive (the target stalled,
// or the shared 429s written too far apart for any fleet to fail; every
// check of the clients passing) stands as that, once (hostSaid).
//
// Each is a test of its own, not a subtest: a parallel test's subtests
// queue behind every parallel test not yet started, so these runs of 10
// to 20 s came last, and the package's parallel tests waited for them.
// The 50 copies' run, the longest, is TestFleetClientCmdPythonFixedInterval
// in waits_test.go.
func TestFleetClientCmdGoExample(t *testing.T) { testClientProgram(t, "go example") }
func TestFleetClientCmdGoExamplePolls(t *testing.T) {
	testClientProgram(t, "go example polling one URL, 5 attempts")
}
func TestFleetClientCmdPythonFullJitter(t *testing.T) {
	testClientProgram(t, "python full jitter")
}
func TestFleetClientCmdPythonRetries422(t *testing.T) { testClientProgram(t, "python retries a 422") }

// clientProgram is one program the TestFleetClientCmd tests judge: its
// command line (example stands for the Go example's binary, python for
// the interpreter), the verdict it deserves, and what else to check.
type clientProgram struct {
	name, cmd string
	verdict   string
	check     func(t *testing.T, rep jitter.Report)
	args      []string
}

// Two requests per client show every check (the first request's waves,
// the pause before the next one); the fleet's five take 4 s longer.
var two = []string{"--requests", "2"}

var clientPrograms = []clientProgram{
	{"go example", "{example}", analyze.Pass, nil, two},
	{"python full jitter", "{python} ../../examples/clients/python/full_jitter.py", analyze.Pass, nil, two},
	{"python fixed interval, 50 copies", "{python} ../../examples/clients/python/fixed_interval.py", analyze.Fail, recollides, []string{"--clients", "50"}}, // as the README runs it
	{"python retries a 422", "{python} ../../examples/clients/python/retries_answers.py", analyze.Fail, func(t *testing.T, rep jitter.Report) {
		if c := checkNamed(rep, "retry-answers"); c.Verdict != analyze.Fail || !strings.Contains(c.Detail, "a 422") {
			t.Errorf("retry-answers %+v, want a failure naming the 422", c)
		}
	}, two},
	{"go example polling one URL, 5 attempts", "{example} -poll -attempts 5", analyze.Pass, func(t *testing.T, rep jitter.Report) {
		if c := checkNamed(rep, "attempt-cap"); c.Verdict != analyze.Pass || !strings.Contains(c.Detail, "within 5 attempts") {
			t.Errorf("attempt-cap %+v, want a pass within 5 attempts", c)
		}
	}, []string{"--attempts", "5", "--requests", "2"}}, // two read as one would take 10 attempts; five take 35 s
}

// goExample builds the Go example client once for the tests that run it,
// in exampleDir, which TestMain removes.
var goExample = sync.OnceValues(func() (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	if exampleDir, err = os.MkdirTemp("", "ratecheck-go-example"); err != nil {
		return "", err
	}
	example := filepath.Join(exampleDir, "client")
	if out, err := exec.Command(goBin, "build", "-o", example, "../../examples/clients/go").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the Go example: %v\n%s", err, out)
	}
	return example, nil
})

var exampleDir string

// testClientProgram judges the client program of clientPrograms named name
// with 12 copies (unless it says otherwise).
func testClientProgram(t *testing.T, name string) {
	t.Parallel()
	if raceEnabled {
		t.Skip("client processes on 2 cores, checked by the plain run")
	}
	i := slices.IndexFunc(clientPrograms, func(p clientProgram) bool { return p.name == name })
	tt := clientPrograms[i]
	cmd := tt.cmd
	if strings.HasPrefix(cmd, "{python}") {
		python := pythonInterpreter()
		if python == "" {
			t.Skip("no python3 here")
		}
		cmd = strings.Replace(cmd, "{python}", python, 1)
	}
	if strings.HasPrefix(cmd, "{example}") {
		example, err := goExample()
		if errors.Is(err, exec.ErrNotFound) {
			t.Skip("no go command to build the Go example")
		} else if err != nil {
			t.Fatal(err)
		}
		cmd = strings.Replace(cmd, "{example}", example, 1)
	}
	args := append([]string{"--clients", "12"}, tt.args...)
	code, rep, stderr := runProgramsJSON(t, cmd, args...)
	if hostSaid(rep) {
		t.Logf("inconclusive, every check of the clients passing, for the host's sake: target %q; jitter %q", checkNamed(rep, "target").Detail, checkNamed(rep, "jitter").Detail)
		return
	}
	if rep.Verdict != tt.verdict || code != verdictExit(tt.verdict) {
		t.Fatalf("exit %d, verdict %s, want %s\n%+v\n%s", code, rep.Verdict, tt.verdict, rep.Checks, stderr)
	}
	if c := checkNamed(rep, "clients"); c.Verdict != analyze.Pass {
		t.Errorf("clients %+v", c)
	}
	if rep.EpsilonMS < 50 || !strings.Contains(rep.EpsilonBasis, "from the data") {
		t.Errorf("ε %vms (%s), want from the data, at least 50ms", rep.EpsilonMS, rep.EpsilonBasis)
	}
	if tt.check != nil {
		tt.check(t, rep)
	}
}

// pythonInterpreter returns the path of the interpreter python3 runs, or
// "" where there is none. The fleet starts each client program through a
// shell, and a python3 found on PATH may be a version manager's shim (a
// shell script that finds the interpreter): through pyenv's, every start
// took about 100 ms more CPU than the interpreter's own 60 ms, and the
// 50 copies' start was a burst that delayed the tests running beside it.
func pythonInterpreter() string {
	if _, err := exec.LookPath("python3"); err != nil {
		return ""
	}
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	path := strings.TrimSpace(string(out))
	if err != nil || path == "" || strings.ContainsAny(path, " \t'\"\\$`") {
		return "python3" // not one word a shell takes as it is: the shim, then
	}
	return path
}

// runProcess runs the command line args in a process of its own (this
// test binary, as main) and returns exit code, stdout and stderr.
func runProcess(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RATECHECK_TEST_MAIN=1")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// recollides: lockstep copies re-collide past the bound independent
// jitter stays within at the fleet's false-alarm rate. (How far past it
// is the host's business: on a busy 2-core machine the interpreter's
// clients, started one after another, drift apart, and a Python fleet's
// second wave re-collided 8.9 times as often as independent draws would,
// 287 pairs against a bound of 67.) Where the wave's ε, taken from the
// data, is so coarse that independent draws would re-collide every pair
// too (a busy suite run: 1 225 of 1 225 pairs, bound 1 225), no
// re-collision can be past the bound; the lockstep must then break the
// wave's own bounds (its collisions, or its fullest ε-bin).
func recollides(t *testing.T, rep jitter.Report) {
	if len(rep.Waves) == 0 {
		t.Fatalf("no waves")
	}
	switch w := rep.Waves[0]; {
	case w.Recollided > w.RecollBound:
	case w.RecollBound >= w.Collisions && (w.Collisions > w.Bound || w.PeakBin > w.PeakBound):
		t.Logf("ε too coarse for re-collisions to tell (bound %d of %d colliding pairs): the wave broke its own bounds (collisions %d > %d or peak %d > %d)",
			w.RecollBound, w.Collisions, w.Collisions, w.Bound, w.PeakBin, w.PeakBound)
	default:
		t.Errorf("waves %+v: want more re-collisions than the bound of independent jitter", rep.Waves)
	}
	if c := checkNamed(rep, "jitter"); c.Verdict != analyze.Fail {
		t.Errorf("jitter %+v, want a failure", c)
	}
}

// TestFleetClientCmdMissing: programs that send nothing make the verdict
// inconclusive (exit 4), naming what was missing; a program's exit status
// is reported; --client-cmd refuses the flags of the fleet's own clients.
func TestFleetClientCmdMissing(t *testing.T) {
	t.Parallel()
	code, rep, _ := runProgramsJSON(t, "exit 3", "--clients", "3", "--barrier", "1s")
	if code != exitInconclusive || rep.Verdict != analyze.Inconclusive || !strings.Contains(checkNamed(rep, "clients").Detail, "none of the 3 clients sent a request") {
		t.Errorf("exit %d, verdict %s, %+v", code, rep.Verdict, rep.Checks)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "3 clients exited non-zero") {
		t.Errorf("notes %v, want the exits reported", rep.Notes)
	}
	for _, args := range [][]string{{"--target", "http://127.0.0.1:1"}, {"--strategy", "none"}} {
		code, _, stderr := runCmd(t, append([]string{"fleet", "--client-cmd", "true"}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "does not go with --client-cmd") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}
