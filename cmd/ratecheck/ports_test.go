package main

import (
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// portsEnv runs the used-up-ports tests inside a network namespace of
// their own (see TestUsedUpPorts).
const portsEnv = "RATECHECK_PORTS_NETNS"

// TestUsedUpPorts: with the local ports of one loopback source address
// used up by another holder, verify and attack from that address exit 2
// naming this machine's limit, never 3 "the target is failing" nor "no
// such address": before the run (the pre-check) and during it (the
// failure guard). The ports are used up for real, in a network namespace
// of the test's own whose ephemeral range is narrowed to 64 ports (the
// machine's range and every other process are untouched): root only.
func TestUsedUpPorts(t *testing.T) {
	t.Parallel() // the runs are in a process and a network namespace of their own
	if os.Getenv(portsEnv) != "" {
		t.Skip("inside the namespace")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	cmd := exec.Command("unshare", "--net", "sh", "-c",
		`ip link set lo up && echo "41000 41063" > /proc/sys/net/ipv4/ip_local_port_range && exec "$@"`, "sh",
		os.Args[0], "-test.run", "^TestPortsInNamespace", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), portsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "unshare failed") {
		t.Skipf("no network namespace: %s", out)
	}
	t.Logf("in the namespace:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestPortsInNamespace") {
		t.Fatalf("the tests in the namespace failed: %v", err)
	}
}

// TestPortsInNamespace is TestUsedUpPorts in its namespace.
func TestPortsInNamespace(t *testing.T) {
	if os.Getenv(portsEnv) == "" {
		t.Skip("run by TestUsedUpPorts in a network namespace")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:8080") // outside the ephemeral range
	if err != nil {
		t.Fatal(err)
	}
	srv, err := refserver.New(refserver.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Every answer closes its connection: each request needs a port.
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		srv.ServeHTTP(w, r)
	}))
	defer ln.Close()
	const target = "http://127.0.0.1:8080"
	profile := filepath.Join(t.TempDir(), "from9.yaml")
	if err := os.WriteFile(profile, []byte(`name: from9
policy: {surface: rest, limit: 100000, window: 60s}
sources: [127.0.0.9]
streams:
  - {name: steady, surface: rest, requests: [{path: /api/public/search, query: {q: a}}], pacer: {type: constant, rate: 100/s, count: 3000}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var h holder
	h.hold(t, "127.0.0.9", "127.0.0.1:8080", false)
	for _, args := range [][]string{
		{"verify", "--sources", "127.0.0.9,127.0.0.10,127.0.0.11", "--surfaces", "rest"},
		{"attack", "--profile", profile},
	} {
		t.Run(args[0]+" before the run", func(t *testing.T) {
			code, stdout, stderr := runCmd(t, append(args, "--target", target, "--out", t.TempDir())...)
			t.Logf("%s from 127.0.0.9 with its ports held: exit %d\n%s%s", args[0], code, stdout, stderr)
			if code != exitUsage || !strings.Contains(stderr, "127.0.0.9: "+attack.PortsUsedUp) || strings.Contains(stderr, "no such address") || strings.Contains(stderr, "failing") {
				t.Errorf("exit %d; want 2 saying 127.0.0.9: %s", code, attack.PortsUsedUp)
			}
		})
	}
	h.release() // closed with a reset: no port is left in TIME_WAIT
	t.Run("during the run", func(t *testing.T) {
		var h holder
		defer h.release()
		go func() { time.Sleep(500 * time.Millisecond); h.hold(t, "127.0.0.9", "127.0.0.1:8080", true) }()
		code, stdout, stderr := runCmd(t, "attack", "--profile", profile, "--target", target, "--out", t.TempDir())
		t.Logf("attack while another holder takes the ports: exit %d\n%s%s", code, stdout, stderr)
		if code != exitUsage || !strings.Contains(stderr, "this machine's own limit") || !strings.Contains(stderr, "address already in use") || strings.Contains(stderr, "target is failing") {
			t.Errorf("exit %d; want 2 naming this machine's limit (address already in use), not a failing target", code)
		}
	})
}

// holder holds connections from one source address until it has no
// local port left.
type holder struct {
	mu    sync.Mutex
	conns []net.Conn
	stop  bool
}

// hold connects from src to addr until the bind fails on used-up ports
// (at most 200 connections: the namespace's range is 64 ports); keep goes
// on taking every port that comes free until release.
func (h *holder) hold(t *testing.T, src, addr string, keep bool) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	for tries := 0; tries < 100000; tries++ {
		h.mu.Lock()
		stop, n := h.stop, len(h.conns)
		h.mu.Unlock()
		if stop || n >= 200 {
			return
		}
		c, err := d.Dial("tcp", addr)
		if err == nil {
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			continue
		}
		if !errors.Is(err, syscall.EADDRINUSE) && !errors.Is(err, syscall.EADDRNOTAVAIL) {
			if keep { // on in the background: the test may be over
				return
			}
			t.Errorf("holding the ports of %s: %v", src, err)
			return
		}
		if !keep {
			t.Logf("%d connections from %s hold its ports: %v", n, src, err)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// release closes every connection held and stops holding.
func (h *holder) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stop = true
	for _, c := range h.conns {
		_ = c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	h.conns = nil
}
