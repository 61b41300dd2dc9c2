package attack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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
			err := Reachable(context.Background(), nil, tt.base, 5*time.Second)
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
