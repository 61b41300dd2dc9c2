package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// TestInterruptStopsWaitingStreams: SIGINT or SIGTERM stops an attack at
// once although a stream still waits to start (an hour on) and another
// waits behind a gate; nothing reaches the target after the signal, and
// run.json says the run was interrupted, the exit code is the signal's
// (130, 143: not 1, which says a check failed), and analyze reads what it
// archived, saying the run was interrupted. The bound on the exit is far
// above any noise and far below the hour a sleeping stream would take.
func TestInterruptStopsWaitingStreams(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			var signalled atomic.Bool
			var now, after atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if signalled.Load() {
					after.Add(1)
				}
				if r.URL.Query().Get("q") == "now" {
					now.Add(1)
				}
			}))
			defer ts.Close()
			dir := t.TempDir()
			profile := filepath.Join(dir, "late.yaml")
			err := os.WriteFile(profile, []byte(`name: late
policy: {surface: rest, limit: 240, window: 60s}
sources: [127.0.0.2]
streams:
  - {name: now, surface: rest, requests: [{path: /api/public/search, query: {q: now}}], pacer: {type: constant, rate: 100/s, count: 2}}
  - {name: later, surface: rest, start: 1w, requests: [{path: /api/public/search, query: {q: later}}], pacer: {type: constant, rate: 10/s, count: 3}}
  - {name: gated, surface: rest, after: [later], requests: [{path: /api/public/search, query: {q: gated}}], pacer: {type: constant, rate: 10/s, count: 3}}
`), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "runs")
			cmd := exec.Command(os.Args[0], "attack", "--profile", profile, "--window", "1h", "--max-duration", "3h", "--out", out, "--target", ts.URL)
			cmd.Env = append(os.Environ(), "RATECHECK_TEST_MAIN=1")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			for deadline := time.Now().Add(60 * time.Second); now.Load() < 2; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the first stream was not answered within 60 s")
				}
			}
			time.Sleep(50 * time.Millisecond) // its results archived; the others wait
			signalled.Store(true)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 20 s after %v while a stream waited an hour to start", sig)
			}
			if code, want := cmd.ProcessState.ExitCode(), signalExit(sig); code != want {
				t.Errorf("exit %d, want %d (%v)", code, want, sig)
			}
			if n := after.Load(); n != 0 {
				t.Errorf("%d requests reached the target after the signal", n)
			}
			b, err := os.ReadFile(filepath.Join(onlyRun(t, out), archive.RunFile))
			if err != nil {
				t.Fatal(err)
			}
			var info archive.RunInfo
			if err := json.Unmarshal(b, &info); err != nil {
				t.Fatal(err)
			}
			if !info.Interrupted || info.InProgress || info.Results != 2 {
				t.Errorf("run.json says interrupted %v, in progress %v, %d results; want interrupted, finished, 2", info.Interrupted, info.InProgress, info.Results)
			}
			if code, stdout, stderr := runCmd(t, "analyze", "--json", onlyRun(t, out)); code == exitUsage || !strings.Contains(stdout, `"verdict"`) ||
				!strings.Contains(stdout+stderr, "the run was interrupted (SIGINT or SIGTERM)") {
				t.Errorf("analyze of the interrupted run: exit %d, want its verdict saying the run was interrupted\n%s%s", code, stdout, stderr)
			}
		})
	}
}
