package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// TestMain lets a test run the command in a child process (to kill or
// interrupt it): with RATECHECK_TEST_MAIN=1 the test binary is ratecheck,
// and SIGINT and SIGTERM end it as they do main.
func TestMain(m *testing.M) {
	if os.Getenv("RATECHECK_TEST_MAIN") == "1" {
		os.Exit(runSignalled(os.Args[1:], os.Stdout, os.Stderr))
	}
	flag.Parse()
	if os.Getenv(planMatrixEnv) == "1" {
		os.Exit(runPlanMatrix())
	}
	raiseParallel()
	// The API keys examples/contracts/by-key.yaml and tiers.yaml read, as
	// a user sets them.
	for name, key := range map[string]string{"API_KEY_1": "test-key-1", "API_KEY_2": "test-key-2", "API_KEY_3": "test-key-3", "API_KEY_4": "test-key-4"} {
		if os.Getenv(name) == "" {
			os.Setenv(name, key)
		}
	}
	// The end-to-end tests serve and attack in one process, eight at a
	// time: at GOGC's default the collector took a fifth of its CPU, on a
	// machine the parallel tests keep busy. Unless GOGC says otherwise
	// the heap may grow to five times what is live (the analyze command
	// still sets its own target while it runs).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	code := m.Run()
	if exampleDir != "" {
		os.RemoveAll(exampleDir)
	}
	os.Exit(code)
}

// e2eParallel is how many parallel tests run at once unless -parallel
// says otherwise. The real-clock tests spend most of their time waiting
// out compressed windows, not computing, so go test's default, GOMAXPROCS,
// would leave them mostly one after another on a small machine.
const e2eParallel = 8

// raiseParallel sets -test.parallel to e2eParallel unless it was given.
func raiseParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(e2eParallel))
	}
}

// TestKilledRunIsRecovered: an attack killed with SIGKILL mid-run leaves a
// results.bin that analyze reads up to its last complete record, saying
// how many it recovered, never an error; at most the requests in flight
// when it died are missing from it.
func TestKilledRunIsRecovered(t *testing.T) {
	t.Parallel()
	cfg := refserver.DefaultConfig()
	cfg.Window = 4 * time.Second
	srv, err := refserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var answeredAt []int64 // when the target answered each request, Unix ns
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		mu.Lock()
		answeredAt = append(answeredAt, time.Now().UnixNano())
		mu.Unlock()
	}))
	defer ts.Close()
	out := t.TempDir()
	// rest-steady.yaml for 30 windows (120 s), not 2: the kill comes at its
	// first 8 KiB of results, and a run of minutes cannot end before it on
	// any host.
	steady, err := os.ReadFile("../../profiles/rest-steady.yaml")
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(t.TempDir(), "rest-steady-long.yaml")
	if err := os.WriteFile(profile, bytes.Replace(steady, []byte("duration: 2w"), []byte("duration: 30w"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "attack", "--profile", profile, "--window", "4s", "--out", out, "--target", ts.URL)
	cmd.Env = append(os.Environ(), "RATECHECK_TEST_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once it has archived some results.
	var results string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		matches, _ := filepath.Glob(filepath.Join(out, "*", "results.bin"))
		if len(matches) == 1 {
			if fi, err := os.Stat(matches[0]); err == nil && fi.Size() > 8<<10 {
				results = matches[0]
				break
			}
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	mu.Lock()
	answered := slices.Clone(answeredAt) // before the kill, or just after
	mu.Unlock()
	sent := int64(len(answered))
	if results == "" {
		t.Fatal("the attack archived nothing within 60 s")
	}
	dir := filepath.Dir(results)
	run, err := archive.ReadRunInfo(dir)
	switch {
	case err != nil || run == nil:
		t.Fatalf("the killed run has no readable run.json (written when it started): %v", err)
	case !run.InProgress:
		t.Errorf("the killed run's run.json says it finished")
	case run.Window() != 4*time.Second:
		t.Errorf("the killed run's run.json records the window %v, want 4s", run.Window())
	}
	in, err := analyze.Read([]string{dir})
	if err != nil {
		t.Fatalf("reading the killed run: %v", err)
	}
	fi, _ := os.Stat(results)
	t.Logf("the target answered %d requests; recovered %d results from %d bytes; %v", sent, len(in.Records), fi.Size(), in.Truncated)
	if len(in.Records) == 0 {
		t.Fatal("no result recovered")
	}
	// HEAD / is the reachability probe, not archived; the rest are
	// archived in the order they come back, a batch at a time, so what a
	// kill loses is the tail: answers that came back after the last
	// recovered one. Every request the target answered before the last
	// recovered response arrived, less the longest latency recovered
	// (an answer's way back), must be among the recovered. How many the
	// tail holds is the host's business (a stalled generator catches up
	// in a burst): on a loaded host 11 answers came back after the last
	// batch written.
	var last, longest int64
	for _, r := range in.Records {
		last, longest = max(last, r.End), max(longest, r.End-r.Start)
	}
	before := 0
	for _, at := range answered {
		if at < last-longest {
			before++
		}
	}
	if lost := sent - 1 - int64(len(in.Records)); lost < 0 || len(in.Records) < before-1 {
		t.Errorf("%d answered, %d recovered (%d lost); %d were answered before the last recovered response, less its longest latency (%v), and all of those must be recovered",
			sent-1, len(in.Records), lost, before-1, time.Duration(longest))
	}
	if len(in.Truncated) > 0 && !strings.Contains(in.Truncated[0], "complete records") {
		t.Errorf("truncation warning %q does not say how many were recovered", in.Truncated[0])
	}
	// analyze on it: a verdict (whatever it is), the warning, no usage error.
	code, stdout, stderr := runCmd(t, "analyze", "--window", "4s", dir)
	if code == exitUsage {
		t.Errorf("analyze of the killed run: exit 2\n%s%s", stdout, stderr)
	}
	// Without --window, analyze judges it with the window the run was made
	// with (run.json written at the start), not the documented 60 s, and
	// says the run did not finish.
	code, stdout, stderr = runCmd(t, "analyze", "--json", dir)
	var v struct {
		WindowMS int64 `json:"window_ms"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code == exitUsage {
		t.Fatalf("analyze --json of the killed run: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	if v.WindowMS != 4000 || !strings.Contains(stderr, "did not finish") || strings.Contains(stderr, "no run.json") {
		t.Errorf("analyze judged the killed run with window %d ms, stderr %q; want 4000 and a warning that it did not finish", v.WindowMS, stderr)
	}
	code, stdout, _ = runCmd(t, "analyze", dir)
	if first, _, _ := strings.Cut(stdout, "\n"); code == exitUsage || !strings.Contains(stdout, "window 4s") {
		t.Errorf("analyze of the killed run: exit %d, first line %q; want the window 4s", code, first)
	}
}

// TestTracebackHasNoCredential: the goroutine dump of a run stopped with
// SIGQUIT mid-attack (what a panic prints, for every goroutine) holds no
// credential value, though requests carrying two were in flight; nor does
// anything the run wrote.
func TestTracebackHasNoCredential(t *testing.T) {
	t.Parallel()
	url := startTarget(t, 2*time.Second, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Set-Cookie", "session=S3CRET")
			time.Sleep(20 * time.Millisecond) // keep requests in flight
			h.ServeHTTP(w, r)
		})
	})
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "attack", "--profile", "testdata/credentials.yaml", "--window", "8s", "--out", out,
		"--target", url, "--allow-credentials", "--header", "Authorization: Bearer S3CRET")
	cmd.Env = append(os.Environ(), "RATECHECK_TEST_MAIN=1", "GOTRACEBACK=system")
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		matches, _ := filepath.Glob(filepath.Join(out, "*", "results.bin"))
		if fi, err := os.Stat(strings.Join(matches, "")); err == nil && fi.Size() > 0 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	dump := output.String()
	if !strings.Contains(dump, "SIGQUIT") || !strings.Contains(dump, "goroutine ") {
		t.Fatalf("no goroutine dump after SIGQUIT:\n%s", dump)
	}
	t.Logf("goroutine dump: %d bytes, %d goroutines", len(dump), strings.Count(dump, "\ngoroutine "))
	if strings.Contains(dump, "S3CRET") {
		t.Errorf("the goroutine dump contains the credential")
	}
	scanForSecret(t, out, "S3CRET")
}
