package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// runFleetJSON runs fleet --json with args and decodes its verdict.
func runFleetJSON(t *testing.T, args ...string) (int, jitter.Report, string) {
	t.Helper()
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, append([]string{"fleet", "--json", "--out", out}, args...)...)
	var rep jitter.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("exit %d; stdout is not the fleet JSON: %v\n%s\nstderr: %s", code, err, stdout, stderr)
	}
	matchSchema(t, "fleet.json", stdout)
	reanalyzeFleet(t, out, code, rep)
	return code, rep, stderr
}

// reanalyzeFleet checks that analyze, given the run folder a fleet wrote
// under out, judges it as fleet did: the same exit code, verdict, checks
// and waves, from run.json alone.
func reanalyzeFleet(t *testing.T, out string, code int, rep jitter.Report) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "*", "run.json"))
	if len(dirs) != 1 {
		return // the run did not get as far as a run folder
	}
	checks := func(r jitter.Report) string {
		b, _ := json.Marshal([]any{r.Verdict, r.Checks, r.Waves})
		return string(b)
	}
	dir := filepath.Dir(dirs[0])
	// The folder, and its results.bin named alone (read with the run.json
	// beside it).
	for _, path := range []string{dir, filepath.Join(dir, archive.ResultsFile)} {
		acode, stdout, stderr := runCmd(t, "analyze", "--json", path)
		var again jitter.Report
		if err := json.Unmarshal([]byte(stdout), &again); err != nil {
			t.Fatalf("analyze %s: exit %d, not the fleet JSON: %v\n%s\n%s", path, acode, err, stdout, stderr)
		}
		if acode != code || checks(again) != checks(rep) {
			t.Errorf("analyze %s judged the fleet otherwise: exit %d, want %d\n%s\nwant\n%s", path, acode, code, checks(again), checks(rep))
		}
	}
}

func checkNamed(rep jitter.Report, name string) analyze.Check {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	return analyze.Check{}
}

// runFleetShared runs fleet --json with args at the embedded target's
// default window (30 s: a host stalling for seconds still cannot let the
// budget come back before the fleet's first attempts arrive) and holds
// the experiment's premise, every first attempt refused together.
func runFleetShared(t *testing.T, args ...string) (int, jitter.Report) {
	t.Helper()
	code, rep, stderr := runFleetJSON(t, args...)
	if shared := checkNamed(rep, "shared-429"); shared.Verdict != analyze.Pass {
		t.Fatalf("%v: shared-429 %s: %s\nstderr: %s", args, shared.Verdict, shared.Detail, stderr)
	}
	return code, rep
}

// TestFleetRetryDiscipline: under injected resets and 5xx, the fleet's
// clients retry the faults, never an answer (every failure-table row is
// sent), and never more than the cap.
func TestFleetRetryDiscipline(t *testing.T) {
	t.Parallel()
	// So many faults can pass the failure guard's 50 % by chance: it is
	// not what this test is about.
	_, rep, stderr := runFleetJSON(t, "--window", "2s", "--clients", "10", "--faults", "5xx=0.2,reset=0.1", "--attempts", "3", "--abort-at", "0")
	for _, name := range []string{"retry-answers", "attempt-cap"} {
		if c := checkNamed(rep, name); c.Verdict != analyze.Pass {
			t.Errorf("%s: %s (%s)\nstderr: %s", name, c.Verdict, c.Detail, stderr)
		}
	}
	rows, err := scenario.LoadEmbedded("errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := 10*2 + len(rows.Streams); rep.AttemptsMax > 3 || rep.Requests != want {
		t.Errorf("%d requests, at most %d attempts; want %d requests (10 clients × 2 + every row) within 3", rep.Requests, rep.AttemptsMax, want)
	}
	if rep.AttemptsMean <= 1 {
		t.Errorf("%.2f attempts per request: nothing was retried although faults were injected", rep.AttemptsMean)
	}
}

func TestFleetUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "--strategy", "exponential"}, `--strategy: strategy "exponential": want full, equal, decorrelated or none`},
		{[]string{"fleet", "--clients", "1"}, "--clients must be at least 2"},
		{[]string{"fleet", "--surface", "grpc"}, `--surface "grpc": want rest or mcp`},
		{[]string{"fleet", "--faults", "5xx=2"}, "--faults:"},
		{[]string{"fleet", "--target", "http://127.0.0.1:1", "--faults", "5xx=0.1"}, "--faults configures the embedded target"},
		{[]string{"fleet", "--target", "http://127.0.0.1:1"}, "is unreachable"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code == exitOK || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestFleetUnderFaults: against a target that resets, fails and delays,
// and one that dies mid-run, fleet finishes, archives every attempt the
// target received (and every transport error), and a dying target stops
// the fleet (--abort-at) with the partial run archived.
func TestFleetUnderFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		faults   refserver.Faults
		dieAfter int64 // the target answers only this many requests (0: all)
		abortAt  string
		wantCode int
	}{
		{name: "reset, 5xx and delay", faults: refserver.Faults{Reset: 0.1, ServerError: 0.1, DelayMax: 200 * time.Millisecond}, abortAt: "0", wantCode: exitOK},
		{name: "dies mid-run", dieAfter: 100, abortAt: "50%", wantCode: exitUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := refserver.DefaultConfig()
			cfg.Window, cfg.Faults = 2*time.Second, tc.faults
			srv, err := refserver.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var received atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n := received.Add(1); tc.dieAfter > 0 && n > tc.dieAfter {
					c, _, err := w.(http.Hijacker).Hijack() // dead: no answer, ever
					if err == nil {
						c.Close()
					}
					return
				}
				srv.ServeHTTP(w, r)
			}))
			defer ts.Close()
			out := t.TempDir()
			code, stdout, stderr := runCmd(t, "fleet", "--json", "--target", ts.URL, "--window", "2s", "--clients", "10", "--attempts", "3", "--out", out, "--abort-at", tc.abortAt)
			if tc.wantCode == exitOK && code != exitOK && code != exitCheckFailed || tc.wantCode != exitOK && code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.wantCode, stdout, stderr)
			}
			if tc.wantCode == exitOK {
				matchSchema(t, "fleet.json", stdout)
			}
			rs, info := readArchive(t, onlyRun(t, out))
			faults := faultsIn(rs)
			t.Logf("the target received %d requests (and the probe, and %d of MCP negotiation); %d attempts archived, %d of them transport errors or 5xx", received.Load()-1, handshakeRequests(info), len(rs), faults)
			if got := received.Load() - 1 - handshakeRequests(info); got > int64(len(rs)) || got < int64(len(rs))-int64(faults) || faults == 0 {
				t.Errorf("%d received, %d archived with %d faults: want every received request archived, some faults", got, len(rs), faults)
			}
			if tc.dieAfter > 0 && (info["aborted"] == nil || !strings.Contains(stderr, "the target is failing")) {
				t.Errorf("run.json aborted: %v; stderr:\n%s", info["aborted"], stderr)
			}
		})
	}
}
