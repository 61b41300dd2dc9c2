package main

import (
	"bytes"
	"errors"
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

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestAttackRefusesHostileProfiles: a profile whose name would leave --out
// or carry control characters, or whose numbers are absurd, exits 2 with a
// message naming the file and line, escaped, before any request is sent
// and without writing anything. Before the fix each either wrote outside
// --out, printed the name raw, spun at 100 % CPU or waited for ever.
func TestAttackRefusesHostileProfiles(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer ts.Close()
	const stream = "streams:\n  - name: s\n    surface: rest\n    requests: [{path: /api/public/search}]\n"
	const once = "    pacer: {type: constant, rate: 1/s, count: 1}\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"name leaves --out", `name: "x/../../../escaped"` + "\npolicy: {surface: rest}\n" + stream + once,
			`hostile.yaml:1: profile name "x/../../../escaped": want 1 to 64 letters`},
		{"name with escapes", `name: "x\n\e[31mred\u202e"` + "\npolicy: {surface: rest}\n" + stream + once,
			`hostile.yaml:1: profile name "x\n\x1b[31mred\u202e"`},
		{"rate 1e18/s", "policy: {surface: rest}\n" + stream + "    pacer: {type: constant, rate: 1e18/s, duration: 1s}\n",
			"hostile.yaml:6: stream s: rate 1e+18/s is 1e+18 requests per second"},
		{"sine at 1e18/s", "policy: {surface: rest}\n" + stream + "    pacer: {type: sine, rate: 1e18/s, amplitude: 1/s, period: 1s, duration: 1s}\n",
			"hostile.yaml:6: stream s: rate 1e+18/s"},
		{"1e8/s for 60s", "policy: {surface: rest}\n" + stream + "    pacer: {type: constant, rate: 1e8/s, duration: 60s}\n",
			"hostile.yaml:6: stream s: rate 1e+08/s"},
		{"duration 1e300w", "policy: {surface: rest}\n" + stream + "    pacer: {type: constant, rate: 1/s, duration: 1e300w}\n",
			"hostile.yaml:6: stream s: duration 1e+300w is longer than 366 days"},
		{"start 1e300w", "policy: {surface: rest}\n" + stream + "    start: 1e300w\n" + once,
			"hostile.yaml:6: stream s: start 1e+300w is longer than 366 days"},
		{"probe_every 1e-300w", "policy: {surface: rest}\n" + stream + "    pacer: {type: burst-then-probe, burst: 1, probe_every: 1e-300w, until: 1w}\n",
			"hostile.yaml:6: stream s: probe_every 1e-300w is shorter than 1µs"},
		{"1e6/s for 60s: the ceiling", "policy: {surface: rest}\n" + stream + "    pacer: {type: constant, rate: 1e6/s, duration: 60s}\n",
			"sends up to 1000001 requests in one second, above the ceiling --max-rate 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "a", "b", "out")
			file := filepath.Join(dir, "hostile.yaml")
			if err := os.WriteFile(file, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCmd(t, "attack", "--profile", file, "--out", out, "--target", ts.URL)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
			if strings.ContainsAny(stdout+stderr, "\x1b\u202e") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("printed a control character or more than one line: %q", stderr)
			}
			var written []string
			filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
				if err == nil && path != dir && path != file {
					written = append(written, path)
				}
				return nil
			})
			if len(written) > 0 {
				t.Errorf("wrote %v", written)
			}
		})
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the target", hits.Load())
	}
}

// TestAnalyzeRefusesHostileResults: results read from a pipe with a length
// prefix no result can have (issue 15: it panicked or took gigabytes), a
// device with no end (/dev/zero), or a run folder whose results.bin or
// run.json links to one, exit 2 with a message naming the input, for
// analyze, report and compare alike; nothing is written.
func TestAnalyzeRefusesHostileResults(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	dir := t.TempDir()
	var good bytes.Buffer
	enc := vegeta.NewEncoder(&good)
	t0 := time.Now().Add(-time.Minute)
	for i := range 50 {
		r := vegeta.Result{Attack: "surface=rest source=127.0.0.1 stream=flood", Code: 200, Method: "GET", URL: "http://127.0.0.1/api/public/search",
			Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Latency: time.Millisecond}
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
	}
	goodFile := filepath.Join(dir, "good.bin")
	if err := os.WriteFile(goodFile, good.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// A pipe: a FIFO that a goroutine fills with the results and the
	// length prefix of issue 15, each time a command opens it.
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	hostile := append(bytes.Clone(good.Bytes()), 0xf8, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x03, 0)
	feed := func() {
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer f.Close()
			f.Write(hostile)
		}()
	}
	linked := func(name string) string {
		d := filepath.Join(dir, "linked-"+name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "results.bin"), good.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(d, name))
		if err := os.Symlink("/dev/zero", filepath.Join(d, name)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	inputs := []struct {
		name, path, want string
		pipe             bool
	}{
		{"pipe with a length of 2^62", fifo, "more than the 4194304 a result may take", true},
		{"/dev/zero", "/dev/zero", "/dev/zero: not a Vegeta results file", false},
		{"results.bin links to /dev/zero", linked("results.bin"), "results.bin: not a Vegeta results file", false},
		{"run.json links to /dev/zero", linked("run.json"), "run.json: a character device, not a regular file", false},
	}
	for _, in := range inputs {
		for _, cmd := range [][]string{{"analyze", in.path}, {"report", "--out", filepath.Join(dir, "r.html"), in.path}, {"compare", goodFile, in.path}} {
			t.Run(in.name+"/"+cmd[0], func(t *testing.T) {
				if in.pipe {
					feed()
				}
				code, stdout, stderr := runCmd(t, cmd...)
				if code != exitUsage || !strings.Contains(stderr, in.want) || !strings.Contains(stderr, in.path) {
					t.Errorf("exit %d, stderr %q, stdout %.200q; want 2 and %q", code, stderr, stdout, in.want)
				}
				if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
					t.Errorf("report wrote r.html")
				}
			})
		}
	}
}

// TestFleetAboveDescriptorLimit: a fleet that cannot fit in the process's
// descriptor limit (two per client: the embedded target runs in the same
// process) exits 2 at once, naming the limit and `ulimit -n`, never 3 "the
// target is failing" after a run that met its own limit (issue 15).
func TestFleetAboveDescriptorLimit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", `ulimit -n 1024 && exec "$0" "$@"`, os.Args[0], "fleet", "--clients", "1000", "--window", "2s", "--out", out)
	cmd.Env = append(os.Environ(), "RATECHECK_TEST_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || !strings.Contains(stderr.String(), "ulimit -n") || !strings.Contains(stderr.String(), "limit of 1024") {
		t.Fatalf("exit %v, stderr %q; want 2 naming the limit of 1024 and ulimit -n", err, stderr.String())
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("wrote %d entries", len(entries))
	}
}

// TestFewRequestsAllTimingOut: an attack of fewer requests than the
// failure guard's window, every one of which timed out, is no pass: exit
// 3, the target is failing (issue 15: it exited 0).
func TestFewRequestsAllTimingOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead { // the reachability check
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(release)
	dir := t.TempDir()
	file := filepath.Join(dir, "few.yaml")
	profile := "name: few\npolicy: {surface: rest}\nstreams:\n  - name: s\n    surface: rest\n    requests: [{path: /api/public/search}]\n    pacer: {type: constant, rate: 50/s, count: 5}\n"
	if err := os.WriteFile(file, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "attack", "--profile", file, "--out", dir, "--target", ts.URL, "--timeout", "200ms", "--window", "2s")
	if code != exitUnreachable || !strings.Contains(stderr, "all 5 results were transport errors") {
		t.Errorf("exit %d, stderr %q, stdout %q; want 3 and all 5 failed", code, stderr, stdout)
	}
}

// TestAttackMeetsDescriptorLimit: an attack that fits the estimate but
// meets the descriptor limit while it runs (a slow target makes Vegeta
// open a connection per request in flight) stops as this machine's own
// limit, exit 2, never "the target is failing", exit 3.
func TestAttackMeetsDescriptorLimit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			return
		}
		select { // hold each request: every one in flight needs a connection of its own
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(release)
	dir := t.TempDir()
	file := filepath.Join(dir, "busy.yaml")
	profile := "name: busy\npolicy: {surface: rest}\nstreams:\n  - name: s\n    surface: rest\n    requests: [{path: /api/public/search}]\n    pacer: {type: constant, rate: 400/s, duration: 2s}\n"
	if err := os.WriteFile(file, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `ulimit -n 128 && exec "$0" "$@"`, os.Args[0], "attack", "--profile", file, "--out", dir, "--target", ts.URL, "--timeout", "1s")
	cmd.Env = append(os.Environ(), "RATECHECK_TEST_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || !strings.Contains(stderr.String(), "this machine's own limit") || strings.Contains(stderr.String(), "the target is failing") {
		t.Fatalf("exit %v, stderr %q; want 2 and this machine's own limit", err, stderr.String())
	}
	t.Logf("%s", stderr.String())
}
