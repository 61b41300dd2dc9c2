package analyze

import (
	"cmp"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
)

func summary(p99 float64, limit int, model, verdict string) RunSummary {
	return RunSummary{Run: "results/x", Verdict: verdict, Surfaces: []SurfaceSummary{
		{Surface: "rest", Requests: 566, Rate: 80, Throughput: 37, P50MS: 0.2, P95MS: 1, P99MS: clock.Millis(p99), MaxMS: 3, ObservedLimit: &limit, Model: model, ModelDecided: true, Verdict: verdict},
	}}
}

// surfaceOfRun summarizes a run's latencies as Summarize does.
func surfaceOfRun(lat, sent []time.Duration) SurfaceSummary {
	s := slices.Clone(lat)
	slices.Sort(s)
	limit := 240
	at := func(q float64) clock.Millis { return clock.Ms(s[min(max(int(float64(len(s))*q+0.5)-1, 0), len(s)-1)]) }
	rate := float64(len(lat)) / max(sent[len(sent)-1].Seconds(), 1e-3)
	return SurfaceSummary{Surface: "rest", Requests: len(lat), Rate: rate, Throughput: rate * 240 / float64(len(lat)),
		P50MS: at(0.5), P95MS: at(0.95), P99MS: clock.Ms(p99(s)), MaxMS: clock.Ms(s[len(s)-1]),
		ObservedLimit: &limit, Model: "sliding-log", ModelDecided: true, Verdict: "pass", Latencies: lat, Sent: sent}
}

// pairOf is a baseline and a run of one surface.
func pairOf(base, baseSent, run, runSent []time.Duration) (RunSummary, RunSummary) {
	return RunSummary{Run: "base", Verdict: "pass", Surfaces: []SurfaceSummary{surfaceOfRun(base, baseSent)}},
		RunSummary{Run: "run", Verdict: "pass", Surfaces: []SurfaceSummary{surfaceOfRun(run, runSent)}}
}

var defaults = CompareOptions{MaxP99Increase: 0.10, P99Floor: time.Millisecond}

// outcome is one pair's judgement.
type outcome struct {
	flagged           bool
	ratio, baselineMS float64
}

// judgePairs compares pairs of runs of n latencies drawn from base and run
// (pair i from seed i), on every core, as Compare judges a p99.
func judgePairs(pairs, n int, base, run hostsim.Host) []outcome {
	out := make([]outcome, pairs)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				rng := rand.New(rand.NewPCG(uint64(i), uint64(n)))
				bl, bs := base.Run(rng, n)
				rl, rs := run.Run(rng, n)
				b, r := pairOf(bl, bs, rl, rs)
				ch := judgeP99(b.Surfaces[0], r.Surfaces[0], defaults, false) // Compare's judgement, without the interval
				out[i] = outcome{ch.Regressed, ch.Ratio, float64(ch.BaselineMS)}
			}
		})
	}
	for i := range pairs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// summary counts the flagged pairs and describes the pairs.
func describeOutcomes(out []outcome) (flagged int, text string) {
	var ratios, p99s []float64
	for _, o := range out {
		if o.flagged {
			flagged++
		}
		ratios, p99s = append(ratios, o.ratio), append(p99s, o.baselineMS)
	}
	slices.Sort(ratios)
	slices.Sort(p99s)
	q := func(xs []float64, p float64) float64 { return xs[min(int(p*float64(len(xs))), len(xs)-1)] }
	return flagged, fmt.Sprintf("%d of %d flagged; p99 ratio run/baseline from %.2f to %.2f (1st–99th percentile %.2f–%.2f); baseline p99 median %.2f ms, 90th %.2f ms, max %.1f ms",
		flagged, len(out), ratios[0], ratios[len(ratios)-1], q(ratios, 0.01), q(ratios, 0.99), q(p99s, 0.5), q(p99s, 0.9), p99s[len(p99s)-1])
}

// aaPairs, when set, is the number of A/A pairs TestCompareAA judges of
// each verify-sized case (and half as many of 5000 requests);
// -compare.aa.pairs 2000 judges the 5000 of docs/compare.md.
var aaPairs = flag.Int("compare.aa.pairs", 0, "A/A pairs of each verify-sized case of TestCompareAA, half as many of 5000 requests (0: the suite's 600)")

// TestCompareAA: two runs of one build against one target (an A/A pair)
// are flagged in at most 1 % of pairs, though their p99s differ widely:
// synthetic pairs with a heavy-tailed body and stalls of the host, about
// 560 latencies under 10 ms as a verify run has, and 5000. The suite
// judges 600, 600 and 300 pairs (at most 6, 6 and 3 flagged; 0, 2 and 0
// are: pairs 466 and 489 of the busy host), -compare.aa.pairs sets how
// many (at 2000, 2000 and 1000: 0, 3 and 0 flagged).
func TestCompareAA(t *testing.T) {
	t.Parallel()
	pairs := cmp.Or(*aaPairs, 600)
	tests := []struct {
		name     string
		h        hostsim.Host
		n, pairs int
	}{
		{"verify, quiet host", hostsim.Quiet, 560, pairs},
		{"verify, busy host", hostsim.Busy, 560, pairs},
		{"5000 at a constant rate, busy host", hostsim.Steady(hostsim.Busy), 5000, pairs / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := judgePairs(tt.pairs, tt.n, tt.h, tt.h)
			n, text := describeOutcomes(out)
			t.Log(text)
			if n*100 > tt.pairs {
				t.Errorf("%d of %d A/A pairs flagged, want at most 1 %%", n, tt.pairs)
			}
			if slices.MaxFunc(out, func(a, b outcome) int { return cmp.Compare(a.ratio, b.ratio) }).ratio < 1.5 {
				t.Errorf("no A/A pair's p99 ratio reaches 1.5: the pairs are too tame to show anything")
			}
		})
	}
}

// TestCompareFindsRegression: a target that adds 20–40 ms to every answer
// (serve --faults delay=20ms-40ms) is flagged in every pair whose
// baseline's p99 is below 20 ms (on a busy host, a baseline that froze is
// slower than that, and no rise shows against it); so is a build twice as
// slow on every answer, over 5000 requests at a constant rate. (Over a
// verify run the p99 is a handful of requests of its bursts: a build twice
// as slow doubles it, as chance alone may on a busy host, and is not told
// apart from it; TestCompareAA's ratios show the spread.)
func TestCompareFindsRegression(t *testing.T) {
	t.Parallel()
	delayed := func(h hostsim.Host) hostsim.Host { h.AddLo, h.Add = 20*time.Millisecond, 40*time.Millisecond; return h }
	// A constant-rate run with a p99 of about 4 ms, then twice as slow.
	ms := hostsim.Steady(hostsim.Quiet)
	ms.Median = time.Millisecond
	twice := ms
	twice.Median *= 2
	tests := []struct {
		name      string
		base, run hostsim.Host
		n, pairs  int
	}{
		{"delay 20–40 ms, quiet", hostsim.Quiet, delayed(hostsim.Quiet), 560, 300},
		{"delay 20–40 ms, busy", hostsim.Busy, delayed(hostsim.Busy), 560, 300},
		{"delay 20–40 ms, busy, 5000 at a constant rate", hostsim.Steady(hostsim.Busy), delayed(hostsim.Steady(hostsim.Busy)), 5000, 100},
		{"twice as slow, quiet, 5000 at a constant rate", ms, twice, 5000, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := judgePairs(tt.pairs, tt.n, tt.base, tt.run)
			_, text := describeOutcomes(out)
			t.Log(text)
			for i, o := range out {
				if !o.flagged && o.baselineMS < 20 {
					t.Errorf("pair %d: p99 ratio %.2f against a baseline p99 of %.2f ms not flagged", i, o.ratio, o.baselineMS)
				}
			}
		})
	}
}

// TestCompare: each kind of regression, the exact ones and the p99's.
func TestCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base, baseSent := hostsim.Quiet.Run(rng, 560)
	again, againSent := hostsim.Quiet.Run(rng, 560)
	delayed := hostsim.Quiet
	delayed.AddLo, delayed.Add = 20*time.Millisecond, 40*time.Millisecond
	slow, slowSent := delayed.Run(rng, 560)
	// A fast target whose every answer came 0.3 ms later: a sure rise of
	// a sub-millisecond p99, by far more than 10 %, by less than 1 ms.
	fast := hostsim.Host{Median: 200 * time.Microsecond, Sigma: 0.3}
	fastBase, fastSent := fast.Run(rng, 560)
	subMS := make([]time.Duration, len(fastBase))
	for i, d := range fastBase {
		subMS[i] = d + 300*time.Microsecond
	}
	sb, _ := pairOf(base, baseSent, base, baseSent)
	fb, _ := pairOf(fastBase, fastSent, fastBase, fastSent)
	runOf := func(lat, sent []time.Duration) RunSummary { _, r := pairOf(lat, sent, lat, sent); return r }
	tests := []struct {
		name string
		base RunSummary
		run  RunSummary
		want []string // substrings of the regressions, in order
		note string   // a substring of the notes
	}{
		{"same", summary(2, 240, "sliding-log", "pass"), summary(2, 240, "sliding-log", "pass"), nil, ""},
		{"no latencies, p99 within 10%", summary(2, 240, "sliding-log", "pass"), summary(2.19, 240, "sliding-log", "pass"), nil, ""},
		{"no latencies, p99 up 50%", summary(2, 240, "sliding-log", "pass"), summary(3, 240, "sliding-log", "pass"), []string{"rest: p99 2.00 ms → 3.00 ms (+50%, above 1.10)"}, ""},
		{"limit 241", summary(2, 240, "sliding-log", "pass"), summary(2, 241, "sliding-log", "pass"), []string{"rest: observed limit 240 → 241"}, ""},
		{"fixed window, failing", summary(2, 240, "sliding-log", "pass"), summary(2, 240, "fixed-window", "fail"), []string{"verdict pass → fail", "rest: verdict pass → fail", "rest: model sliding-log → fixed-window"}, ""},
		{"A/A", sb, runOf(again, againSent), nil, ""},
		{"delay 20–40 ms", sb, runOf(slow, slowSent), []string{"% interval of the ratio"}, ""},
		{"sub-millisecond", fb, runOf(subMS, fastSent), nil, "a rise of less than 1ms does not count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.base, tt.run, defaults)
			if len(c.Regressions) != len(tt.want) {
				t.Fatalf("regressions %q, want %q (p99 %+v)", c.Regressions, tt.want, c.P99)
			}
			for i, w := range tt.want {
				if !strings.Contains(c.Regressions[i], w) {
					t.Errorf("regression %d %q, want %q", i, c.Regressions[i], w)
				}
			}
			if tt.note != "" && !strings.Contains(strings.Join(c.Notes, "\n"), tt.note) {
				t.Errorf("notes %q, want %q", c.Notes, tt.note)
			}
			if want := map[bool]string{true: "pass", false: "fail"}[len(tt.want) == 0]; c.Verdict != want || len(c.Incomparable) != 0 {
				t.Errorf("verdict %s, want %s (incomparable %q)", c.Verdict, want, c.Incomparable)
			}
		})
	}
}

// TestCompareUnlike: runs that differ in kind, window, surfaces or target
// are not comparable: their differences are notes, never regressions,
// and the verdict says so. Two runs of the embedded target (each on a
// port of its own) and a results file without run.json (no kind) are
// comparable.
func TestCompareUnlike(t *testing.T) {
	made := func(kind string, windowMS int64, target string, embedded bool, s RunSummary) RunSummary {
		s.Kind, s.WindowMS, s.Target, s.EmbeddedTarget = kind, clock.Millis(windowMS), target, embedded
		return s
	}
	verify := made("verify", 6000, "http://127.0.0.1:34283", true, summary(2, 240, "sliding-log", "pass"))
	verify.Contract = "built-in"
	tests := []struct {
		name string
		run  RunSummary
		want []string // the differences, in order
		note string   // a regression turned note
	}{
		{"another embedded run", made("verify", 6000, "http://127.0.0.1:45343", true, summary(2, 240, "sliding-log", "pass")), nil, ""},
		{"no run.json", made("", 6000, "http://127.0.0.1:45343", true, summary(2, 240, "sliding-log", "pass")), nil, ""},
		{"fleet", made("fleet", 30000, "http://127.0.0.1:45343", true, summary(9, 240, "unknown", "inconclusive")),
			[]string{"kind verify → fleet", "window 6s → 30s"}, "not a regression, the runs are not comparable: verdict pass → inconclusive"},
		{"attack", made("attack", 6000, "http://127.0.0.1:1", true, summary(2, 240, "sliding-log", "pass")), []string{"kind verify → attack"}, ""},
		{"staging", made("verify", 6000, "https://staging.example", false, summary(2, 241, "sliding-log", "pass")),
			[]string{"target the embedded target → https://staging.example"}, "observed limit 240 → 241"},
		{"rest only", made("verify", 6000, "", true, RunSummary{Run: "results/y", Verdict: "pass"}), []string{"surfaces rest → none"}, "rest: not in the run"},
		{"another contract", func() RunSummary {
			s := made("verify", 6000, "http://127.0.0.1:45343", true, summary(2, 100, "sliding-log", "pass"))
			s.Contract = "my-api.yaml@3f2a9c01b7de"
			return s
		}(), []string{"contract built-in → my-api.yaml@3f2a9c01b7de"}, "observed limit 240 → 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(verify, tt.run, defaults)
			if !slices.Equal(c.Incomparable, tt.want) && len(c.Incomparable)+len(tt.want) > 0 {
				t.Errorf("incomparable %q, want %q", c.Incomparable, tt.want)
			}
			want := map[bool]string{true: "pass", false: Incomparable}[len(tt.want) == 0]
			if c.Verdict != want || (want == Incomparable && len(c.Regressions) > 0) {
				t.Errorf("verdict %s with regressions %q, want %s", c.Verdict, c.Regressions, want)
			}
			if tt.note != "" && !strings.Contains(strings.Join(c.Notes, "\n"), tt.note) {
				t.Errorf("notes %q, want %q", c.Notes, tt.note)
			}
		})
	}
}

// TestP99Interval: the interval holds the ratio, is deterministic, holds
// 1 for a run against itself, narrowly for a long run, and lies above a
// threshold exactly when the test rejects at it.
func TestP99Interval(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	a, as := hostsim.Busy.Run(rng, 560)
	b, bs := hostsim.Busy.Run(rng, 560)
	t1, _ := newP99Test(a, as, b, bs)
	lo, hi := t1.interval(p99Confidence)
	t2, _ := newP99Test(a, as, b, bs)
	lo2, hi2 := t2.interval(p99Confidence)
	if lo != lo2 || hi != hi2 || lo > t1.ratio() || hi < t1.ratio() {
		t.Errorf("interval [%v, %v] then [%v, %v], ratio %v", lo, hi, lo2, hi2, t1.ratio())
	}
	for _, theta := range []float64{lo * 0.98, lo * 1.02} {
		if rejects := t1.pUpper(theta) <= (1-p99Confidence)/2; rejects != (theta < lo) {
			t.Errorf("at θ %.3f (interval from %.3f) the test rejects: %v", theta, lo, rejects)
		}
	}
	big, bigSent := hostsim.Quiet.Run(rng, 50000)
	t3, _ := newP99Test(big, bigSent, big, bigSent)
	if lo, hi := t3.interval(p99Confidence); lo > 1 || hi < 1 {
		t.Errorf("a run of 50000 against itself: interval [%.3f, %.3f], want one around 1", lo, hi)
	}
	slow := hostsim.Quiet
	slow.AddLo, slow.Add = 20*time.Millisecond, 40*time.Millisecond
	c, cs := slow.Run(rng, 560)
	t4, _ := newP99Test(a, as, c, cs)
	if lo, hi := t4.interval(p99Confidence); lo < 2 || hi < lo {
		t.Errorf("20–40 ms added to a busy host's answers: interval [%.3f, %.3f] of the ratio %.2f, want one above 2", lo, hi, t4.ratio())
	}
	if _, ok := newP99Test(nil, nil, b, bs); ok {
		t.Error("a test without a baseline's latencies")
	}
}

// TestP99OneMoment: runs that differ at one moment only (the onset burst
// twice as slow in the run, the rest the same) are never told apart, at
// any θ up to the ratio: that pair is swapped in half the splits, and the
// splits that swap no pair that matters have the observed ratio itself
// (computed in another order, so counted with a tolerance).
func TestP99OneMoment(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	base, sent := hostsim.Quiet.Run(rng, 560)
	run := slices.Clone(base)
	for i, s := range sent {
		if s < 120*time.Millisecond {
			run[i] *= 2
		}
	}
	tt, _ := newP99Test(base, sent, run, sent)
	if r := tt.ratio(); r < 1.5 {
		t.Fatalf("ratio %.2f: the burst does not carry the p99", r)
	}
	for theta := 1.0; theta < tt.ratio(); theta += 0.01 {
		if p := tt.pUpper(theta); p < 0.45 {
			t.Fatalf("at θ %.2f (ratio %.2f) p %.4f: one moment told apart", theta, tt.ratio(), p)
		}
	}
}

// splitP99 is the first of splitP99s: the p99 of the run of swap.
func (t *p99Test) splitP99(swap uint64, theta float64) float64 {
	run, _ := t.splitP99s(swap, theta)
	return run
}

// TestSplitP99MatchesSort: the walk down the slices' largest finds
// the p99 a sort of the split run's latencies finds.
func TestSplitP99MatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, n := range [][2]int{{1, 1}, {2, 7}, {99, 560}, {560, 566}, {3000, 400}} {
		base, baseSent := hostsim.Busy.Run(rng, n[0])
		run, runSent := hostsim.Busy.Run(rng, n[1])
		tt, _ := newP99Test(base, baseSent, run, runSent)
		span := max(slices.Max(baseSent), slices.Max(runSent)) + 1
		bs, rs := slicesOf(base, baseSent, span), slicesOf(run, runSent, span)
		for _, theta := range []float64{1, 1.7} {
			for _, swap := range append([]uint64{0, ^uint64(0)}, tt.swaps[:50]...) {
				var all []time.Duration
				for k := range p99Slices {
					if swap&(1<<k) == 0 {
						all = append(all, rs[k]...)
						continue
					}
					for _, d := range bs[k] {
						all = append(all, time.Duration(float64(d)*theta))
					}
				}
				slices.Sort(all)
				got, want := tt.splitP99(swap, theta), float64(p99(all))
				if math.Abs(got-want) > 1 {
					t.Fatalf("%v at θ %v: p99 %v, want %v", n, theta, got, want)
				}
			}
		}
	}
}

// TestCompareUndecidedModel: a model change is a regression only when both
// runs decided their models; otherwise it is a note (an A/A pair on a
// loaded host where one run could not tell two families apart).
func TestCompareUndecidedModel(t *testing.T) {
	base, run := summary(1, 240, "sliding-log", "pass"), summary(1, 240, "sliding-window-counter", "pass")
	if c := Compare(base, run, defaults); c.Verdict != Fail {
		t.Errorf("both decided: %s %v, want a regression", c.Verdict, c.Regressions)
	}
	for _, tt := range []struct {
		base, run bool // decided
		want      string
	}{{true, false, "the run left it undecided"}, {false, true, "the baseline left it undecided"}, {false, false, "both runs left it undecided"}} {
		base.Surfaces[0].ModelDecided, run.Surfaces[0].ModelDecided = tt.base, tt.run
		c := Compare(base, run, defaults)
		if c.Verdict != Pass || len(c.Regressions) > 0 || len(c.Notes) != 1 || !strings.HasSuffix(c.Notes[0], "not a regression: "+tt.want) {
			t.Errorf("decided %v, %v: %s, regressions %v, notes %v; want a note ending %q", tt.base, tt.run, c.Verdict, c.Regressions, c.Notes, tt.want)
		}
	}
}

// TestCompareUnshownLimiter: a run that could not show the limiter (its
// address had spent its budget just before) set against a passing one:
// its lower observed limit and its inconclusive verdict are notes naming
// why, never regressions, and the comparison is inconclusive, not a pass;
// a p99 that rose beyond the noise is still a regression.
func TestCompareUnshownLimiter(t *testing.T) {
	t.Parallel()
	const spent = "the address's budget was already spent: …; wait a window or use other --sources"
	base, run := summary(1, 240, "sliding-log", "pass"), summary(1, 181, "unknown", "inconclusive")
	run.Surfaces[0].Premise, run.Surfaces[0].ModelDecided = spent, false
	c := Compare(base, run, defaults)
	if c.Verdict != Inconclusive || len(c.Regressions) > 0 || len(c.Unjudged) != 1 || c.Unjudged[0] != "rest: the run could not show the limiter ("+spent+")" {
		t.Errorf("%s, regressions %v, unjudged %v: want inconclusive, none, and why", c.Verdict, c.Regressions, c.Unjudged)
	}
	want := []string{"rest: verdict pass → inconclusive, not a regression: the run could not show the limiter",
		"rest: observed limit 240 → 181, not a regression: the run could not show the limiter",
		"rest: model sliding-log → unknown, not a regression: the run left it undecided"}
	if !slices.Equal(c.Notes, want) {
		t.Errorf("notes %q, want %q", c.Notes, want)
	}
	base.Surfaces[0].Premise = spent
	if c := Compare(base, run, defaults); len(c.Unjudged) != 1 || !strings.HasPrefix(c.Unjudged[0], "rest: neither run could show the limiter (") {
		t.Errorf("both unshown: unjudged %v", c.Unjudged)
	}
}

// TestCompareKnees: a lower knee whose bracket lies apart from the
// baseline's is a regression; overlapping brackets are not.
func TestCompareKnees(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	k := func(knee, high float64) KneeSummary {
		s := KneeSummary{Verdict: "found", KneeRPS: f(knee), LowRPS: f(knee), Contract: "built-in", Load: "rest", Objective: "p99<=100ms"}
		if high > 0 {
			s.HighRPS = f(high)
		}
		return s
	}
	tests := []struct {
		name     string
		base     KneeSummary
		run      KneeSummary
		separate bool
		verdict  string
	}{
		{"same bracket", k(497, 519), k(500, 520), false, Pass},
		{"lower, apart", k(497, 519), k(400, 420), true, Fail},
		{"higher, apart", k(400, 420), k(497, 519), true, Pass},
		{"overlapping", k(497, 519), k(480, 505), false, Pass},
		{"base reached max-rate", k(1000, 0), k(1100, 0), false, Pass},
		{"no knee", KneeSummary{Verdict: "not-found", Contract: "built-in", Load: "rest", Objective: "p99<=100ms"}, k(500, 520), false, Inconclusive},
		{"another contract", k(497, 519), with(k(400, 420), func(s *KneeSummary) { s.Contract = "my-api.yaml@3f2a9c01b7de" }), false, Incomparable},
		{"another route", with(k(497, 519), func(s *KneeSummary) { s.Load = "route search" }), with(k(400, 420), func(s *KneeSummary) { s.Load = "route export" }), false, Incomparable},
		{"another objective", k(497, 519), with(k(497, 519), func(s *KneeSummary) { s.Objective = "p99<=200ms" }), false, Incomparable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := CompareKnees(tt.base, tt.run)
			if c.Separate != tt.separate || c.Verdict != tt.verdict {
				t.Errorf("separate %v verdict %s, want %v %s", c.Separate, c.Verdict, tt.separate, tt.verdict)
			}
			if (len(c.Incomparable) > 0) != (tt.verdict == Incomparable) {
				t.Errorf("incomparable %q with verdict %s", c.Incomparable, c.Verdict)
			}
		})
	}
}

// with is s changed by f.
func with(s KneeSummary, f func(*KneeSummary)) KneeSummary {
	f(&s)
	return s
}

// BenchmarkP99Test: compare's p99 judgement of two verify-sized runs and
// of two 5000-request ones on a busy host: the test at θ, then the
// interval.
func BenchmarkP99Test(b *testing.B) {
	for _, n := range []int{560, 5000} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		base, baseSent := hostsim.Busy.Run(rng, n)
		run, runSent := hostsim.Busy.Run(rng, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				t, _ := newP99Test(base, baseSent, run, runSent)
				t.pUpper(1.1)
				t.interval(p99Confidence)
			}
		})
	}
}
