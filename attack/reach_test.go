package attack

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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

// TestSourceErrorNamesTheLimit: a source address whose bind fails says
// which limit it met: its local ports used up (EADDRINUSE, or
// EADDRNOTAVAIL on an address this machine has), or an address this
// machine does not have.
func TestSourceErrorNamesTheLimit(t *testing.T) {
	bind := func(errno syscall.Errno) error {
		return &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", errno)}
	}
	tests := []struct {
		src   string
		err   error
		limit string
		says  string
	}{
		{"127.0.0.9", bind(syscall.EADDRINUSE), PortsUsedUp, "its local ports are used up (address already in use): this machine's own limit"},
		{"127.0.0.9", bind(syscall.EADDRNOTAVAIL), PortsUsedUp, "its local ports are used up (cannot assign requested address)"},
		{"192.0.2.77", bind(syscall.EADDRNOTAVAIL), "", "this machine has no such address"},
	}
	for _, tt := range tests {
		err := sourceError(tt.src, tt.err)
		if err.Limit != tt.limit || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("sourceError(%s, %v) = %q (limit %q), want limit %q saying %q", tt.src, tt.err, err, err.Limit, tt.limit, tt.says)
		}
	}
}
