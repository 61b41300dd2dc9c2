package analyze

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// The streaming analyzer against the batch one it replaced
// (reference_test.go), on random inputs: the same judgements, fits,
// observed limits and reports.

// randomGroup is n requests of one group at random times and latencies
// (ties, zero latencies, some slower than half a window), answered at
// random: admitted, refused or a fault.
func randomGroup(rng *rand.Rand, n int, w time.Duration) Group {
	g := Group{Surface: method.REST, Source: srcA}
	t := int64(0)
	for range n {
		switch rng.IntN(4) {
		case 0: // same send time as the previous
		case 1:
			t += rng.Int64N(int64(w) / 10)
		default:
			t += rng.Int64N(int64(w) / 200)
		}
		lat := rng.Int64N(int64(w) / 50)
		switch rng.IntN(20) {
		case 0:
			lat = 0
		case 1:
			lat = int64(w)/2 + rng.Int64N(int64(w))
		}
		code := []uint16{200, 200, 429, 429, 429, 0, 503}[rng.IntN(7)]
		g.Records = append(g.Records, &decode.Record{Start: t, End: t + lat, Code: code})
	}
	return g
}

// TestModelMatchesBatch compares the streaming model, observed limit and
// fit with the batch ones on 150 random groups of up to 600 requests (the
// fit's finest phase grid, kept for refine) at limits from 1 to 60, two
// of them (the first and the 51st, as before) of 25 000, past the size
// where the fit scans coarser (replay.go: 10 phases, coarser window
// scans). The first 100 groups are those of the 400 it drew before, eight
// of them of 25 000, which cost as much as the 392 others: these 150
// reach the same blocks of the package, for a third of the CPU.
func TestModelMatchesBatch(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 150 {
		n := 1 + rng.IntN(600)
		if i == 0 || i == 50 {
			n = 25000 // past the size where the fit scans coarser
		}
		g := randomGroup(rng, n, synthW)
		limit := 1 + rng.IntN(60)
		if got, want := Model(g, limit, synthW), refModel(g, limit, synthW); !slices.Equal(got, want) {
			t.Fatalf("group %d (%d requests, limit %d): Model differs from the batch model at %s", i, n, limit, firstDiff(got, want))
		}
		gotObs, gotAny := ObservedLimit(g, synthW)
		wantObs, wantAny := refObservedLimit(g, synthW)
		if gotObs != wantObs || gotAny != wantAny {
			t.Fatalf("group %d: ObservedLimit %d %v, batch %d %v", i, gotObs, gotAny, wantObs, wantAny)
		}
		if got, want := fitView(fitFamily(g, limit, synthW)), fitView(refFitFamily(g, limit, synthW)); !reflect.DeepEqual(got, want) {
			t.Fatalf("group %d (%d requests, limit %d): FitFamily\n%+v\nbatch\n%+v", i, n, limit, got, want)
		}
	}
}

// fitView is what the streaming fit and the batch one must agree on: the
// candidates of one limiter and the best of them, without the streaming
// fit's bookkeeping (decision slots, timing spreads, scores order by
// order) or what the batch fit does not replay (replicas, the window
// scan's rivals) or name (alternatives, whether the fit decided);
// replicas are tested on their own (TestReplicasCandidate).
func fitView(f Fit) Fit {
	f.Alternatives, f.Scan, f.Decided = nil, nil, false
	var cands []Candidate
	for _, c := range f.Candidates {
		if c.Replicas < 2 {
			c.slot, c.TimingSpread, c.phases, c.orders, c.once, c.onced = 0, 0, [2]int{}, [3]int{}, [3]int{}, false
			cands = append(cands, c)
		}
	}
	f.Candidates = cands
	if len(cands) > 0 {
		f.Best = cands[0]
		for _, c := range cands[1:] {
			if c.Mismatches < f.Best.Mismatches {
				f.Best = c
			}
		}
	}
	f.Best.slot, f.Best.TimingSpread, f.Best.phases = 0, 0, [2]int{}
	return f
}

func firstDiff(a, b []Judgement) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("%d: %+v against %+v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}

// inputServers are the servers randomInput runs verify's plan against:
// right, or wrong in one of the ways the checks catch.
var inputServers = []func() server{
	func() server { return documented(1, 0) },
	func() server { return documented(1.3, 0) },
	func() server { return documented(1, 1) },
	func() server { return limitedBy(refserver.FixedWindow, synthW) },
	func() server { return limitedBy(refserver.TokenBucket, synthW) },
	func() server { return limitedBy(refserver.SlidingWindowCounter, synthW) },
	func() server { return server{rest: noneSim{}, mcp: noneSim{}, key: perAddress} },
	func() server { s := documented(1, 0); s.key = func(p planned) string { return p.surface }; return s }, // shared by addresses
	func() server { s := documented(1, 0); s.key = func(p planned) string { return p.source }; return s },  // shared by surfaces
	func() server { return limitedBy(refserver.AdmittedOnly, synthW) },
}

// inputScales are the latency scales of randomInput: none, fast, slow and
// a large share of the window.
var inputScales = []time.Duration{0, time.Millisecond, 50 * time.Millisecond, 2 * time.Second}

// randomInput runs verify's plan against a random server (right or wrong
// in any of the ways the checks catch) with random latencies, and turns
// some answers into faults.
func randomInput(rng *rand.Rand) *decode.Input {
	srv := rng.IntN(len(inputServers))
	in := simulateInput(rng, srv, rng.IntN(len(inputScales)))
	answerInput(rng, in, rng.IntN(3)*5)
	return in
}

// simulateInput runs verify's plan against inputServers[srv] with
// latencies drawn up to inputScales[scale], one request in a hundred
// slower than half a window.
func simulateInput(rng *rand.Rand, srv, scale int) *decode.Input {
	sc := inputScales[scale]
	return simulate(inputServers[srv](), func(int) time.Duration {
		if rng.IntN(100) == 0 {
			return synthW/2 + time.Duration(rng.Int64N(int64(synthW)))
		}
		return time.Duration(rng.Int64N(int64(sc) + 1))
	})
}

// answerInput turns faults percent of in's answers into faults (resets
// and 503s, half each) and gives some refusals another body (not the
// documented shape) or a Retry-After and RateLimit header.
func answerInput(rng *rand.Rand, in *decode.Input, faults int) {
	for i := range in.Records {
		r := &in.Records[i]
		switch p := rng.IntN(100); {
		case p < faults/2:
			r.Code = 0
			in.Tables().SetAnswer(r, &decode.Answer{Err: "read tcp 127.0.0.1:4000: connection reset by peer"})
		case p < faults:
			r.Code = 503
		case r.Code == 429 && rng.IntN(30) == 0:
			in.Tables().SetAnswer(r, &decode.Answer{Body: []byte("slow down")}) // not the documented shape
		case r.Code == 429 && rng.IntN(10) == 0:
			in.Tables().SetAnswer(r, &decode.Answer{Body: in.Tables().Body(r), RetryAfter: fmt.Sprint(rng.IntN(4)), RateLimit: "limit=240"})
		}
	}
}

// comparable is what the streaming analysis and the batch one it
// replaced must agree on: the evidence of each surface (counts, required
// outcomes, leaks and false throttles, observed limit, primary, errors)
// and the latency a person reads. The checks' verdicts are not compared:
// they weigh the evidence by rules the batch analyzer predates (evidence
// before verdicts, causes only from proof, the fit from the data), and the
// synthetic tests judge them against limiters on fake time instead.
func comparable(rep *Report) string {
	type lat struct {
		Samples, Count          int
		Min, P50, P95, P99, Max time.Duration
	}
	type surface struct {
		Surface                   string
		ExpectedLimit             int
		ObservedLimit             *int
		Detail                    SurfaceDetail
		Latency                   lat
		EffectiveWindow, BestWind time.Duration
	}
	var out []surface
	for i, sv := range rep.Verdict.Surfaces {
		d := rep.Surfaces[i]
		m := d.Latency
		d.Latency, d.Fit, d.Premise, d.SpentOrLower = nil, Fit{}, "", false // a verdict's, which the batch analyzer predates
		d.SecondEnd = time.Time{}                                           // the follow-up's origin, which it predates too
		out = append(out, surface{Surface: sv.Surface, ExpectedLimit: sv.ExpectedLimit, ObservedLimit: sv.ObservedLimit, Detail: d,
			Latency: lat{m.Samples, m.Count, m.Time.Min, m.Time.P50, m.Time.P95, m.Time.P99, m.Time.Max}})
	}
	b, _ := json.MarshalIndent(struct {
		Surfaces        []surface
		Notes, Warnings []string
	}{out, rep.Notes, rep.Warnings}, "", " ")
	return string(b)
}

// TestAnalyzeMatchesBatch runs verify's plan against every server of
// inputServers at every latency scale of inputScales, each with its
// latencies, faults and refusals' bodies and headers drawn at random, no
// fault, 5 % or 10 % (each server meets the three across its scales) and
// the documented window or one a tenth longer (each server meets both),
// and compares the streaming analysis with the batch one. It drew 150
// inputs at random, each server and scale from one to eight times (3.75
// on average): the 40 of the sweep reach every block the 150 did of what
// comparable compares (all but an edge of the histogram, which it does
// not compare and latency_test.go reaches) and more of the checks, for
// a quarter of the CPU.
func TestAnalyzeMatchesBatch(t *testing.T) {
	t.Parallel()
	for srv := range inputServers {
		t.Run(fmt.Sprint("server ", srv), func(t *testing.T) {
			t.Parallel()
			for scale := range inputScales {
				rng := rand.New(rand.NewPCG(8, uint64(srv*len(inputScales)+scale)))
				in := simulateInput(rng, srv, scale)
				answerInput(rng, in, (srv+scale)%3*5)
				cfg := Config{Window: synthW, Limits: map[string]int{method.REST: 240, method.MCP: 120}}
				if (srv+scale)%2 == 1 {
					cfg.Window = synthW * 11 / 10
				}
				rep, err := Analyze(in, cfg)
				if err != nil {
					t.Fatal(err)
				}
				got, want := comparable(rep), comparable(refAnalyze(in, cfg))
				if got != want {
					t.Fatalf("latency scale %v: the streaming report differs from the batch one\n%s\nbatch:\n%s", inputScales[scale], got, want)
				}
			}
		})
	}
}

// TestSpillMatchesRead: an input read to disk (Open) streams in the same
// order as one read into memory (Read), from several files written in
// completion order (as Vegeta writes), and analyzes the same.
func TestSpillMatchesRead(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	dir := t.TempDir()
	for round := range 6 {
		in := randomInput(rng)
		var paths []string
		files := 1 + round%3
		for f := range files {
			var rs []vegeta.Result
			for i := f; i < len(in.Records); i += files {
				r := &in.Records[i]
				a, l := in.Tables().Answer(r), in.Tables().Labels(r)
				v := vegeta.Result{Attack: archive.Labels{Surface: l.Surface, Source: l.Source, Stream: l.Stream}.String(), Code: r.Code,
					Timestamp: time.Unix(0, r.Start), Latency: r.Latency(), URL: "http://127.0.0.1/"}
				if a != nil {
					v.Body, v.Error = a.Body, a.Err
				}
				rs = append(rs, v)
			}
			slices.SortStableFunc(rs, func(a, b vegeta.Result) int { return a.End().Compare(b.End()) })
			path := filepath.Join(dir, fmt.Sprintf("r%d-%d.bin", round, f))
			writeResults(t, path, rs)
			paths = append(paths, path)
		}
		mem, err := Read(paths)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := Open(paths)
		if err != nil {
			t.Fatal(err)
		}
		// Each read interns labels and answers anew: compare what they say.
		show := func(tab *decode.Tables, r *decode.Record) string {
			l := tab.Labels(r)
			return fmt.Sprintf("%d %d %d %s %s %s %q %q", r.Start, r.End, r.Code, l.Surface, l.Source, l.Stream, tab.Body(r), tab.Err(r))
		}
		var streamed, read []string
		if err := sp.InOrder(func(r *decode.Record) { streamed = append(streamed, show(sp.Tables(), r)) }); err != nil {
			t.Fatal(err)
		}
		for i := range mem.Records {
			read = append(read, show(mem.Tables(), &mem.Records[i]))
		}
		if !slices.Equal(streamed, read) {
			t.Fatalf("round %d: the spill streams %d records in another order than Read's %d", round, len(streamed), len(read))
		}
		cfg := Config{Window: synthW, Limits: map[string]int{method.REST: 240, method.MCP: 120}}
		fromDisk, err := AnalyzeSource(sp, cfg)
		if err != nil {
			t.Fatal(err)
		}
		fromMemory, err := Analyze(mem, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := comparable(fromDisk), comparable(fromMemory); got != want {
			t.Fatalf("round %d: analyzing the spill differs from analyzing memory\n%s\nmemory:\n%s", round, got, want)
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}

	}
}

// writeResults writes rs as a Vegeta gob results file.
func writeResults(t *testing.T, path string, rs []vegeta.Result) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	enc := vegeta.NewEncoder(f)
	for i := range rs {
		if err := enc.Encode(&rs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestModelAgainstDefinition checks the model's counts against their
// definitions, request by request, on groups whose latencies run from zero
// to twice the window (the sorted-count shortcuts are exact only with the
// corrections for slow requests).
func TestModelAgainstDefinition(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(10, 10))
	W := int64(synthW)
	for round := range 300 {
		var g Group
		t0 := int64(0)
		for range 1 + rng.IntN(80) {
			t0 += rng.Int64N(W / 4)
			lat := rng.Int64N(2 * W)
			switch rng.IntN(6) {
			case 0:
				lat = 0
			case 1:
				lat = W
			}
			r := decode.Record{Start: t0, End: t0 + lat, Code: []uint16{200, 429, 0, 503}[rng.IntN(4)]}
			g.Records = append(g.Records, &r)
		}
		count := func(j int, in func(*decode.Record) bool, definite bool) int32 {
			rj, n := g.Records[j], int32(0)
			for i, ri := range g.Records {
				switch {
				case i == j || !in(ri):
				case definite && ri.End <= rj.Start && ri.Start > rj.End-W:
					n++
				case !definite && ri.End > rj.Start-W && ri.Start < rj.End:
					n++
				}
			}
			return n
		}
		all := func(*decode.Record) bool { return true }
		notRefused := func(r *decode.Record) bool { return !refused(r) }
		for _, jd := range Model(g, 1+rng.IntN(10), synthW) {
			j := int(jd.Index)
			want := Judgement{Definite: count(j, sure, true), DefiniteAdmitted: count(j, admitted, true), PossibleAdmitted: count(j, notRefused, false)}
			want.Ambiguous = count(j, all, false) - want.Definite
			got := Judgement{Definite: jd.Definite, Ambiguous: jd.Ambiguous, DefiniteAdmitted: jd.DefiniteAdmitted, PossibleAdmitted: jd.PossibleAdmitted}
			if got != want {
				r := g.Records[j]
				t.Fatalf("round %d, request %d (%d..%d): counts %+v, by definition %+v", round, j, r.Start, r.End, got, want)
			}
		}
	}
}

// TestShapeOfVaryingRefusals: refusals whose every body and RateLimit
// header differ (a request id, a countdown) are judged as they are read,
// and the shape check counts and reports them.
func TestShapeOfVaryingRefusals(t *testing.T) {
	t.Parallel()
	const n = 20000
	rs := make([]vegeta.Result, n)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range rs {
		rs[i] = vegeta.Result{Code: 429, Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Latency: time.Millisecond,
			URL:     fmt.Sprintf("http://127.0.0.1:8080/api/public/search?q=x&id=%d", i),
			Body:    fmt.Appendf(nil, `{"error":{"code":"rate_limited","request_id":"req-%d"}}`, i),
			Headers: map[string][]string{"Ratelimit": {fmt.Sprintf("limit=240, remaining=0, reset=%d", i)}}}
		if i%2 == 1 {
			rs[i].Body = fmt.Appendf(nil, `{"error":{"code":"slow_down","request_id":"req-%d"}}`, i)
		}
	}
	path := filepath.Join(t.TempDir(), "results.bin")
	writeResults(t, path, rs)
	in, err := Read([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(in, Config{Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Verdict.Surfaces[0].Checks[3]; d.Name != "shape" || !strings.Contains(d.Detail, "10000 of 20000 refusals lack") ||
		!strings.Contains(d.Detail, "RateLimit: limit=240, remaining=0, reset=0") {
		t.Errorf("shape check: %+v", d)
	}
}
