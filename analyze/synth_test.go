package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/contract"
)

// The tests below build result streams from simulated limiters on fake
// timestamps (no network, no sleeping) following verify's probe plan, and
// check that the analyzer names the family and fails exactly the checks a
// deviation breaks.

const (
	synthW = 60 * time.Second
	srcA   = "127.0.0.1"
	srcB   = "127.0.0.2"
	srcC   = "127.0.0.3"
)

// planned is one request of the plan: when (fraction of W), from where, which stream.
type planned struct {
	surface, source, stream string
	at                      float64
	forged                  bool
}

// plan returns verify's probe plan for both surfaces (docs/method.md).
func plan() []planned {
	var p []planned
	for _, sf := range []struct {
		name string
		L    int
	}{{contract.REST, 240}, {contract.MCP, 120}} {
		add := func(stream, src string, from, to float64, n int) {
			for i := range n {
				at := from
				if n > 1 {
					at = from + (to-from)*float64(i)/float64(n-1)
				}
				p = append(p, planned{surface: sf.name, source: src, stream: stream, at: at, forged: stream == "spoof"})
			}
		}
		add("onset", srcA, 0, 0.03, sf.L)
		add("over", srcA, 0.04, 0.04, 1)
		add("spoof", srcA, 0.11, 0.111, 3)
		add("isolation", srcB, 0.11, 0.111, 3)
		add("flood", srcA, 0.05, 0.10, sf.L)
		add("probe", srcA, 0.12, 1.18, 54)
		add("edge", srcA, 1.0, 1.095, 20)
		for _, row := range ContractRows {
			if row.Surface == sf.name {
				p = append(p, planned{surface: sf.name, source: srcC, stream: row.Stream, at: 0.2})
			}
		}
	}
	sort.SliceStable(p, func(i, j int) bool { return p[i].at < p[j].at })
	return p
}

// limiter is a simulated server-side limiter: allow decides a request of key
// counted at t (ns).
type limiter interface {
	allow(key string, t int64) bool
}

type slidingLogSim struct {
	limit        int
	w            int64
	countRefused bool
	log          map[string][]int64
}

func (s *slidingLogSim) allow(key string, t int64) bool {
	var kept []int64
	for _, x := range s.log[key] {
		if x > t-s.w {
			kept = append(kept, x)
		}
	}
	ok := len(kept) < s.limit
	if ok || s.countRefused {
		kept = append(kept, t)
	}
	s.log[key] = kept
	return ok
}

type fixedSim struct {
	limit int
	w     int64
	n     map[string]map[int64]int
}

func (f *fixedSim) allow(key string, t int64) bool {
	if f.n[key] == nil {
		f.n[key] = map[int64]int{}
	}
	k := t / f.w
	if f.n[key][k] >= f.limit {
		return false
	}
	f.n[key][k]++
	return true
}

type bucketSim struct {
	limit  int
	w      int64
	tokens map[string]float64
	last   map[string]int64
}

func (b *bucketSim) allow(key string, t int64) bool {
	tok, ok := b.tokens[key]
	if !ok {
		tok = float64(b.limit)
	} else {
		tok = math.Min(float64(b.limit), tok+float64(t-b.last[key])*float64(b.limit)/float64(b.w))
	}
	b.last[key] = t
	if tok < 1 {
		b.tokens[key] = tok
		return false
	}
	b.tokens[key] = tok - 1
	return true
}

type counterSim struct {
	limit int
	w     int64
	n     map[string]map[int64]int
}

func (c *counterSim) allow(key string, t int64) bool {
	if c.n[key] == nil {
		c.n[key] = map[int64]int{}
	}
	k := t / c.w
	frac := float64(t-k*c.w) / float64(c.w)
	if float64(c.n[key][k-1])*(1-frac)+float64(c.n[key][k])+1 > float64(c.limit) {
		return false
	}
	c.n[key][k]++
	return true
}

type noneSim struct{}

func (noneSim) allow(string, int64) bool { return true }

// server describes a simulated target: a limiter per surface and how it
// keys clients.
type server struct {
	rest, mcp limiter
	key       func(p planned) string
}

func perAddress(p planned) string { return p.surface + "|" + p.source }

func documented(windowFactor float64, extra int) server {
	w := int64(float64(synthW) * windowFactor)
	return server{
		rest: &slidingLogSim{limit: 240 + extra, w: w, countRefused: true, log: map[string][]int64{}},
		mcp:  &slidingLogSim{limit: 120 + extra, w: w, countRefused: true, log: map[string][]int64{}},
		key:  perAddress,
	}
}

// simulate runs the plan against srv with the given latency per request
// (the server counts each request in the middle of its interval).
func simulate(srv server, latency func(i int) time.Duration) *archive.Input {
	in := archive.NewInput()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	ps := plan()
	for i, p := range ps {
		s := t0 + int64(p.at*float64(synthW))
		in.Add(archive.Labels{Surface: p.surface, Source: p.source, Stream: p.stream}, s, s+int64(latency(i)), 0, nil)
	}
	// The server decides in the order it counts: the middle of each interval.
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	tau := func(i int) int64 { return (in.Records[i].Start + in.Records[i].End) / 2 }
	sort.SliceStable(order, func(a, b int) bool { return tau(order[a]) < tau(order[b]) })
	for _, i := range order {
		p, rec := ps[i], &in.Records[i]
		lim := srv.rest
		if p.surface == contract.MCP {
			lim = srv.mcp
		}
		row, isRow := rowOf(p.stream)
		switch {
		case !lim.allow(srv.key(p), tau(i)):
			rec.Code = 429
			in.Tables().SetAnswer(rec, refusals[p.surface])
		case isRow:
			var a archive.Answer
			rec.Code, a.Body, a.Allow = answer(row)
			in.Tables().SetAnswer(rec, &a)
		default:
			rec.Code = 200
			in.Tables().SetAnswer(rec, &archive.Answer{Body: []byte(`{"result":{}}`)})
		}
	}
	sort.SliceStable(in.Records, func(i, j int) bool { return in.Records[i].Start < in.Records[j].Start })
	return in
}

// refusals are the documented 429 answers of each surface.
var refusals = map[string]*archive.Answer{
	contract.REST: {Body: []byte(`{"error":{"code":"rate_limited"}}`)},
	contract.MCP:  {Body: []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"rate limited"}}`)},
}

func rowOf(stream string) (ContractRow, bool) {
	for _, r := range ContractRows {
		if r.Stream == stream {
			return r, true
		}
	}
	return ContractRow{}, false
}

// answer is the documented answer of a contract row.
func answer(row ContractRow) (uint16, []byte, string) {
	switch {
	case row.RESTCode != "":
		return row.Status, []byte(fmt.Sprintf(`{"error":{"code":%q}}`, row.RESTCode)), ""
	case row.RPCCode != 0:
		return row.Status, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"error":{"code":%d}}`, row.RPCCode)), ""
	case row.IsError:
		return row.Status, []byte(`{"jsonrpc":"2.0","id":1,"result":{"isError":true}}`), ""
	case row.Allow != "":
		return row.Status, nil, row.Allow
	case row.Status == 200:
		return 200, []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`), ""
	}
	return row.Status, []byte(`{"error":{"code":"invalid_parameter"}}`), ""
}

func quiet(int) time.Duration { return time.Millisecond }

func judge(in *archive.Input) *Report {
	return Analyze(in, Config{Window: synthW, Limits: map[string]int{contract.REST: 240, contract.MCP: 120}})
}

// failed returns surface/check for every failed check of rep.
func failed(rep *Report) []string {
	var out []string
	for _, s := range rep.Verdict.Surfaces {
		for _, c := range s.Checks {
			if c.Verdict == Fail {
				out = append(out, s.Surface+"/"+c.Name)
			}
		}
	}
	return out
}

func TestSyntheticFamilies(t *testing.T) {
	W := int64(synthW)
	tests := []struct {
		name       string
		srv        server
		wantModel  string
		wantFailed []string
		wantRC     *bool
	}{
		{"documented sliding log", documented(1, 0), FamilySlidingLog, nil, boolPtr(true)},
		{"fixed window", server{&fixedSim{240, W, map[string]map[int64]int{}}, &fixedSim{120, W, map[string]map[int64]int{}}, perAddress},
			FamilyFixedWindow, []string{"rest/rolling", "mcp/rolling"}, nil},
		{"token bucket", server{&bucketSim{240, W, map[string]float64{}, map[string]int64{}}, &bucketSim{120, W, map[string]float64{}, map[string]int64{}}, perAddress},
			FamilyTokenBucket, []string{"rest/rolling", "rest/rejected-count", "mcp/rolling", "mcp/rejected-count"}, boolPtr(false)},
		{"sliding-window counter", server{&counterSim{240, W, map[string]map[int64]int{}}, &counterSim{120, W, map[string]map[int64]int{}}, perAddress},
			FamilySlidingWindow, []string{"rest/rolling", "mcp/rolling"}, nil},
		{"refusals not counted", server{&slidingLogSim{240, W, false, map[string][]int64{}}, &slidingLogSim{120, W, false, map[string][]int64{}}, perAddress},
			FamilySlidingLog, []string{"rest/rolling", "rest/rejected-count", "mcp/rolling", "mcp/rejected-count"}, boolPtr(false)},
		{"admits L+1", documented(1, 1), FamilySlidingLog, []string{"rest/onset", "rest/rolling", "mcp/onset", "mcp/rolling"}, nil},
		{"no limit", server{noneSim{}, noneSim{}, perAddress}, FamilyNone, []string{"rest/onset", "rest/rolling", "mcp/onset", "mcp/rolling"}, nil},
		{"window 1.5 times too long", documented(1.5, 0), "", []string{"rest/rolling", "mcp/rolling"}, nil},
		{"one budget for every address", server{documented(1, 0).rest, documented(1, 0).mcp, func(p planned) string {
			if p.source == srcC {
				return p.surface + "|c"
			}
			return p.surface
		}}, FamilySlidingLog, []string{"rest/isolation", "mcp/isolation"}, nil},
		{"trusts X-Forwarded-For", server{documented(1, 0).rest, documented(1, 0).mcp, func(p planned) string {
			if p.forged {
				return p.surface + "|198.51.100.7"
			}
			return perAddress(p)
		}}, FamilySlidingLog, []string{"rest/spoof", "mcp/spoof"}, nil},
		{"one counter for both surfaces", func() server {
			shared := &slidingLogSim{240, W, true, map[string][]int64{}}
			return server{shared, shared, func(p planned) string { return p.source }}
		}(), "", []string{"mcp/independence"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := judge(simulate(tt.srv, quiet))
			got := failed(rep)
			for _, w := range tt.wantFailed {
				if !slices.Contains(got, w) {
					t.Errorf("%s did not fail; failed: %v", w, got)
				}
			}
			if tt.wantFailed == nil && len(got) > 0 {
				t.Errorf("failed %v, want a pass", got)
			}
			for i, s := range rep.Verdict.Surfaces {
				if tt.wantModel != "" && s.Model != tt.wantModel {
					t.Errorf("%s: model %s, want %s (fit: %v)", s.Surface, s.Model, tt.wantModel, rep.Surfaces[i].Fit.Candidates)
				}
				if tt.wantRC != nil && (s.RejectedCount == nil || *s.RejectedCount != *tt.wantRC) {
					t.Errorf("%s: rejected_count %v, want %v", s.Surface, s.RejectedCount, *tt.wantRC)
				}
			}
			if t.Failed() {
				for _, s := range rep.Verdict.Surfaces {
					for _, c := range s.Checks {
						t.Logf("%s %s %s: %s", s.Surface, c.Name, c.Verdict, c.Detail)
					}
				}
			}
		})
	}
}

// TestSyntheticNoFalseAlarm: a correct limiter under latency noise up to a
// tenth of the window never fails a check.
func TestSyntheticNoFalseAlarm(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		lat := func(int) time.Duration { return time.Duration(rng.Float64() * float64(synthW) / 10) }
		rep := judge(simulate(documented(1, 0), lat))
		if got := failed(rep); len(got) > 0 {
			t.Fatalf("seed %d: a correct target failed %v", seed, got)
		}
	}
}

// TestSyntheticObservedLimit: on a quiet network the observed limit is the
// documented one exactly, and the effective window is the documented one.
func TestSyntheticObservedLimit(t *testing.T) {
	rep := judge(simulate(documented(1, 0), quiet))
	for i, s := range rep.Verdict.Surfaces {
		if s.ObservedLimit == nil || *s.ObservedLimit != s.ExpectedLimit {
			t.Errorf("%s: observed %v, want %d", s.Surface, s.ObservedLimit, s.ExpectedLimit)
		}
		if ew := rep.Surfaces[i].Fit.EffectiveWindow; ew != synthW {
			t.Errorf("%s: effective window %v, want %v", s.Surface, ew, synthW)
		}
	}
}

// BenchmarkAnalyze measures the whole analysis (model, fit, checks) of one
// verify run, per request.
func BenchmarkAnalyze(b *testing.B) {
	in := simulate(documented(1, 0), quiet)
	b.ReportAllocs()
	for b.Loop() {
		judge(in)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in.Records)), "ns/request")
}

// BenchmarkModel measures the uncertainty-interval model on a flood of
// 100 000 requests from one address.
func BenchmarkModel(b *testing.B) {
	g := Group{Surface: contract.REST, Source: srcA}
	for i := range 100000 {
		s := int64(i) * int64(time.Millisecond)
		code := uint16(200)
		if i%10 > 0 {
			code = 429
		}
		g.Records = append(g.Records, &archive.Record{Start: s, End: s + int64(2*time.Millisecond), Code: code})
	}
	b.ReportAllocs()
	for b.Loop() {
		Model(g, 240, synthW)
	}
}

// TestUnansweredContractRows: a contract probe that got no answer (a
// timeout, a reset) proves nothing about its row: the check is skipped with
// the reason, never failed, and the error is counted by kind.
func TestUnansweredContractRows(t *testing.T) {
	in := simulate(documented(1, 0), quiet)
	for i := range in.Records {
		if r := &in.Records[i]; in.Tables().Labels(r).Surface == contract.REST && isContractStream(in.Tables().Labels(r).Stream) {
			r.Code = 0
			in.Tables().SetAnswer(r, &archive.Answer{Err: `Get "http://127.0.0.1:1/api/public/pages/no-such": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`})
		}
	}
	rep := judge(in)
	if got := failed(rep); len(got) > 0 {
		t.Fatalf("failed %v, want no failure", got)
	}
	var c Check
	for _, x := range rep.Verdict.Surfaces[0].Checks {
		if x.Name == "contract" {
			c = x
		}
	}
	if c.Verdict != Skip || !strings.Contains(c.Detail, "5 of 5 rows got no answer") || !strings.Contains(c.Detail, "Client.Timeout exceeded") {
		t.Errorf("contract %s: %s", c.Verdict, c.Detail)
	}
	want := []ErrorCount{{Kind: "request canceled (Client.Timeout exceeded while awaiting headers)", N: 5}}
	if got := rep.Surfaces[0].Errors; !slices.Equal(got, want) {
		t.Errorf("errors %v, want %v", got, want)
	}
}
