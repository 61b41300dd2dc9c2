//go:build !race

// The contract's real-clock runs against limiters this project did not
// write, in processes of their own or in this one: timing that the race
// detector would slow several times over, so they are built without it.

package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/httprate"
)

// startExpress installs express and express-rate-limit (npm, from the
// registry) into a directory of the test's and runs
// testdata/express/server.js there with env, returning its address. Node
// and npm are what .ci/run installs: without them the test fails, saying
// what to install.
func startExpress(t *testing.T, env ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("no node here: apt-get install nodejs npm (.ci/run does)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("no npm here: apt-get install npm (.ci/run does)")
	}
	dir := t.TempDir()
	install := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefer-offline", "--prefix", dir, "express@4.21.2", "express-rate-limit@7.5.1")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install of express-rate-limit from the registry: %v\n%s", err, out)
	}
	server, err := os.ReadFile(filepath.Join("testdata", "express", "server.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.js"), server, 0o644); err != nil {
		t.Fatal(err)
	}
	return "http://" + startOnFreePort(t, "express", func(listen string) *exec.Cmd {
		cmd := exec.Command(node, "server.js")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), append([]string{"LISTEN=" + listen}, env...)...)
		return cmd
	})
}

// TestVerifyContractTiersAgainstExpressRateLimit: express-rate-limit (7.5)
// keyed on the X-Api-Key header by its keyGenerator, with its limit a
// function of the key's tier (testdata/express/server.js), held to
// testdata/verify-contract/tiers-express.yaml: 120 a window for a free
// key, 240 for a paid one, a fixed window. Its default store (MemoryStore,
// dist/index.cjs) counts every hit of a key in a window opened at the
// key's first hit that resets windowMs later: a fixed window. With the
// matching contract the run passes, each tier's onset, isolation (the
// key, not the address, is counted) and fixed window; with one saying the
// paid tier has 300, search:paid fails onset: its refusals began after
// 240, and the fixed window of 300 it documents does not fit.
func TestVerifyContractTiersAgainstExpressRateLimit(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "verify-contract", "tiers-express.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(t.TempDir(), "tiers-paid-300.yaml")
	if err := os.WriteFile(wrong, []byte(strings.Replace(string(data), "paid: 240", "paid: 300", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		failing    string // the check that must fail ("": none)
	}{
		{"the tiers' quotas", file, ""},
		{"paid said to be 300", wrong, "search:paid/onset"},
	} {
		// One after the other: node's single thread answering a run's
		// bursts is slow enough (p99 a third of a second with two at
		// once) that two runs beside each other leave the family open.
		t.Run(tc.name, func(t *testing.T) {
			// A limiter of its own: the runs send the same keys.
			addr := startExpress(t, fmt.Sprintf("WINDOW_MS=%d", verifyWindow.Milliseconds()), "FREE_LIMIT=120", "PAID_LIMIT=240",
				"PAID_KEYS="+os.Getenv("API_KEY_3")+","+os.Getenv("API_KEY_4"))
			code, v, stderr := runVerifyJSON(t, verifyWindow, "--target", addr, "--contract", tc.file)
			if len(v.Surfaces) != 2 || v.Surfaces[0].Surface != "search:free" || v.Surfaces[1].Surface != "search:paid" {
				t.Fatalf("exit %d, verdict %s, %d surfaces; want search:free and search:paid\n%s", code, v.Verdict, len(v.Surfaces), stderr)
			}
			for _, s := range v.Surfaces {
				if verdict, detail := checkOf(v, s.Surface, "isolation"); verdict != "pass" {
					t.Errorf("%s/isolation: %s, want pass (keyed on the header): %s", s.Surface, verdict, detail)
				}
			}
			if tc.failing != "" {
				if code != exitCheckFailed || !slices.Contains(failing(v), tc.failing) {
					t.Errorf("exit %d, failing %v; want 1 with %s among them\n%s", code, failing(v), tc.failing, surfacesSaid(v))
				}
				if verdict, detail := checkOf(v, "search:free", "onset"); verdict != "pass" {
					t.Errorf("search:free/onset: %s, want pass (the tier's quota): %s", verdict, detail)
				}
				return
			}
			passesAsDocumented(t, code, v, "fixed-window")
		})
	}
}

// TestVerifyContractByKeyAgainstHttprate: httprate keyed on the X-Api-Key
// header (LimitBy with a key function reading it: "a custom key function
// to rate-limit by any request attribute", its README), 240 a window,
// refused with the contract's 429. With the contract that counts by the
// header (testdata/verify-contract/search-by-key.yaml, documenting
// httprate's sliding-window counter: its README's "sliding window
// counter" pattern) the run passes: isolation proving key-2 from the
// limit address has a budget of its own and key-1 from a second address
// shares key-1's, rolling the counter decided. With the same contract
// saying client-address, key-1 from the second address shares the first's
// budget and isolation fails.
func TestVerifyContractByKeyAgainstHttprate(t *testing.T) {
	t.Parallel()
	window := verifyWindow
	for _, tc := range byKeyContracts(t, "sliding-window-counter") {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A limiter of its own: the runs send the same keys.
			limit := httprate.LimitBy(240, window, func(r *http.Request) (string, error) { return r.Header.Get("X-Api-Key"), nil }, httprate.WithLimitHandler(contract429))
			target := httptest.NewServer(limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"ok":true}`))
			})))
			t.Cleanup(target.Close)
			tc.hold(t, window, target.URL)
		})
	}
}
