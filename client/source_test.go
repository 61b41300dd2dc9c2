package client

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSourceCheckLoopback: every loopback address is usable; a TEST-NET
// address this machine does not have is not local.
func TestSourceCheckLoopback(t *testing.T) {
	t.Parallel()
	c := NewSourceCheck()
	defer c.Close()
	for _, a := range []string{"127.0.0.1", "127.0.3.9", "::1"} {
		if err := c.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("Check(%s) = %v, want usable", a, err)
		}
	}
	if err := c.Check(netip.MustParseAddr("192.0.2.77")); !errors.Is(err, ErrNotLocal) {
		t.Errorf("Check(192.0.2.77) = %v, want ErrNotLocal", err)
	}
}

// namespaceEnv runs TestSourcesInNamespace in the namespace
// TestFreeBindPrefix makes.
const namespaceEnv = "RATECHECK_CLIENT_NETNS"

// TestFreeBindPrefix: in a network namespace of the test's own, with
// 2001:db8:2::/64 and 198.18.0.0/16 routed to the host as local and no
// address of them configured, every address of them is a usable source
// (the check asks the routing table, the dial binds with IP_FREEBIND), a
// server sees a request from the very address, and an address of a
// prefix not routed here is refused as not local though a free bind to
// it would succeed. Root only (unshare --net).
func TestFreeBindPrefix(t *testing.T) {
	t.Parallel()
	if os.Getenv(namespaceEnv) != "" {
		t.Skip("inside the namespace")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s to make a network namespace with", tool)
		}
	}
	cmd := exec.Command("unshare", "--net", "sh", "-c",
		`ip link set lo up && ip -6 route add local 2001:db8:2::/64 dev lo && ip route add local 198.18.0.0/16 dev lo && exec "$@"`, "sh",
		os.Args[0], "-test.run", "^TestSourcesInNamespace$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), namespaceEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "unshare failed") {
		t.Skipf("no network namespace: %s", out)
	}
	t.Logf("in the namespace:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSourcesInNamespace") {
		t.Fatalf("the test in the namespace failed: %v", err)
	}
}

// TestSourcesInNamespace is TestFreeBindPrefix in its namespace.
func TestSourcesInNamespace(t *testing.T) {
	if os.Getenv(namespaceEnv) == "" {
		t.Skip("run by TestFreeBindPrefix in a network namespace")
	}
	c := NewSourceCheck()
	defer c.Close()
	for _, a := range []string{"2001:db8:2::abcd", "2001:db8:2:0:ffff::1", "198.18.3.4", "198.18.255.254"} {
		if err := c.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("Check(%s) = %v, want usable", a, err)
		}
	}
	for _, a := range []string{"2001:db8:9::1", "198.19.0.1"} {
		if err := c.Check(netip.MustParseAddr(a)); !errors.Is(err, ErrNotLocal) {
			t.Errorf("Check(%s) = %v, want ErrNotLocal", a, err)
		}
	}
	for _, tt := range []struct{ listen, target, source string }{
		{"[::]:0", "2001:db8:2::1", "2001:db8:2::abcd"},
		{"0.0.0.0:0", "198.18.0.1", "198.18.7.9"},
	} {
		ln, err := net.Listen("tcp", tt.listen)
		if err != nil {
			t.Fatal(err)
		}
		seen := make(chan string, 1)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, _, _ := net.SplitHostPort(r.RemoteAddr)
			seen <- host
		})}
		go srv.Serve(ln)
		port := ln.Addr().(*net.TCPAddr).Port
		hc := (&Network{}).Client(tt.source, 5*time.Second)
		resp, err := hc.Get("http://" + net.JoinHostPort(tt.target, strconv.Itoa(port)) + "/")
		if err != nil {
			t.Errorf("from %s to %s: %v", tt.source, tt.target, err)
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := <-seen; got != tt.source {
				t.Errorf("the server saw %s, want %s", got, tt.source)
			}
		}
		srv.Close()
	}
}
