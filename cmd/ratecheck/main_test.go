package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// runCmd runs the command line args and returns exit code, stdout and
// stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		wantCode int
		wantOut  string // substring of stdout
		wantErr  string // substring of stderr
	}{
		{nil, exitUsage, "", "Commands:"},
		{[]string{"help"}, exitOK, "serve", ""},
		{[]string{"--help"}, exitOK, "4 inconclusive (the run did not produce the evidence a selected check needs)", ""},
		{[]string{"help", "serve"}, exitOK, "Usage: ratecheck serve [flags]", ""},
		{[]string{"help", "nope"}, exitUsage, "", `ratecheck help: unknown command "nope" (the commands are analyze, attack,`},
		{[]string{"nope"}, exitUsage, "", `ratecheck: unknown command "nope"`},
		{[]string{"serve", "-h"}, exitOK, "", "-limiter mode"},
		{[]string{"version"}, exitOK, "ratecheck " + version, ""},
		{[]string{"serve", "--bogus"}, exitUsage, "", "flag provided but not defined: -bogus"},
		{[]string{"serve", "extra"}, exitUsage, "", `ratecheck serve: unexpected argument "extra"`},
		{[]string{"serve", "--window", "0s"}, exitUsage, "", "ratecheck serve: --window must be positive, got 0s"},
		{[]string{"serve", "--window", "soon"}, exitUsage, "", `--window "soon" is not a duration`},
		{[]string{"serve", "--rest-limit", "0"}, exitUsage, "", "--rest-limit and --mcp-limit must be at least 1, got 0 and 120"},
		{[]string{"serve", "--limiter", "leaky"}, exitUsage, "", `ratecheck serve: --limiter: unknown limiter "leaky"`},
		{[]string{"serve", "--faults", "5xx=2"}, exitUsage, "", "ratecheck serve: --faults: fault 5xx=2: want a probability between 0 and 1"},
		{[]string{"serve", "--allowed-origins", "a,,b"}, exitUsage, "", `ratecheck serve: --allowed-origins: item 2 of "a,,b" is empty`},
		{[]string{"serve", "--addr", "127.0.0.1:99999"}, exitUsage, "", "ratecheck serve: --addr 127.0.0.1:99999:"},
		{[]string{"report"}, exitUsage, "", "ratecheck report: name one run folder or results file"},
		{[]string{"compare", "a"}, exitUsage, "", "ratecheck compare: name a baseline and a run"},
		{[]string{"compare", "--max-p99-increase", "lots", "a", "b"}, exitUsage, "", `ratecheck compare: --max-p99-increase "lots": want a percentage such as 10%`},
		{[]string{"analyze", "--junit", "no/such/dir/j.xml", "x.bin"}, exitUsage, "", "ratecheck analyze: --junit no/such/dir/j.xml: no directory no/such/dir to write it in"},
		{[]string{"verify", "--junit", "no/such/dir/j.xml"}, exitUsage, "", "ratecheck verify: --junit no/such/dir/j.xml: no directory no/such/dir to write it in"},
		{[]string{"fleet", "--junit", "no/such/dir/j.xml"}, exitUsage, "", "ratecheck fleet: --junit no/such/dir/j.xml: no directory no/such/dir to write it in"},
		{[]string{"report", "no/such/run"}, exitUsage, "", "ratecheck report: stat no/such/run: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantOut, out)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, errOut)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for a command writing while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe runs "ratecheck serve" with args on a free port until the test
// ends, and returns its base URL and its stderr.
func startServe(t *testing.T, args ...string) (string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("serve exited %d: %s", code, stderr.String())
		}
	})
	re := regexp.MustCompile(`listening on (http://\S+)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], &stderr
		}
	}
	t.Fatalf("serve did not say where it listens; stderr: %s", stderr.String())
	return "", nil
}

// TestServeEndToEnd: serve admits the limit in a window and refuses the
// rest, logging each refusal. Not parallel: its five requests must fall in
// one 2s window, and beside the other tests the host stalled them longer.
func TestServeEndToEnd(t *testing.T) {
	base, logs := startServe(t, "--window", "2s", "--rest-limit", "3")
	codes := map[int]int{}
	for range 5 {
		resp, err := http.Get(base + "/api/public/search?q=rate")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[200] != 3 || codes[429] != 2 {
		t.Fatalf("codes %v, want 3 × 200 and 2 × 429", codes)
	}
	if got := strings.Count(logs.String(), "status=429 code=rate_limited"); got != 2 {
		t.Errorf("%d refusal lines logged, want 2:\n%s", got, logs)
	}
}

func TestServeQuiet(t *testing.T) {
	t.Parallel()
	base, logs := startServe(t, "--quiet")
	resp, err := http.Get(base + "/api/public/pages/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("status %d, want 404", resp.StatusCode)
	}
	if logs.String() != "" {
		t.Errorf("--quiet logged:\n%s", logs)
	}
}

// TestUnreachableTarget: a target that is not running, or accepts and never
// answers, is exit 3 with a message that says which, for every command
// that attacks, and nothing is archived. (The probe's 25 s bound is
// shortened here.)
//
// Not parallel: it shortens the package-level reachTimeout, which every
// command that attacks reads. Its subtests run in parallel with each other
// (and nothing else), after this function returns: the timeout is restored
// and the stalled listener closed in cleanups, which run after them.
func TestUnreachableTarget(t *testing.T) {
	saved := reachTimeout
	t.Cleanup(func() { reachTimeout = saved })
	reachTimeout = 500 * time.Millisecond
	stalled, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stalled.Close() })
	go func() { // accept and hold every connection, never answer
		var held []net.Conn
		for {
			c, err := stalled.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	for _, tc := range []struct{ name, url, want string }{
		{"stalled", "http://" + stalled.Addr().String(), "accepts connections but does not answer"},
		{"dead", deadURL, "connection refused: nothing listens there"},
	} {
		for _, args := range [][]string{
			{"verify", "--window", "2s"},
			{"attack", "--profile", "../../profiles/rest-limit.yaml", "--window", "2s"},
			{"fleet", "--window", "2s"},
		} {
			t.Run(tc.name+" "+args[0], func(t *testing.T) {
				t.Parallel()
				out := t.TempDir()
				code, _, stderr := runCmd(t, append(args, "--target", tc.url, "--out", out)...)
				if code != exitUnreachable || !strings.Contains(stderr, tc.want) {
					t.Errorf("exit %d, want 3, saying %q:\n%s", code, tc.want, stderr)
				}
				if entries, _ := os.ReadDir(out); len(entries) > 0 {
					t.Errorf("archived %d runs of an unreachable target", len(entries))
				}
			})
		}
	}
}

var updateGolden = flag.Bool("update", false, "rewrite testdata golden files")

// TestBadFlags: every malformed command line of testdata/bad-flags.txt is
// refused with exit 2 before anything is sent, with exactly the message in
// testdata/bad-flags.golden. Not parallel: it looks for (and removes) a
// results folder in the package's directory, which only it may touch.
func TestBadFlags(t *testing.T) {
	table, err := os.ReadFile("testdata/bad-flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, line := range strings.Split(string(table), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args := strings.Fields(line)
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "_", " ") // _ is a space inside an argument
		}
		code, stdout, stderr := runCmd(t, args...)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want 2\n%s%s", line, code, stdout, stderr)
		}
		if _, err := os.Stat("results"); err == nil {
			os.RemoveAll("results")
			t.Errorf("%s: archived a run", line)
		}
		// The first line says what is wrong (usage follows for flag errors).
		msg, _, _ := strings.Cut(stderr, "\n")
		fmt.Fprintf(&got, "%s\n  exit %d: %s\n", line, code, msg)
	}
	const golden = "testdata/bad-flags.golden"
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got.String() {
		t.Errorf("messages differ from %s (go test -run TestBadFlags -update to accept):\n%s", golden, got.String())
	}
}

// TestFlagErrorsHint: a bad flag gets its error, one line that helps (the
// flag meant, the unit a duration lacks) and where every flag is listed,
// never the whole usage that would scroll the error away.
func TestFlagErrorsHint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"verify", "--tagret", "http://127.0.0.1:1"}, []string{"ratecheck verify: flag provided but not defined: -tagret", "ratecheck verify: did you mean --target?"}},
		{[]string{"capacity", "--slo", "p99<=1s", "--max-rat", "10"}, []string{"did you mean --max-rate?"}},
		{[]string{"verify", "--window", "10"}, []string{"--window 10 has no unit (10s?)"}},
		{[]string{"serve", "--window", "soon"}, []string{`--window "soon" is not a duration: write it with its unit`}},
		{[]string{"verify", "--json=maybe"}, []string{"--json=maybe: want true or false"}},
		{[]string{"serve", "--rest-limit", "lots"}, []string{`--rest-limit "lots" is not a whole number`}},
		{[]string{"attack", "--zzzzzzz"}, []string{"flag provided but not defined: -zzzzzzz"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCmd(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			want := append(tt.want, "run 'ratecheck "+tt.args[0]+" -h' for every flag")
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "parse error") {
				t.Errorf("stderr says the flag package's \"parse error\" where it can say what is wrong:\n%s", stderr)
			}
			if strings.Contains(stderr, "Usage:") || strings.Contains(stderr, "did you mean") && tt.args[1] == "--zzzzzzz" {
				t.Errorf("stderr holds the whole usage or a far-fetched guess:\n%s", stderr)
			}
			if n := strings.Count(stderr, "\n"); n > 3 {
				t.Errorf("%d lines on stderr, want at most 3:\n%s", n, stderr)
			}
		})
	}
}
