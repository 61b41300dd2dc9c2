package attack

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/client"
)

// TestReachableFollowsNoRedirect: the reachability check follows no
// redirect, as the attack follows none: a redirect to another origin is
// named as one (never "connection refused", never a request to where it
// points), and a redirect within the target (a loop on itself included)
// is an answer.
func TestReachableFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	redirect := func(to string) string {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to, http.StatusFound)
		}))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	tests := []struct {
		name, base, want string
	}{
		{"to another host", redirect(other.URL + "/login?token=S3CRET"), `redirects to "` + other.URL + `/login?token=%5Bredacted%5D" (302)`},
		{"to a closed port", redirect("http://127.0.0.1:1/"), `redirects to "http://127.0.0.1:1/" (302)`},
		{"to another scheme", redirect("https://127.0.0.1/"), `redirects to "https://127.0.0.1/"`},
		{"a loop on itself", redirect("/"), ""},
		{"to a path", redirect("/docs"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := reachable(context.Background(), nil, "", tt.base, 5*time.Second)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("error %v, want an answer", err)
				}
				return
			}
			var re *RedirectError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "S3CRET") {
				t.Fatalf("error %v, want a *RedirectError saying %s", err, tt.want)
			}
		})
	}
	if elsewhere.Load() != 0 {
		t.Errorf("the redirects were followed: %d requests elsewhere", elsewhere.Load())
	}
}

// TestSourceErrorNamesTheLimit: a source address whose check fails says
// which limit it met: its local ports used up (EADDRINUSE, or
// EADDRNOTAVAIL on an address the routing table says is this machine's),
// or an address this machine does not route to itself, named with the
// pool's item it came from and the command that makes the item local.
func TestSourceErrorNamesTheLimit(t *testing.T) {
	t.Parallel()
	bind := func(errno syscall.Errno) error {
		return &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", errno)}
	}
	pool, err := client.ParsePool("192.0.2.70-192.0.2.80,2001:db8:9::/120")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		src   string
		pool  client.Pool
		err   error
		limit string
		says  string
	}{
		{"127.0.0.9", client.Pool{}, bind(syscall.EADDRINUSE), PortsUsedUp, "cannot send from 127.0.0.9: its local ports are used up (address already in use): this machine's own limit"},
		{"127.0.0.9", client.Pool{}, bind(syscall.EADDRNOTAVAIL), PortsUsedUp, "its local ports are used up (cannot assign requested address)"},
		{"192.0.2.77", client.Pool{}, client.ErrNotLocal, "", "cannot send from 192.0.2.77: this machine has no such address (on Linux every 127.0.0.x is local; another address must be one of this machine's, or of a prefix routed here: ip route add local 192.0.2.77/32 dev lo)"},
		{"192.0.2.77", pool, client.ErrNotLocal, "", `192.0.2.70-192.0.2.80 is not local to this machine (192.0.2.77 is not routed here): make it local with "ip route add local 192.0.2.64/27 dev lo"`},
		{"2001:db8:9::1", pool, client.ErrNotLocal, "", `2001:db8:9::/120 is not local to this machine (2001:db8:9::1 is not routed here): make it local with "ip -6 route add local 2001:db8:9::/120 dev lo"`},
	}
	for _, tt := range tests {
		err := sourceError(netip.MustParseAddr(tt.src), tt.pool, tt.err)
		if err.Limit != tt.limit || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("sourceError(%s, %v) = %q (limit %q), want limit %q saying %q", tt.src, tt.err, err, err.Limit, tt.limit, tt.says)
		}
	}
}

// TestCheckSourcesRefusesAPrefixNotLocal: a prefix this machine does not
// route to itself is refused by name before anything is sent, though a
// bind with IP_FREEBIND to its addresses would succeed; loopback
// addresses pass.
func TestCheckSourcesRefusesAPrefixNotLocal(t *testing.T) {
	t.Parallel()
	pool, err := client.ParsePool("127.0.0.5-127.0.0.6,2001:db8:9::/120")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSources(pool.Take(2), pool); err != nil {
		t.Errorf("loopback sources: %v", err)
	}
	err = checkSources(pool.Take(4), pool)
	var se *SourceError
	if !errors.As(err, &se) || se.Item != "2001:db8:9::/120" || !strings.Contains(err.Error(), "ip -6 route add local 2001:db8:9::/120 dev lo") {
		t.Errorf("checkSources = %v, want a *SourceError naming 2001:db8:9::/120 and the route to add", err)
	}
}

// TestCheckConnect: before anything is sent, one address of each item is
// connected to the target; an item of the other family than the target's
// is refused by name; a target that accepts nothing is left to the
// reachability check.
func TestCheckConnect(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	from := make(chan string, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			from <- host
			c.Close()
		}
	}()
	target := "http://" + ln.Addr().String()
	pool, err := client.ParsePool("127.0.0.5-127.0.0.6,127.0.1.0/24")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkConnect(context.Background(), target, pool.Take(20), pool, 5*time.Second); err != nil {
		t.Fatalf("checkConnect = %v", err)
	}
	for _, want := range []string{"127.0.0.5", "127.0.1.1"} {
		if got := <-from; got != want {
			t.Errorf("a connection from %s, want one from %s (the first address of each item)", got, want)
		}
	}
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	v6, _ := client.ParsePool("::1")
	var se *SourceError
	if err := checkConnect(context.Background(), ts.URL, v6.Take(1), v6, 5*time.Second); !errors.As(err, &se) || !strings.Contains(err.Error(), "an IPv6 source cannot reach the IPv4 target 127.0.0.1") {
		t.Errorf("an IPv6 source to an IPv4 target: %v", err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	if err := checkConnect(context.Background(), closed.URL, pool.Take(1), pool, 5*time.Second); err != nil {
		t.Errorf("a target that accepts nothing: %v, want nil (reachability says so)", err)
	}
}

// TestCheckConnectComparesInOneState: an address whose first connection
// failed ("no route to host", as over a link whose neighbour is not yet
// resolved) is asked once more after the system's own address was
// accepted, and passes if then accepted; one the target never accepts
// from is refused by name, having been asked twice, the own address once.
func TestCheckConnectComparesInOneState(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	target := "http://" + ln.Addr().String()
	pool, err := client.ParsePool("127.0.0.5")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}
	for _, tc := range []struct {
		name     string
		failures int // how many of 127.0.0.5's connections fail
		refused  bool
	}{
		{"settled by the own address's turn", 1, false},
		{"never accepted", 1 << 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			asked := map[string]int{}
			dial := func(ctx context.Context, src, hostPort string) (net.Conn, error) {
				mu.Lock()
				asked[src]++
				n := asked[src]
				mu.Unlock()
				if src != "" && n <= tc.failures {
					return nil, unreachable
				}
				return dialFrom(ctx, src, hostPort)
			}
			err := checkConnectWith(context.Background(), target, pool.Take(1), pool, 5*time.Second, dial)
			var se *SourceError
			switch {
			case tc.refused && (!errors.As(err, &se) || !strings.Contains(err.Error(), "accepts connections from this machine's own address but not from this one")):
				t.Errorf("checkConnect = %v, want 127.0.0.5 refused by name", err)
			case !tc.refused && err != nil:
				t.Errorf("checkConnect = %v, want nil: 127.0.0.5 was accepted when asked again", err)
			}
			if asked["127.0.0.5"] != 2 || asked[""] != 1 {
				t.Errorf("asked %v, want 127.0.0.5 twice and the own address once", asked)
			}
		})
	}
}
