package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
	"github.com/connectbyjbrh/ratecheck/internal/simrun"
)

// TestShardsMergeLikeOneMachine runs a profile with three addresses as
// three shards started at one instant, each sending from one address, then
// as one process, each against a fresh reference target, on simulated
// time. Analyzing the three archives together gives the totals of the
// shards, the requests and answers per address the target saw, the
// requests per address of the single-machine run, and its verdict: the
// same verdicts, failed checks, families and observed limits.
func TestShardsMergeLikeOneMachine(t *testing.T) {
	t.Parallel()
	type perSource map[string]map[int]int // source → status → count
	run := func(shards int) (*analyze.Report, perSource, perSource, int) {
		seen := perSource{}
		w := simWorld(t, hostsim.Quiet, 1, simTarget(4*time.Second, nil), func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
				h.ServeHTTP(rec, r)
				ip, _, _ := net.SplitHostPort(r.RemoteAddr)
				if seen[ip] == nil {
					seen[ip] = map[int]int{}
				}
				seen[ip][rec.code]++
			})
		})
		out := t.TempDir()
		var jobs []attack.Job
		var opts []attack.Options
		for i := range shards {
			args := []string{"--profile", "testdata/shards.yaml", "--window", "4s", "--target", simrun.URL, "--out", out}
			if shards > 1 {
				args = append(args, "--shard", fmt.Sprintf("%d/%d", i, shards))
			}
			o := attackOptions{headers: headerFlag{}}
			var stderr strings.Builder
			if code := parseFlags(o.flagSet(&stderr), args); code >= 0 {
				t.Fatalf("flags: exit %d\n%s", code, stderr.String())
			}
			plan, opt, code := o.prepare(&stderr)
			if code >= 0 {
				t.Fatalf("prepare: exit %d\n%s", code, stderr.String())
			}
			jobs, opts = append(jobs, plan), append(opts, opt)
		}
		runs, errs := simrun.Execute(context.Background(), w, jobs, opts)
		var dirs []string
		sum := 0
		for i, r := range runs {
			if errs[i] != nil {
				t.Fatalf("shard %d: %v", i, errs[i])
			}
			dirs = append(dirs, r.Dir)
			sum += r.Results
		}
		in, err := analyze.Read(dirs)
		if err != nil {
			t.Fatal(err)
		}
		archived := perSource{}
		for i := range in.Records {
			r := &in.Records[i]
			src := in.Tables().Labels(r).Source
			if archived[src] == nil {
				archived[src] = map[int]int{}
			}
			archived[src][int(r.Code)]++
		}
		rep, err := analyze.Analyze(in, analysisConfig(&in.Meta, 0, 240, 120, nil, dirs[0]))
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Records) != sum {
			t.Errorf("%d records merged from archives holding %d", len(in.Records), sum)
		}
		return rep, archived, seen, sum
	}

	one, oneSources, _, oneN := run(1)
	merged, sources, seen, n := run(3)
	if n != oneN || len(sources) != 3 {
		t.Errorf("three shards sent %d requests from %d addresses; one machine %d from 3", n, len(sources), oneN)
	}
	// Per address the shards archived every answer the target gave, and
	// sent what one machine sent.
	total := func(codes map[int]int) (n int) {
		for _, c := range codes {
			n += c
		}
		return n
	}
	for src, codes := range sources {
		for code, c := range codes {
			if seen[src][code] != c {
				t.Errorf("%s, status %d: %d archived by the shards, the target answered %d", src, code, c, seen[src][code])
			}
		}
		if a, b := total(codes), total(oneSources[src]); a != b {
			t.Errorf("%s: the shards sent %d requests, one machine %d", src, a, b)
		}
	}
	if len(merged.Notes) != 1 || !strings.Contains(merged.Notes[0], "merged 3 shards of shards") {
		t.Errorf("notes %q: want the merge of 3 shards and their skew", merged.Notes)
	}
	if a, b := verdictSummary(one), verdictSummary(merged); a != b {
		t.Errorf("verdicts differ:\none machine:  %s\nthree shards: %s", a, b)
	}
}

// TestShardProcessesMerge: an attack split over three processes, each a
// shard started at one agreed instant (--start-at) sending from its own
// address, archives three folders that analyze reads as one run: every
// answer the target gave to each address is archived once, and the merge
// is noted. The verdicts of a merge are TestShardsMergeLikeOneMachine's.
func TestShardProcessesMerge(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]map[int]int{}
	url := startTarget(t, 4*time.Second, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
			h.ServeHTTP(rec, r)
			if !strings.HasPrefix(r.URL.Path, "/api/public/") {
				return // each shard's reachability check
			}
			ip, _, _ := net.SplitHostPort(r.RemoteAddr)
			mu.Lock()
			if seen[ip] == nil {
				seen[ip] = map[int]int{}
			}
			seen[ip][rec.code]++
			mu.Unlock()
		})
	})
	out := t.TempDir()
	args := []string{"attack", "--profile", "testdata/shards.yaml", "--window", "4s", "--target", url, "--out", out}
	at := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	var cmds []*exec.Cmd
	var logs []*strings.Builder
	for i := range 3 {
		cmd := exec.Command(os.Args[0], append(args, "--shard", fmt.Sprintf("%d/3", i), "--start-at", at)...)
		cmd.Env = append(os.Environ(), "RATECHECK_TEST_MAIN=1")
		var log strings.Builder
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, logs = append(cmds, cmd), append(logs, &log)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, logs[i])
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(dirs) != 3 {
		t.Fatalf("%d run folders, want 3: %v", len(dirs), dirs)
	}
	in, err := analyze.Read(dirs)
	if err != nil {
		t.Fatal(err)
	}
	archived := map[string]map[int]int{}
	for i := range in.Records {
		r := &in.Records[i]
		src := in.Tables().Labels(r).Source
		if archived[src] == nil {
			archived[src] = map[int]int{}
		}
		archived[src][int(r.Code)]++
	}
	mu.Lock()
	defer mu.Unlock()
	if len(archived) != 3 || len(seen) != 3 {
		t.Errorf("archived from %d addresses, the target saw %d: want 3 each", len(archived), len(seen))
	}
	for src, codes := range seen {
		for code, c := range codes {
			if archived[src][code] != c {
				t.Errorf("%s, status %d: the target answered %d, the shards archived %d", src, code, c, archived[src][code])
			}
		}
	}
	rep, err := analyze.Analyze(in, analysisConfig(&in.Meta, 0, 240, 120, nil, dirs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "merged 3 shards of shards") {
		t.Errorf("notes %q: want the merge of 3 shards and their skew", rep.Notes)
	}
}

// verdictSummary is what must agree between two runs of one profile: the
// verdicts, which checks failed and, per surface, the limiter family and
// the observed limit. Whether a check that did not fail passed or was
// skipped depends on how much timing evidence a run happened to gather,
// and evidence texts carry timings.
func verdictSummary(rep *analyze.Report) string {
	var b strings.Builder
	b.WriteString(rep.Verdict.Verdict)
	for _, s := range rep.Verdict.Surfaces {
		fmt.Fprintf(&b, " %s:%s:%s", s.Surface, s.Verdict, s.Model)
		if s.ObservedLimit != nil {
			fmt.Fprintf(&b, ":%d", *s.ObservedLimit)
		}
		for _, c := range s.Checks {
			if c.Verdict == analyze.Fail {
				fmt.Fprintf(&b, " %s=fail", c.Name)
			}
		}
	}
	return b.String()
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) { r.code = code; r.ResponseWriter.WriteHeader(code) }
