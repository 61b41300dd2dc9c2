package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSourcesNotLocal: a prefix this machine does not route to itself is
// refused by every command that sends, with exit 2 naming it and the
// command that makes it local, before anything reaches the target (with
// IP_FREEBIND a bind to it would succeed; the routing table says no).
func TestSourcesNotLocal(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(func() { // after the parallel subtests
		ts.Close()
		if n := hits.Load(); n != 0 {
			t.Errorf("the target got %d requests", n)
		}
	})
	const pool, route = "2001:db8:9::/120", `"ip -6 route add local 2001:db8:9::/120 dev lo"`
	tests := [][]string{
		{"verify", "--sources", pool},
		{"capacity", "--slo", "p99<=100ms", "--max-rate", "100", "--sources", pool},
		{"attack", "--profile", "../../profiles/rest-steady.yaml", "--sources", pool},
		{"fleet", "--sources", pool},
	}
	for _, args := range tests {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCmd(t, append(args, "--target", ts.URL, "--out", t.TempDir())...)
			want := "ratecheck " + args[0] + ": --sources: " + pool + " is not local to this machine (2001:db8:9::1 is not routed here): make it local with " + route
			if code != exitUsage || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, want)
			}
		})
	}
}

// TestSourcesIPv6Loopback: serve listens on IPv6 loopback and names its
// URL with brackets; verify reaches it from ::1 (no 127.x default for an
// IPv6 target, so no isolation: one address), gets the limit admitted and
// the requests above it refused, and fails no check; an all-IPv6 pool
// without --target gets the embedded target on [::1].
func TestSourcesIPv6Loopback(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "[::1]:0", "--quiet", "--window", verifyWindow.String()}, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("serve exited %d: %s", code, stderr.String())
		}
	}()
	re := regexp.MustCompile(`listening on (http://\[::1\]:\d+) `)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("serve --addr [::1]:0 did not say it listens on http://[::1]:PORT: %s%s", stdout.String(), stderr.String())
	}
	code, v, errOut := runVerifyJSON(t, verifyWindow, "--target", url, "--surfaces", "rest", "--checks", "limits")
	// The documented limiter passes over IPv6, decided, and the run was
	// answered and refused over IPv6.
	if v.Target != url {
		t.Fatalf("verify --target %s: exit %d, target %s\n%s", url, code, v.Target, errOut)
	}
	deservedPass(t, code, v, errOut)
	if s := v.Surfaces[0]; s.Admitted < 240 || s.Refused == 0 {
		t.Errorf("verify over IPv6: %d admitted, %d refused; want the limit's 240 admitted and refusals after", s.Admitted, s.Refused)
	}
	info := runInfo(t, v.Run)
	if len(info.Sources) != 0 || info.SourcePool != "" {
		t.Errorf("run.json sources %v, pool %q; want none (the system's choice, ::1)", info.Sources, info.SourcePool)
	}

	code, stdoutRun, errOut := runCmd(t, "attack", "--profile", "../../profiles/errors.yaml", "--sources", "::1", "--out", t.TempDir())
	if code != exitOK || !strings.Contains(errOut, "embedded reference target at http://[::1]:") {
		t.Fatalf("attack --sources ::1 without --target: exit %d, want 0 from the embedded target on [::1]\n%s%s", code, stdoutRun, errOut)
	}
	dir := regexp.MustCompile(`archived \d+ results in (\S+) `).FindStringSubmatch(stdoutRun)
	if dir == nil {
		t.Fatalf("no run folder in %s", stdoutRun)
	}
	info = runInfo(t, dir[1])
	if b, _ := json.Marshal(info.Sources); string(b) != `["::1"]` || info.SourcePool != "::1" {
		t.Errorf("run.json sources %s, pool %q; want [\"::1\"] and ::1", b, info.SourcePool)
	}
}
