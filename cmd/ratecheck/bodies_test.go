package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestBodiesKeptOnlyWhereChecked: a target that returns a token in every
// 200 body leaves no copy of it in results.bin by default, while the
// body of each refusal (the shape check reads it) is still there;
// --keep-bodies keeps the 200s' too. The results stay readable by vegeta
// report, where it is installed.
func TestBodiesKeptOnlyWhereChecked(t *testing.T) {
	t.Parallel()
	const secret, refusal = "tok_S3CRETBODY", "rate_limited"
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if n.Add(1) > 11 { // HEAD / and ten answers
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"code":"rate_limited","message":"slow down"}}`))
			return
		}
		w.Write([]byte(`{"results":[],"session":"` + secret + `"}`))
	}))
	defer ts.Close()
	profile := filepath.Join(t.TempDir(), "bodies.yaml")
	if err := os.WriteFile(profile, []byte(`name: bodies
policy: {surface: rest, limit: 10, window: 60s}
sources: [127.0.0.2]
streams:
  - {name: steady, surface: rest, requests: [{path: /api/public/search, query: {q: a}}], pacer: {type: constant, rate: 50/s, count: 20}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags      []string
		wantSecret bool
	}{{nil, false}, {[]string{"--keep-bodies"}, true}} {
		n.Store(0)
		out := t.TempDir()
		args := append([]string{"attack", "--profile", profile, "--target", ts.URL, "--out", out}, tc.flags...)
		if code, stdout, stderr := runCmd(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", tc.flags, code, stdout, stderr)
		}
		results := filepath.Join(onlyRun(t, out), "results.bin")
		b, err := os.ReadFile(results)
		if err != nil {
			t.Fatal(err)
		}
		secrets, refusals := bytes.Count(b, []byte(secret)), bytes.Count(b, []byte(refusal))
		t.Logf("%v: results.bin holds the 200s' token %d times, the refusal's code %d times", tc.flags, secrets, refusals)
		if (secrets > 0) != tc.wantSecret || secrets > 10 || refusals != 10 {
			t.Errorf("%v: the token %d times (want %v), the refusal body %d times (want 10)", tc.flags, secrets, tc.wantSecret, refusals)
		}
		if vegeta, err := exec.LookPath("vegeta"); err == nil {
			rep, err := exec.Command(vegeta, "report", results).CombinedOutput()
			if err != nil || !strings.Contains(string(rep), "Requests") || !strings.Contains(string(rep), "429:10") {
				t.Errorf("vegeta report %s: %v\n%s", results, err, rep)
			}
		}
	}
}
