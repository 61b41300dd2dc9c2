package runner

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Config configures a [Job]. Search, Surface and Sources are required;
// the zero values of the others are documented on each.
type Config struct {
	// Search configures the knee search; its Sources is set from Sources.
	Search capacity.Options
	// Surface is method.REST or method.MCP.
	Surface string
	// Sources are the source addresses, at least as many as the highest
	// rate needs; a step of k sources sends from the first k ("": the
	// system's choice, for a single source).
	Sources []string
	// ThroughLimit measures the limiter itself from one address: a 429 is
	// then an answer like any other, not a failure.
	ThroughLimit bool
	// Window is the run's window, recorded in run.json.
	Window time.Duration
	// Timeout bounds each request (0: 10 s).
	Timeout time.Duration
	// Network is how requests reach the target (nil: HTTP/1.1).
	Network *client.Network
	// MaxWorkers caps the requests each source has in flight (0: none,
	// the open model). A capped source sends late when the target is slow.
	MaxWorkers uint64
	// ClientVersion is the version MCP requests name in their clientInfo.
	ClientVersion string
	// Events, when set, is told of every judged step.
	Events func(StepDone)
}

// StepDone says a step (or one lengthening of it) was judged.
type StepDone struct {
	// Segment is what was sent.
	Segment Segment
	// Result is its judgement; Lengthen reports whether it is lengthened.
	Result   capacity.StepResult
	Lengthen bool
}

// Job is the knee search as a job of the attack engine (an attack.Job,
// a Finisher and a DescriptorUser). Build it with [New]; it runs once. It
// is not safe for concurrent use.
type Job struct {
	cfg      Config
	search   *capacity.Search
	segments []Segment
	result   capacity.Result
}

// New returns the job of cfg, or what makes cfg unusable (a
// *capacity.TooFewSourcesError when Sources cannot spread the highest rate).
func New(cfg Config) (*Job, error) {
	o := cfg.Search
	o.Sources = max(len(cfg.Sources), 1)
	if cfg.ThroughLimit {
		o.Limit, o.Window = 0, 0
	}
	s, err := capacity.NewSearch(o)
	if err != nil {
		return nil, err
	}
	cfg.Search = o
	return &Job{cfg: cfg, search: s, result: s.Result()}, nil
}

// Result returns the search's outcome (inconclusive before it ran).
func (j *Job) Result() capacity.Result { return j.result }

// Duration estimates the search's length: the steps a ramp and a
// bisection to the precision take, and the re-measure, each at full length.
func (j *Job) Duration() time.Duration {
	o := j.cfg.Search
	factor, prec := or(o.Factor, 2), or(o.Precision, 0.05)
	ramp := math.Ceil(math.Log(o.MaxRate/o.StartRate)/math.Log(factor)) + 1
	bisect := math.Ceil(math.Log2(math.Log(factor) / math.Log1p(prec)))
	step := time.Duration(or(float64(o.Step), float64(5*time.Second)) + max(float64(o.Warmup), float64(time.Second)))
	return time.Duration(min(ramp+bisect+1, float64(or(float64(o.MaxSteps), 30)))) * step
}

// or is v, or d when v is zero.
func or(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

// Descriptors implements attack.DescriptorUser: a connection per source,
// and as many more as the highest rate keeps in flight at twice the
// objective, doubled when the target is in this process too.
func (j *Job) Descriptors(embedded bool) int {
	o := j.cfg.Search
	conns := len(j.cfg.Sources) + int(math.Ceil(o.MaxRate*2*o.Objective.SLO.Max.Seconds()))
	if embedded {
		conns *= 2
	}
	return conns + attack.DescriptorMargin
}

// Info implements attack.Job.
func (j *Job) Info() archive.RunInfo {
	limit, window := j.cfg.Search.Limit, j.cfg.Search.Window
	var srcs []string
	for _, s := range j.cfg.Sources {
		if s != "" {
			srcs = append(srcs, s)
		}
	}
	return archive.RunInfo{Profile: "capacity", WindowMS: j.cfg.Window.Milliseconds(), Sources: srcs,
		Policy: archive.PolicyInfo{Surface: j.cfg.Surface, Limit: limit, WindowMS: window.Milliseconds()}}
}

// Finish implements attack.Finisher: run.json's capacity section holds
// the search's configuration, every segment's schedule and the result.
func (j *Job) Finish(info *archive.RunInfo) {
	res := j.result
	ci := infoOf(j.cfg)
	ci.Segments, ci.Result = j.segments, &res
	info.Capacity, _ = json.Marshal(ci)
}

// Run implements attack.Job: it runs the search step by step until it is
// done or ctx ends (a step cut short is recorded as not judged).
func (j *Job) Run(ctx context.Context, target string, sink func(*vegeta.Result) error) error {
	s := newSenders(j.cfg, target)
	var st *capacity.Stats
	k := 0
	for step, ok := j.search.Next(); ok && ctx.Err() == nil; step, ok = j.search.Next() {
		if step.Continue {
			k++
		} else {
			st, k = capacity.NewStats(), 0
		}
		j.segments = append(j.segments, j.segment(step, k))
		seg := &j.segments[len(j.segments)-1]
		if err := s.send(ctx, seg, st, sink); err != nil {
			seg.Unjudged = true
			j.result = j.search.Result()
			return err
		}
		if ctx.Err() != nil {
			seg.Unjudged = true
			break
		}
		r, _ := j.search.Record(st)
		next, more := j.search.Next()
		if j.cfg.Events != nil {
			j.cfg.Events(StepDone{Segment: *seg, Result: r, Lengthen: more && next.Continue})
		}
	}
	j.result = j.search.Result()
	return nil
}

// segment plans the segment of step, the k-th lengthening when k > 0.
func (j *Job) segment(step capacity.Step, k int) Segment {
	n := max(step.Sources, 1)
	srcs := append([]string{}, j.cfg.Sources[:min(n, len(j.cfg.Sources))]...)
	if len(srcs) == 0 {
		srcs = []string{""}
	}
	return Segment{Step: step.Index, Phase: step.Phase, Continue: step.Continue, Stream: streamName(step.Index, k),
		RateRPS: step.Rate, WarmupMS: msOf(step.Warmup), DurationMS: msOf(step.Duration),
		Sources: srcs, PerSourceRPS: step.Rate / float64(len(srcs))}
}

// msOf returns d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// senders hold what each source keeps across steps: its HTTP client
// (and so its connections) and its targeter.
type senders struct {
	cfg       Config
	target    string
	clients   map[string]*http.Client
	targeters map[string]vegeta.Targeter
	ids       atomic.Uint64
	stream    *scenario.Stream
}

func newSenders(cfg Config, target string) *senders {
	return &senders{cfg: cfg, target: target, clients: map[string]*http.Client{}, targeters: map[string]vegeta.Targeter{},
		stream: &scenario.Stream{Name: "capacity", Surface: cfg.Surface, Requests: requests(cfg.Surface)}}
}

// requests are what a search sends on a surface, in turn: the REST
// search and a page; on MCP the same as tools.
func requests(surface string) []scenario.Request {
	if surface == method.MCP {
		return []scenario.Request{
			{RPC: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits", "limit": 5}}},
			{RPC: "tools/call", Params: map[string]any{"name": "get_page", "arguments": map[string]any{"ref": "errors-and-retries"}}},
		}
	}
	return []scenario.Request{
		{Path: "/api/public/search", Query: map[string]string{"q": "rate limits", "limit": "5"}},
		{Path: "/api/public/pages/errors-and-retries"},
	}
}

// of returns the client and targeter of source src, made once.
func (s *senders) of(src string) (*http.Client, vegeta.Targeter, error) {
	if c, ok := s.clients[src]; ok {
		return c, s.targeters[src], nil
	}
	timeout := s.cfg.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	tr, err := attack.SpeakingTargeter(s.stream, s.target, nil, &s.ids, s.cfg.ClientVersion, "", nil)
	if err != nil {
		return nil, nil, err
	}
	s.clients[src], s.targeters[src] = s.cfg.Network.Client(src, timeout), tr
	return s.clients[src], tr, nil
}

// indexed is a result with the index of its source in the segment.
type indexed struct {
	j int
	r *vegeta.Result
}

// send runs one segment: an attacker per source, each paced at its share
// with its offset; every result goes to sink and, past the warm-up, to st.
// It returns once every result is in.
func (s *senders) send(ctx context.Context, seg *Segment, st *capacity.Stats, sink func(*vegeta.Result) error) error {
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	out := make(chan indexed, 1024)
	var wg sync.WaitGroup
	start := time.Now().Add(20 * time.Millisecond) // every attacker set up before the first hit
	seg.Start = start.Round(0)
	for i, src := range seg.Sources {
		c, tr, err := s.of(src)
		if err != nil {
			halt()
			return err
		}
		opts := []func(*vegeta.Attacker){vegeta.Client(c), vegeta.Workers(1), vegeta.MaxBody(attack.DefaultMaxBody)}
		if s.cfg.MaxWorkers > 0 {
			opts = append(opts, vegeta.MaxWorkers(s.cfg.MaxWorkers))
		}
		p := &pacer{seg: seg, j: i, count: seg.Count(i), stop: stop, start: start}
		ch := vegeta.NewAttacker(opts...).Attack(tr, p, 0, archive.Label(s.cfg.Surface, src, seg.Stream))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range ch {
				out <- indexed{i, r}
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	var sinkErr error
	done := ctx.Done()
	for {
		select {
		case <-done:
			halt()
			done = nil
		case x, ok := <-out:
			if !ok {
				halt()
				return sinkErr
			}
			if smp, judged := sampleOf(seg, x.j, x.r, s.cfg.ThroughLimit); judged {
				st.Add(smp)
			}
			if sinkErr == nil {
				if sinkErr = sink(x.r); sinkErr != nil {
					halt()
				}
			}
		}
	}
}

// sampleOf is the sample of result r of source j in seg, and whether it
// is judged (past the warm-up). Sent and done are wall-clock times, as
// the archive keeps them, so that Replay computes the same.
func sampleOf(seg *Segment, j int, r *vegeta.Result, throughLimit bool) (capacity.Sample, bool) {
	sent := r.Timestamp.Round(0)
	refused := r.Code == http.StatusTooManyRequests
	failed := r.Code < 200 || r.Code > 299
	if throughLimit && refused {
		refused, failed = false, false
	}
	return capacity.Sample{Intended: seg.Intended(j, r.Seq), Sent: sent, Done: sent.Add(r.Latency), Failed: failed, Refused: refused},
		seg.Judged(j, r.Seq)
}
