package analyze

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// The tests below build result streams from the reference target's own
// limiters (refserver.Limiter, never a copy of one) on fake timestamps (no
// network, no sleeping) following verify's probe plan, and
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

// plan returns verify's probe plan for both surfaces, as verify sends it
// (scenario.VerifyProfile and its pacers) from srcA, srcB and srcC, with
// the gates ignored (a quiet target answers at once): each request's time
// as a fraction of the window, in time order.
func plan() []planned {
	prof, err := scenario.VerifyProfile(scenario.VerifyOptions{RESTLimit: 240, MCPLimit: 120, Sources: []string{srcA, srcB, srcC},
		Limits: true, Isolation: true, Contract: true, Seed: 1})
	if err != nil {
		panic(err)
	}
	var p []planned
	for _, st := range prof.Streams {
		sched, start := st.Pacer.Schedule(synthW), st.Start.In(synthW)
		for n := uint64(0); ; n++ {
			at, ok := sched.At(n)
			if !ok {
				break
			}
			p = append(p, planned{surface: st.Surface, source: prof.StreamSources(&st)[0], stream: st.Name,
				at: float64(start+at) / float64(synthW), forged: method.IsForged(st.Name)})
		}
	}
	sort.SliceStable(p, func(i, j int) bool { return p[i].at < p[j].at })
	return p
}

// limiter is a server-side limiter: allow decides a request of key counted
// at t (Unix ns). Every limiter is a refLimiter, or no limiter at all (one
// admitting or refusing everything, a balancer over refLimiters).
type limiter interface {
	allow(key string, t int64) bool
}

// refLimiter is the reference target's own limiter (refserver.Limiter)
// deciding at Unix-nanosecond times moved by shift, given as its monotonic
// time: its fixed windows and counters' windows start at multiples of its
// window since the epoch, less shift.
type refLimiter struct {
	l     *refserver.Limiter
	shift int64
}

func (r refLimiter) allow(key string, t int64) bool { return r.l.Allow(key, time.Duration(t+r.shift)) }

// newLimiter is the reference target's limiter of mode admitting limit
// requests per window w.
func newLimiter(mode refserver.LimiterMode, limit int, w time.Duration) refLimiter {
	l, err := refserver.NewLimiter(mode, limit, w)
	if err != nil {
		panic(err)
	}
	return refLimiter{l: l}
}

// replicasSim is n replicas behind a round-robin load balancer, each
// counting alone: the effective limit is n times one replica's.
type replicasSim struct {
	each []limiter
	next int
}

func (r *replicasSim) allow(key string, t int64) bool {
	l := r.each[r.next%len(r.each)]
	r.next++
	return l.allow(key, t)
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

// limitedBy is a target whose surfaces each have the reference target's
// limiter of mode at their documented limit per window w, keyed per
// address.
func limitedBy(mode refserver.LimiterMode, w time.Duration) server {
	return server{rest: newLimiter(mode, 240, w), mcp: newLimiter(mode, 120, w), key: perAddress}
}

// documented is the documented rolling window, its window windowFactor
// times the documented one's and its limits extra above the documented
// ones.
func documented(windowFactor float64, extra int) server {
	w := time.Duration(float64(synthW) * windowFactor)
	return server{rest: newLimiter(refserver.Rolling, 240+extra, w), mcp: newLimiter(refserver.Rolling, 120+extra, w), key: perAddress}
}

// simulate runs the plan against srv with the given latency per request
// (the server counts each request in the middle of its interval).
func simulate(srv server, latency func(i int) time.Duration) *decode.Input {
	return simulatePlan(srv, plan(), latency)
}

// simulatePlan is simulate with another plan (sorted by time).
func simulatePlan(srv server, ps []planned, latency func(i int) time.Duration) *decode.Input {
	in := decode.NewInput()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
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
		if p.surface == method.MCP {
			lim = srv.mcp
		}
		answerAs(in, rec, p, lim.allow(srv.key(p), tau(i)))
	}
	sort.SliceStable(in.Records, func(i, j int) bool { return in.Records[i].Start < in.Records[j].Start })
	return in
}

// answerAs sets what the target answered p's record: the documented 429
// unless its limiter admitted it (ok), else the failure-table row's
// answer, or a 200.
func answerAs(in *decode.Input, rec *decode.Record, p planned, ok bool) {
	row, isRow := rowOf(p.stream)
	switch {
	case !ok:
		rec.Code = 429
		in.Tables().SetAnswer(rec, refusals[p.surface])
	case isRow:
		var a decode.Answer
		rec.Code, a.Body, a.Allow = answer(row)
		in.Tables().SetAnswer(rec, &a)
	default:
		rec.Code = 200
		in.Tables().SetAnswer(rec, &decode.Answer{Body: []byte(`{"result":{}}`)})
	}
}

// refusals are the documented 429 answers of each surface.
var refusals = map[string]*decode.Answer{
	method.REST: {Body: []byte(`{"error":{"code":"rate_limited"}}`)},
	method.MCP:  {Body: []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"rate limited"}}`)},
}

func rowOf(stream string) (method.ContractRow, bool) {
	for _, r := range method.ContractRows {
		if r.Stream == stream {
			return r, true
		}
	}
	return method.ContractRow{}, false
}

// answer is the documented answer of a contract row.
func answer(row method.ContractRow) (uint16, []byte, string) {
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

func judge(in *decode.Input) *Report {
	rep, err := Analyze(in, Config{Window: synthW, Limits: map[string]int{method.REST: 240, method.MCP: 120}})
	if err != nil {
		panic(err)
	}
	return rep
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
	t.Parallel()
	tests := []struct {
		name       string
		srv        server
		wantModel  string
		wantFailed []string
		wantRC     *bool
	}{
		{"documented sliding log", documented(1, 0), familySlidingLog, nil, boolPtr(true)},
		{"fixed window", limitedBy(refserver.FixedWindow, synthW), familyFixedWindow, []string{"rest/rolling", "mcp/rolling"}, nil},
		{"token bucket", limitedBy(refserver.TokenBucket, synthW), familyTokenBucket,
			[]string{"rest/rolling", "rest/rejected-count", "mcp/rolling", "mcp/rejected-count"}, boolPtr(false)},
		{"sliding-window counter", limitedBy(refserver.SlidingWindowCounter, synthW), familySlidingWindow, []string{"rest/rolling", "mcp/rolling"}, nil},
		{"refusals not counted", limitedBy(refserver.AdmittedOnly, synthW), familySlidingLog, []string{"rest/rolling", "rest/rejected-count", "mcp/rolling", "mcp/rejected-count"}, boolPtr(false)},
		{"admits L+1", documented(1, 1), familySlidingLog, []string{"rest/onset", "rest/rolling", "mcp/onset", "mcp/rolling"}, nil},
		{"no limit", server{noneSim{}, noneSim{}, perAddress}, familyNone, []string{"rest/onset", "rest/rolling", "mcp/onset", "mcp/rolling"}, nil},
		{"window 1.5 times too long", documented(1.5, 0), "", []string{"rest/rolling", "mcp/rolling"}, nil},
		{"one budget for every address", server{documented(1, 0).rest, documented(1, 0).mcp, func(p planned) string {
			if p.source == srcC {
				return p.surface + "|c"
			}
			return p.surface
		}}, familyUnknown, []string{"rest/isolation", "mcp/isolation"}, nil},
		{"trusts X-Forwarded-For", server{documented(1, 0).rest, documented(1, 0).mcp, func(p planned) string {
			if p.stream == method.StreamSpoofXForwardedFor { // only that header: Forwarded and X-Real-IP are ignored
				return p.surface + "|198.51.100.7"
			}
			return perAddress(p)
		}}, familySlidingLog, []string{"rest/spoof", "mcp/spoof"}, nil},
		{"one counter for both surfaces", func() server {
			shared := newLimiter(refserver.Rolling, 240, synthW)
			return server{shared, shared, func(p planned) string { return p.source }}
		}(), "", []string{"rest/onset", "mcp/onset"}, nil}, // independence cannot tell: each surface alone looks like a lower limit
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
	t.Parallel()
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
	t.Parallel()
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

// BenchmarkFit measures the limiter fit (every candidate replayed on both
// ends, at two limits) on a flood of 100 000 requests from one address.
func BenchmarkFit(b *testing.B) {
	recs := make([]decode.Record, 100000)
	for i := range recs {
		s := int64(i) * int64(time.Millisecond)
		code := uint16(200)
		if i%10 > 0 {
			code = 429
		}
		recs[i] = decode.Record{Start: s, End: s + int64(2*time.Millisecond), Code: code}
	}
	b.ReportAllocs()
	for b.Loop() {
		f := newFamilyFit([]int{240, 250}, synthW, len(recs), nil)
		for i := range recs {
			f.add(&recs[i], int32(i))
		}
		f.result()
	}
}

// BenchmarkModel measures the uncertainty-interval model on a flood of
// 100 000 requests from one address.
func BenchmarkModel(b *testing.B) {
	g := Group{Surface: method.REST, Source: srcA}
	for i := range 100000 {
		s := int64(i) * int64(time.Millisecond)
		code := uint16(200)
		if i%10 > 0 {
			code = 429
		}
		g.Records = append(g.Records, &decode.Record{Start: s, End: s + int64(2*time.Millisecond), Code: code})
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
	t.Parallel()
	in := simulate(documented(1, 0), quiet)
	for i := range in.Records {
		if r := &in.Records[i]; in.Tables().Labels(r).Surface == method.REST && method.IsContractStream(in.Tables().Labels(r).Stream) {
			r.Code = 0
			in.Tables().SetAnswer(r, &decode.Answer{Err: `Get "http://127.0.0.1:1/api/public/pages/no-such": net/http: request canceled (Client.Timeout exceeded while awaiting headers)`})
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
	if c.Verdict != Inconclusive || !strings.Contains(c.Detail, "5 of 5 rows got no answer") || !strings.Contains(c.Detail, "Client.Timeout exceeded") {
		t.Errorf("contract %s: %s", c.Verdict, c.Detail)
	}
	want := []ErrorCount{{Kind: "request canceled (Client.Timeout exceeded while awaiting headers)", N: 5}}
	if got := rep.Surfaces[0].Errors; !slices.Equal(got, want) {
		t.Errorf("errors %v, want %v", got, want)
	}
}

// TestSyntheticCauses: against limiters that are wrong in one way, the
// check of that way fails, and no check names a cause the evidence does
// not prove (a bucket that refilled is no spoofing; a counter's weighted
// previous window is no shared counter; a doubled limit is a limit of its
// own, not uncounted refusals). A fixed window is named whatever its
// phase, and a limit of 480 is named as such.
func TestSyntheticCauses(t *testing.T) {
	t.Parallel()
	W := int64(synthW)
	// fixed is a fixed window whose boundaries are offset past multiples
	// of W since the epoch, or opened by each key's first request.
	fixed := func(offset int64, perKey bool) func() server {
		return func() server {
			if perKey {
				return limitedBy(refserver.FixedWindowPerAddress, synthW)
			}
			rest, mcp := newLimiter(refserver.FixedWindow, 240, synthW), newLimiter(refserver.FixedWindow, 120, synthW)
			rest.shift, mcp.shift = -offset, -offset
			return server{rest, mcp, perAddress}
		}
	}
	log := func(limit int) limiter { return newLimiter(refserver.Rolling, limit, synthW) }
	causes := []string{"rest/spoof", "mcp/spoof", "rest/independence", "mcp/independence", "rest/isolation", "mcp/isolation"}
	tests := []struct {
		name        string
		srv         func() server
		wantModel   string // the model, or one of its alternatives
		wantLimit   int    // of the best candidate (0: any)
		wantFailed  []string
		mustNotFail []string
	}{
		{"token bucket", func() server { return limitedBy(refserver.TokenBucket, synthW) },
			familyTokenBucket, 0, []string{"rest/rolling", "mcp/rolling"}, causes},
		{"sliding-window counter, one per surface", func() server { return limitedBy(refserver.SlidingWindowCounter, synthW) },
			familySlidingWindow, 0, []string{"rest/rolling", "mcp/rolling"}, causes},
		{"two replicas counting alone", func() server {
			return server{&replicasSim{each: []limiter{log(240), log(240)}}, &replicasSim{each: []limiter{log(120), log(120)}}, perAddress}
		},
			familySlidingLog, 0, []string{"rest/onset", "mcp/onset"}, append([]string{"rest/rejected-count", "mcp/rejected-count"}, causes...)},
	}
	for _, off := range []float64{0.005, 0.015, 0.025, 0.35, 0.7} { // inside the onset burst, and elsewhere
		tests = append(tests, struct {
			name        string
			srv         func() server
			wantModel   string
			wantLimit   int
			wantFailed  []string
			mustNotFail []string
		}{fmt.Sprintf("fixed window, boundary at %.3fw", off), fixed(int64(off*float64(W)), false), familyFixedWindow, 0, []string{"rest/rolling", "mcp/rolling"}, causes})
	}
	tests = append(tests, struct {
		name        string
		srv         func() server
		wantModel   string
		wantLimit   int
		wantFailed  []string
		mustNotFail []string
	}{"fixed window opened by each key's first request", fixed(0, true), familyFixedWindow, 0, nil, causes})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, lat := range []func(int) time.Duration{quiet, func(i int) time.Duration { return time.Millisecond + time.Duration(i%7)*time.Millisecond }} {
				rep := judge(simulate(tt.srv(), lat))
				got := failed(rep)
				for _, w := range tt.wantFailed {
					if !slices.Contains(got, w) {
						t.Errorf("%s did not fail; failed: %v", w, got)
					}
				}
				for _, w := range tt.mustNotFail {
					if slices.Contains(got, w) {
						t.Errorf("%s failed: the evidence does not prove that cause", w)
					}
				}
				for i, s := range rep.Verdict.Surfaces {
					if s.Model != tt.wantModel && !slices.Contains(s.ModelAlternatives, tt.wantModel) {
						t.Errorf("%s: model %s (alternatives %v), want %s; fit %v", s.Surface, s.Model, s.ModelAlternatives, tt.wantModel, rep.Surfaces[i].Fit.Candidates)
					}
				}
				if t.Failed() {
					for _, s := range rep.Verdict.Surfaces {
						for _, c := range s.Checks {
							t.Logf("%s %s %s: %s", s.Surface, c.Name, c.Verdict, c.Detail)
						}
					}
					return
				}
			}
		})
	}
}

// TestIndependenceNeedsProof: refusals that the other surface's traffic
// could explain, but that this surface's own sliding-window counter
// explains as well (its weighted previous window), do not fail
// independence; the same refusals under a counter the surfaces really
// share, which no limiter of one surface explains, do.
func TestIndependenceNeedsProof(t *testing.T) {
	t.Parallel()
	var ps []planned
	for i := range 240 { // REST: a burst early in the first fixed window
		ps = append(ps, planned{surface: method.REST, source: srcA, stream: "burst", at: 0.02 + 0.01*float64(i)/240})
	}
	for i := range 240 { // MCP, same address, mid-window
		ps = append(ps, planned{surface: method.MCP, source: srcA, stream: "burst", at: 0.5 + 0.01*float64(i)/240})
	}
	for i := range 30 { // REST probes just past the boundary
		ps = append(ps, planned{surface: method.REST, source: srcA, stream: "probe", at: 1.04 + 0.02*float64(i)/30})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].at < ps[j].at })
	independence := func(rep *Report) Check {
		for _, s := range rep.Verdict.Surfaces {
			for _, c := range s.Checks {
				if s.Surface == method.REST && c.Name == "independence" {
					return c
				}
			}
		}
		return Check{}
	}
	rep := judge(simulatePlan(limitedBy(refserver.SlidingWindowCounter, synthW), ps, quiet))
	if c := independence(rep); c.Verdict != Inconclusive || !strings.Contains(c.Detail, "explained as well by a limiter of rest alone") {
		t.Errorf("one counter per surface: independence %s: %s", c.Verdict, c.Detail)
	}
	shared := newLimiter(refserver.Rolling, 240, synthW)
	rep = judge(simulatePlan(server{shared, shared, func(p planned) string { return p.source }}, ps, quiet))
	if c := independence(rep); c.Verdict != Fail {
		t.Errorf("one counter for both surfaces: independence %s: %s", c.Verdict, c.Detail)
	}
}
