package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
	"github.com/connectbyjbrh/ratecheck/internal/simrun"
	"github.com/connectbyjbrh/ratecheck/refserver"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// This file is how a verdict test is written: verify, as the command runs
// it (its flags, its plan, its timeline, its follow-up, its analysis and
// output), on a virtual clock against a simulated target on a simulated
// host (internal/simrun). Nothing waits, every run is the same every
// time, and a test holds the verdict once.

// simStart is the wall clock of the simulated world's start.
var simStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// simWorld is a simulated world at seed: a reference target configured by
// cfg (its Clock and Sleep the world's), wrapped by wrap (nil: as it is),
// on host h.
func simWorld(t testing.TB, h hostsim.Host, seed uint64, cfg refserver.Config, wrap func(http.Handler) http.Handler) *simrun.World {
	t.Helper()
	w, err := newSimWorld(h, seed, cfg, wrap)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// newSimWorld is simWorld, for a caller that is no test.
func newSimWorld(h hostsim.Host, seed uint64, cfg refserver.Config, wrap func(http.Handler) http.Handler) (*simrun.World, error) {
	rng := rand.New(rand.NewPCG(seed, 0x51a))
	clk := simrun.NewClock(simStart.Add(time.Duration(rng.Int64N(int64(time.Hour)))), time.Duration(rng.Int64N(int64(time.Hour))))
	cfg.Clock, cfg.Sleep = clk.Since, clk.Sleep
	srv, err := refserver.New(cfg)
	if err != nil {
		return nil, err
	}
	var target http.Handler = srv
	if wrap != nil {
		target = wrap(srv)
	}
	return &simrun.World{Target: target, Clock: clk, Host: h, Rand: rng}, nil
}

// simTarget is the reference target's configuration at window w,
// configured by mutate (nil: the contract's limits).
func simTarget(w time.Duration, mutate func(*refserver.Config)) refserver.Config {
	cfg := embeddedWith(w, 0, 0)
	if mutate != nil {
		mutate(&cfg)
	}
	return cfg
}

// simVerify runs verify with args in world w, its run folder under a
// temporary --out, and returns its exit code, its stdout and its stderr.
func simVerify(t *testing.T, w *simrun.World, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := verify(context.Background(), append([]string{"verify", "--out", t.TempDir()}, args...)[1:], &stdout, &stderr, simrun.Executor(w))
	return code, stdout.String(), stderr.String()
}

// simVerifyJSON runs verify --json --window window with args in world w
// and decodes its verdict, held to the schema.
func simVerifyJSON(t *testing.T, w *simrun.World, window time.Duration, args ...string) (int, verdictJSON, string) {
	t.Helper()
	code, v, stdout, stderr, err := simVerdict(w, t.TempDir(), window, args...)
	if err != nil {
		t.Fatalf("exit %d; %v\n%s\nstderr: %s", code, err, stdout, stderr)
	}
	matchSchema(t, "verdict.json", stdout)
	return code, v, stderr
}

// simVerdict runs verify --json --window window --out out with args in
// world w and decodes its verdict, for a caller that is no test. Without
// --seed in args, the run's seed (the spoof probes' order, a new one per
// run by default) is drawn from the world's randomness, so that a world
// of one seed is one run.
func simVerdict(w *simrun.World, out string, window time.Duration, args ...string) (code int, v verdictJSON, stdout, stderr string, err error) {
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--seed" || strings.HasPrefix(a, "--seed=") }) {
		args = append(args, "--seed", fmt.Sprint(w.Rand.Uint64()|1))
	}
	var o, e bytes.Buffer
	code = verify(context.Background(), append([]string{"--out", out, "--json", "--window", window.String()}, args...), &o, &e, simrun.Executor(w))
	dec := json.NewDecoder(strings.NewReader(o.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return code, v, o.String(), e.String(), fmt.Errorf("stdout is not schema-1 JSON: %v", err)
	}
	return code, v, o.String(), e.String(), nil
}

// quietAndBusy are the simulated hosts a verdict test holds a run to when
// the host should not matter: a quiet one and a busy 2-core VM.
var quietAndBusy = []struct {
	name string
	host hostsim.Host
}{{"quiet", hostsim.Quiet}, {"busy", hostsim.Busy}}

// TestSimVerifyEmbeddedPasses: the documented limiter passes, both
// families decided a sliding log counting refusals, on a quiet and a busy
// host.
func TestSimVerifyEmbeddedPasses(t *testing.T) {
	t.Parallel()
	for _, h := range quietAndBusy {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			w := simWorld(t, h.host, 1, simTarget(verifyWindow, nil), nil)
			code, v, stderr := simVerifyJSON(t, w, verifyWindow)
			if code != exitOK || v.Verdict != "pass" {
				t.Fatalf("exit %d, verdict %s, want 0 and pass\n%s", code, v.Verdict, stderr)
			}
			decidedDocumented(t, v, stderr)
		})
	}
}

// TestSimRunIsOneRun: a world of one seed is one run: verify in two
// worlds of the same seed, on a busy host (stalls, a held over request,
// gates opening late and several streams woken at once), archives the
// same results, byte for byte, and says the same verdict.
func TestSimRunIsOneRun(t *testing.T) {
	t.Parallel()
	var runs [2][]vegeta.Result
	var verdicts [2]verdictJSON
	for k := range runs {
		w := simWorld(t, hostsim.Busy, 7, simTarget(verifyWindow, nil), nil)
		out := t.TempDir()
		code, v, _, stderr, err := simVerdict(w, out, verifyWindow)
		if err != nil || code != exitOK {
			t.Fatalf("run %d: exit %d, %v\n%s", k, code, err, stderr)
		}
		runs[k], _ = readArchive(t, onlyRun(t, out))
		verdicts[k] = v
	}
	if len(runs[0]) != len(runs[1]) {
		t.Errorf("two worlds of one seed archived %d and %d results", len(runs[0]), len(runs[1]))
	}
	for i := range min(len(runs[0]), len(runs[1])) {
		a, b := runs[0][i], runs[1][i]
		if !a.Equal(b) {
			t.Errorf("two worlds of one seed archived different results, first at %d:\n%+v\n%+v", i, a, b)
			break
		}
	}
	for k := range verdicts {
		for i := range verdicts[k].Surfaces {
			verdicts[k].Surfaces[i].Checks = nil // their details name the run folder
		}
	}
	a, _ := json.Marshal(verdicts[0].Surfaces)
	b, _ := json.Marshal(verdicts[1].Surfaces)
	if !bytes.Equal(a, b) {
		t.Errorf("two worlds of one seed said different verdicts:\n%s\n%s", a, b)
	}
}

// BenchmarkSimVerify measures one run of verify on simulated time, the
// unit of the plan's confusion matrix: the simulation, the archive and
// the analysis.
func BenchmarkSimVerify(b *testing.B) {
	for b.Loop() {
		w := simWorld(b, hostsim.Quiet, 1, simTarget(planW, nil), nil)
		var stdout, stderr bytes.Buffer
		if code := verify(context.Background(), []string{"--out", b.TempDir(), "--json", "--report=false", "--window", planW.String()}, &stdout, &stderr, simrun.Executor(w)); code != exitOK {
			b.Fatalf("exit %d\n%s", code, stderr.String())
		}
	}
}
