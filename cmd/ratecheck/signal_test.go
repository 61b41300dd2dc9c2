package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signalCase is one command stopped at one point: setup returns its
// arguments and, when set, its stdin and stdout (nil: a buffer) and a
// function that returns once the child is where the signal must find it.
type signalCase struct {
	name  string
	sig   syscall.Signal
	setup func(t *testing.T) (args []string, stdin, stdout *os.File, ready func(t *testing.T, pid int, out *lockedBuffer))
}

// TestSignalEndsEveryCommand: SIGINT or SIGTERM ends every command at the
// points where it waits on something outside it (a target that does not
// answer, a barrier no client reaches, a pipe or FIFO that never delivers,
// a reader that never reads, serve running), promptly, with the signal's
// exit code. The bound is far above any noise.
func TestSignalEndsEveryCommand(t *testing.T) {
	if _, err := os.ReadFile("/proc/self/task/" + itoa(os.Getpid()) + "/wchan"); err != nil {
		t.Skipf("no /proc wchan to see where a child waits: %v", err)
	}
	for _, tc := range signalCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args, stdin, stdout, ready := tc.setup(t)
			out := &lockedBuffer{}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "RATECHECK_TEST_MAIN=1")
			cmd.Stderr = out
			if stdin != nil {
				cmd.Stdin = stdin
			}
			if stdout != nil {
				cmd.Stdout = stdout
			} else {
				cmd.Stdout = out
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			ready(t, cmd.Process.Pid, out)
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				t.Fatalf("still running 20 s after %v\n%s", tc.sig, out)
			}
			if code, want := cmd.ProcessState.ExitCode(), signalExit(tc.sig); code != want {
				t.Errorf("exit %d after %v, want %d\n%s", code, tc.sig, want, out)
			}
		})
	}
}

func signalCases() []signalCase {
	pipeCase := func(name string, sig syscall.Signal, cmdArgs func(fifo string) []string) signalCase {
		return signalCase{name, sig, func(t *testing.T) ([]string, *os.File, *os.File, func(*testing.T, int, *lockedBuffer)) {
			fifo := filepath.Join(t.TempDir(), "results.bin")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			return cmdArgs(fifo), nil, nil, blockedOn("wait_for_partner", "pipe")
		}}
	}
	return []signalCase{
		{"attack reaching a target", syscall.SIGINT, hungTarget("attack", "--profile", "../../profiles/rest-steady.yaml")},
		{"verify reaching a target", syscall.SIGTERM, hungTarget("verify", "--surfaces", "rest")},
		{"fleet at the barrier", syscall.SIGINT, func(t *testing.T) ([]string, *os.File, *os.File, func(*testing.T, int, *lockedBuffer)) {
			out := t.TempDir()
			return []string{"fleet", "--client-cmd", "sleep 600", "--clients", "2", "--barrier", "10m", "--out", out}, nil, nil,
				func(t *testing.T, _ int, log *lockedBuffer) {
					waitFor(t, log, func() bool { m, _ := filepath.Glob(filepath.Join(out, "*", "clients", "2.err")); return len(m) == 1 })
				}
		}},
		pipeCase("analyze of a FIFO", syscall.SIGINT, func(f string) []string { return []string{"analyze", f} }),
		pipeCase("report of a FIFO", syscall.SIGTERM, func(f string) []string { return []string{"report", "--out", f + ".html", f} }),
		pipeCase("compare of a FIFO", syscall.SIGINT, func(f string) []string { return []string{"compare", f, f} }),
		{"analyze of a pipe that never ends", syscall.SIGTERM, func(t *testing.T) ([]string, *os.File, *os.File, func(*testing.T, int, *lockedBuffer)) {
			r := openPipe(t, false)
			return []string{"analyze", "/dev/stdin"}, r, nil, openedStdin
		}},
		{"k8s-job writing to a reader that never reads", syscall.SIGTERM, func(t *testing.T) ([]string, *os.File, *os.File, func(*testing.T, int, *lockedBuffer)) {
			profile := filepath.Join(t.TempDir(), "big.yaml")
			b, err := os.ReadFile("../../profiles/rest-steady.yaml")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, strings.Repeat("# padding, to fill the pipe the Job is written to\n", 6000)...)
			if err := os.WriteFile(profile, b, 0o644); err != nil {
				t.Fatal(err)
			}
			w := openPipe(t, true)
			return []string{"k8s-job", "--profile", profile, "--shards", "2", "--target", "http://api.internal"}, nil, w, blockedOn("pipe")
		}},
		{"serve running", syscall.SIGTERM, func(t *testing.T) ([]string, *os.File, *os.File, func(*testing.T, int, *lockedBuffer)) {
			return []string{"serve", "--addr", "127.0.0.1:0", "--quiet"}, nil, nil, func(t *testing.T, _ int, log *lockedBuffer) {
				waitFor(t, log, func() bool { return strings.Contains(log.String(), "listening on") })
			}
		}},
	}
}

// hungTarget runs command at a target that accepts connections and never
// answers; ready once the target was asked.
func hungTarget(command string, args ...string) func(t *testing.T) ([]string, *os.File, *os.File, func(*testing.T, int, *lockedBuffer)) {
	return func(t *testing.T) ([]string, *os.File, *os.File, func(*testing.T, int, *lockedBuffer)) {
		asked := make(chan struct{}, 1)
		release := make(chan struct{})
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case asked <- struct{}{}:
			default:
			}
			<-release
		}))
		t.Cleanup(func() { close(release); ts.Close() })
		full := append([]string{command, "--target", ts.URL, "--out", t.TempDir()}, args...)
		return full, nil, nil, func(t *testing.T, _ int, log *lockedBuffer) {
			select {
			case <-asked:
			case <-time.After(60 * time.Second):
				t.Fatalf("the target was not asked within 60 s\n%s", log)
			}
		}
	}
}

// openPipe returns one end of a pipe whose other end the test holds open
// and never uses: a reader that never gets a byte, or (writer) a writer
// no one reads.
func openPipe(t *testing.T, writer bool) *os.File {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	if writer {
		return w
	}
	return r
}

// blockedOn returns once a thread of the child waits in the kernel on a
// function whose name holds one of words (/proc/PID/task/*/wchan): a read
// of a pipe, an open of a FIFO no one writes.
func blockedOn(words ...string) func(t *testing.T, pid int, log *lockedBuffer) {
	return func(t *testing.T, pid int, log *lockedBuffer) {
		waitFor(t, log, func() bool {
			chans, _ := filepath.Glob("/proc/" + itoa(pid) + "/task/*/wchan")
			for _, c := range chans {
				b, _ := os.ReadFile(c)
				for _, w := range words {
					if strings.Contains(string(b), w) {
						return true
					}
				}
			}
			return false
		})
	}
}

// openedStdin returns once the child opened its stdin by name (its
// reads of a pipe wait in the poller, not in the kernel's pipe read).
func openedStdin(t *testing.T, pid int, log *lockedBuffer) {
	fd := "/proc/" + itoa(pid) + "/fd/"
	waitFor(t, log, func() bool {
		stdin, err := os.Readlink(fd + "0")
		if err != nil {
			return false
		}
		for n := 3; n < 64; n++ {
			if l, err := os.Readlink(fd + itoa(n)); err == nil && l == stdin {
				return true
			}
		}
		return false
	})
}

// waitFor polls cond for up to 60 s.
func waitFor(t *testing.T, log *lockedBuffer, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the child did not get there within 60 s\n%s", log)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
