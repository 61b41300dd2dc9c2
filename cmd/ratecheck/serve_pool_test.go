package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeWorkerFlags: the worker-pool flags are checked together, each
// message naming the flag at fault.
func TestServeWorkerFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--workers", "0", "--service", "20ms"}, "ratecheck serve: --workers 0: want at least 1 worker, given with --service (such as 20ms or 5ms-35ms)"},
		{[]string{"--workers", "10"}, "ratecheck serve: --workers 10: want at least 1 worker, given with --service"},
		{[]string{"--workers", "-1", "--service", "20ms"}, "ratecheck serve: --workers -1: want at least 1 worker"},
		{[]string{"--workers", "10", "--service", "35ms-5ms"}, `invalid value "35ms-5ms" for flag -service: want a duration or MIN-MAX with 0 <= MIN <= MAX and MAX > 0`},
		{[]string{"--workers", "10", "--service", "0s"}, `invalid value "0s" for flag -service`},
		{[]string{"--workers", "10", "--service", "soon"}, `invalid value "soon" for flag -service`},
		{[]string{"--workers", "10", "--service", "20ms", "--queue", "-1"}, "ratecheck serve: --queue -1: want 0 or more waiting requests"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCmd(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, stderr %s\nwant exit %d and %q", code, stderr, exitUsage, tt.wantErr)
			}
		})
	}
	if code, _, stderr := runCmd(t, "serve", "-h"); code != exitOK || !strings.Contains(stderr, "Capacity: N over the mean of D") || !strings.Contains(stderr, "-workers N") {
		t.Errorf("serve -h: exit %d, lacks the worker pool:\n%s", code, stderr)
	}
}

// TestServeWorkerPool: serve with one worker and no queue says its
// capacity, holds the worker for the service time (10 s, longer than the
// test), and answers requests that find it busy 503 queue_full at once.
func TestServeWorkerPool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--quiet", "--rest-limit", "100000", "--workers", "1", "--service", "10s", "--queue", "0"}, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("serve exited %d: %s", code, stderr.String())
		}
	}()
	re := regexp.MustCompile(`listening on (http://\S+) .*1 workers, service 10s, queue 0, capacity 0.1/s\)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("serve did not announce its pool: %s%s", stdout.String(), stderr.String())
	}
	// Four requests at once: one takes the worker (and is abandoned after
	// a second, freeing it); the others find it busy, with no queue.
	// (No keep-alive: a spare connection dialled and never used would hold
	// up the server's shutdown.)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	answers := make(chan string, 4)
	for range 4 {
		go func() {
			resp, err := client.Get(base + "/api/public/search?q=pool")
			if err != nil {
				answers <- "no answer"
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var e struct{ Error struct{ Code string } }
			_ = json.Unmarshal(body, &e)
			answers <- fmt.Sprintf("%d %s", resp.StatusCode, e.Error.Code)
		}()
	}
	got := map[string]int{}
	for range 4 {
		got[<-answers]++
	}
	if got["503 queue_full"] == 0 || got["503 queue_full"]+got["no answer"] != 4 {
		t.Errorf("answers %v, want 503 queue_full for those that found the worker busy, none for the one it served", got)
	}
}
