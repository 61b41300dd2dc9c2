package analyze

import (
	"cmp"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// delayingBucket is nginx's limit_req with burst and delay, as
// ngx_http_limit_req_module.c computes it per key: excess = max(excess −
// rate·elapsed + 1, 0) at each arrival (a new key starts at 0), refused
// once it would pass burst (nothing stored), else admitted and held for
// (excess − delay)/rate when excess passes delay. It decides on arrival
// and holds admissions afterwards.
type delayingBucket struct {
	burst, delay float64
	rate         float64 // requests per ns
	excess       map[string]float64
	last         map[string]int64
}

// arrive decides a request of key arriving at t and says how long an
// admitted one is held.
func (b *delayingBucket) arrive(key string, t int64) (ok bool, hold time.Duration) {
	e := 0.0
	if last, seen := b.last[key]; seen {
		e = math.Max(b.excess[key]-b.rate*float64(t-last)+1, 0)
	}
	if e > b.burst {
		return false, 0
	}
	b.excess[key], b.last[key] = e, t
	if e > b.delay {
		hold = time.Duration((e - b.delay) / b.rate)
	}
	return true, hold
}

// TestFitOfADelayingBucket: a leaky bucket of L that admits the first
// L/2 of a burst at once and holds the rest (nginx's burst=L delay=L/2)
// answers its refusals at once and its admissions up to half a window
// late. The plan's flood waits for the over request's answer, so it goes
// out only once the bucket let that request through. Replayed on those
// responses, the stream the bucket smoothed looks like a counter's and
// the admissions it held look like timing the run cannot vouch for, so
// that nothing was decided. The refusals came back at once: it decided
// on arrival, and the fit names the token bucket, decided.
func TestFitOfADelayingBucket(t *testing.T) {
	t.Parallel()
	W := float64(synthW)
	newBuckets := func() map[string]*delayingBucket {
		b := map[string]*delayingBucket{}
		for surface, l := range map[string]float64{method.REST: 240, method.MCP: 120} {
			b[surface] = &delayingBucket{burst: l, delay: l / 2, rate: l / W, excess: map[string]float64{}, last: map[string]int64{}}
		}
		return b
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
	type sent struct {
		planned
		at int64
	}
	var ps []sent
	for _, p := range plan() {
		ps = append(ps, sent{p, t0 + int64(p.at*W)})
	}
	// The onset and the over request go out first, on their own: when the
	// over request is answered opens the gate of what waits for it.
	gate := map[string]int64{}
	b := newBuckets()
	for _, p := range ps {
		if p.source == srcA && (p.stream == method.StreamOnset || p.stream == method.StreamOver) {
			_, hold := b[p.surface].arrive(perAddress(p.planned), p.at)
			if p.stream == method.StreamOver {
				gate[p.surface] = p.at + int64(time.Millisecond+hold)
			}
		}
	}
	for i, p := range ps {
		switch {
		case p.stream == method.StreamFlood, p.stream == method.StreamIsolation, method.IsForged(p.stream), p.stream == method.StreamSpoofControl:
			ps[i].at = max(p.at, gate[p.surface]+p.at-t0-int64(0.05*W))
		}
	}
	slices.SortStableFunc(ps, func(a, b sent) int { return cmp.Compare(a.at, b.at) })
	in := decode.NewInput()
	b = newBuckets()
	for _, p := range ps {
		ok, hold := b[p.surface].arrive(perAddress(p.planned), p.at)
		rec := in.Add(archive.Labels{Surface: p.surface, Source: p.source, Stream: p.stream}, p.at, p.at+int64(time.Millisecond+hold), 0, nil)
		answerAs(in, rec, p.planned, ok)
	}
	rep := judge(in)
	for i, s := range rep.Verdict.Surfaces {
		if s.Model != familyTokenBucket || !s.ModelDecided {
			t.Errorf("%s: model %s (decided %v, alternatives %v), want %s decided\nfit: %v", s.Surface, s.Model, s.ModelDecided, s.ModelAlternatives, familyTokenBucket, rep.Surfaces[i].Fit.Candidates)
		}
		for _, c := range s.Checks {
			if c.Name == "rejected-count" && c.Verdict == Pass {
				t.Errorf("%s: rejected-count passes against a bucket that spends nothing on refusals: %s", s.Surface, c.Detail)
			}
		}
	}
}

// TestDecidedBy: a request is replayed on responses no later than the
// next-to-slowest refusal sent within 0.05 W of it took, not the slowest
// of the run: a stall that held two refusals 170 and 180 ms at 0.5 W says
// nothing of a request sent at 0.1 W, whose neighbours came back in 2 and
// 3 ms, and nor does the one neighbour a heavy tail held 40 ms on its own;
// a request with no refusal that near gets the next-to-slowest of all,
// and with one refusal in the run, that one's.
func TestDecidedBy(t *testing.T) {
	t.Parallel()
	const ms = int64(time.Millisecond)
	w := 6 * time.Second // bins of 60 ms
	g, lone := &groupRun{}, &groupRun{}
	for _, r := range []decode.Record{
		{Start: 600 * ms, End: 603 * ms, Code: 429},   // 0.1 W: 3 ms
		{Start: 640 * ms, End: 642 * ms, Code: 429},   // 2 ms
		{Start: 660 * ms, End: 700 * ms, Code: 429},   // a heavy tail's 40 ms
		{Start: 3000 * ms, End: 3180 * ms, Code: 429}, // 0.5 W: a stall's 180 ms
		{Start: 3010 * ms, End: 3180 * ms, Code: 429}, // and 170 ms
	} {
		g.addRefusal(&r, w)
	}
	lone.addRefusal(&decode.Record{Start: 3000 * ms, End: 3180 * ms, Code: 429}, w)
	for _, tt := range []struct {
		name  string
		g     *groupRun
		start int64
		want  int64
	}{
		{"beside the fast refusals and the tail", g, 610 * ms, 3 * ms},
		{"0.05 W after them", g, 900 * ms, 3 * ms},
		{"beside the stall", g, 2900 * ms, 170 * ms},
		{"with no refusal near", g, 1800 * ms, 170 * ms},
		{"the one refusal of a run", lone, 600 * ms, 180 * ms},
	} {
		g := tt.g
		if got := g.decidedBy(tt.start); got != tt.want {
			t.Errorf("%s: decidedBy(%v) = %v, want %v", tt.name, time.Duration(tt.start), time.Duration(got), time.Duration(tt.want))
		}
	}
}
