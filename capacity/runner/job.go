package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Config configures a [Job]. Search, Surface and Sources are required;
// the zero values of the others are documented on each.
type Config struct {
	// Search configures the knee search; its Sources is set from Sources.
	// Its Window is the run's, recorded in run.json; ThroughLimit makes a
	// 429 an answer like any other, not a failure.
	Search capacity.Options
	// Surface is method.REST or method.MCP.
	Surface string
	// Sources are the source addresses, at least as many as the highest
	// rate needs; a step of k sources sends from the first k ("": the
	// system's choice, for a single source).
	Sources []string
	// Keys, when set, are the credentials the search spreads its load over
	// in place of addresses (a limit counted per API key): a step of k
	// sources sends as the first k, every one from Sources[0] (none: the
	// system's address), each labelled by its name, never its value.
	Keys []Key
	// Requests, when set, are what the search sends, in turn (a
	// contract's route); nil: the surface's search and a page.
	Requests []scenario.Request
	// Timeout bounds each request (0: 10 s).
	Timeout time.Duration
	// Network is how requests reach the target (nil: HTTP/1.1).
	Network *client.Network
	// MaxWorkers caps the requests each source has in flight (0: none,
	// the open model). A capped source sends late when the target is slow.
	MaxWorkers uint64
	// ClientVersion is the version MCP requests name in their clientInfo.
	ClientVersion string
	// MCP, when set, settles the MCP revision against the target before
	// an MCP search (from its own address, never a source's), and the
	// search's calls speak it (nil: the newest revision, stateless).
	MCP *attack.MCPSession
	// Events, when set, is told of every judged step.
	Events func(StepDone)
	// Shard, when split (N > 1), makes this job shard I of a search sent
	// by N processes in lockstep: each runs the same search with the same
	// options, sends every step's 1/N from Sources (its own), and judges
	// the step from every shard's samples, handed over in Rendezvous. The
	// zero value is the whole search in one process.
	Shard attack.Shard
	// Rendezvous is the folder the shards share (required with Shard).
	Rendezvous string
	// StartAt is the instant the shards agreed on (required with Shard):
	// the first segment starts Gap after it, and every next one Gap after
	// the latest shard finished the one before.
	StartAt time.Time
	// Gap is that pause (0: DefaultGap); Slack is how long past a
	// segment's scheduled end and Timeout a shard waits for the others'
	// reports before it gives up on them (0: DefaultSlack).
	Gap, Slack time.Duration
}

// A Key is one credential of Config.Keys: its name, and the headers it
// is sent as.
type Key struct {
	Name   string
	Header http.Header
}

// spread returns the names the search spreads its steps over: the keys',
// or else the source addresses.
func (cfg *Config) spread() []string {
	if len(cfg.Keys) == 0 {
		return cfg.Sources
	}
	names := make([]string, len(cfg.Keys))
	for i, k := range cfg.Keys {
		names[i] = k.Name
	}
	return names
}

// sharded reports whether cfg is one shard of a search split over several.
func (cfg *Config) sharded() bool { return cfg.Shard.Split() }

// StepDone says a step (or one lengthening of it) was judged.
type StepDone struct {
	// Segment is what was sent.
	Segment archive.CapacitySegment
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
	segments []archive.CapacitySegment
	result   capacity.Result
	meet     *rendezvous // nil: not sharded
	reported int         // segments this shard reported to the others
	// released holds, per segment, when (after its start) its last hit
	// was handed to an attacker: zero when some never were (a cut). A
	// failure proved after it had nothing left to cut, however late a
	// starved host then sent those hits.
	released []time.Duration
}

// New returns the job of cfg, or what makes cfg unusable (a
// *capacity.TooFewSourcesError when Sources cannot spread the highest
// rate, or this shard's share of it).
func New(cfg Config) (*Job, error) {
	o := cfg.Search
	o.Shards = max(cfg.Shard.N, 1)
	o.Sources = max(len(cfg.spread()), 1) * o.Shards
	if cfg.sharded() && (cfg.Rendezvous == "" || cfg.StartAt.IsZero()) {
		return nil, fmt.Errorf("shard %v: a sharded search needs a rendezvous folder and an agreed start", cfg.Shard)
	}
	s, err := capacity.NewSearch(o)
	if err != nil {
		return nil, err
	}
	cfg.Search, cfg.StartAt = o, cfg.StartAt.Round(0) // the wall-clock instant every shard agreed on
	j := &Job{cfg: cfg, search: s, result: s.Result()}
	if cfg.sharded() {
		j.meet = &rendezvous{dir: cfg.Rendezvous, shard: cfg.Shard, startAt: cfg.StartAt}
	}
	return j, nil
}

// Negotiate implements attack.Negotiator: an MCP search with an
// MCPSession settles the revision before it runs.
func (j *Job) Negotiate(ctx context.Context, target string) (*attack.Negotiation, error) {
	if j.cfg.MCP == nil || j.cfg.Surface != method.MCP {
		return nil, nil
	}
	return j.cfg.MCP.Negotiate(ctx, target)
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
func or[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}

// Descriptors implements attack.DescriptorUser: a connection per source,
// and as many more as the highest rate (this shard's share of it) keeps in
// flight at twice the objective, doubled when the target is in this
// process too.
func (j *Job) Descriptors(embedded bool) int {
	o := j.cfg.Search
	conns := len(j.cfg.Sources) + int(math.Ceil(o.MaxRate/float64(max(o.Shards, 1))*2*o.Objective.SLO.Max.Seconds()))
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
	return archive.RunInfo{Profile: "capacity", WindowMS: clock.WholeMs(window), Sources: srcs,
		Policy: archive.PolicyInfo{Surface: j.cfg.Surface, Limit: limit, WindowMS: clock.WholeMs(window)}}
}

// Finish implements attack.Finisher: run.json's capacity section holds
// the search's configuration, every segment's schedule and the result.
func (j *Job) Finish(info *archive.RunInfo) {
	if j.cfg.Surface == method.MCP {
		j.cfg.MCP.Wait()
		j.cfg.MCP.Record(info)
	}
	res := j.result
	ci := infoOf(j.cfg)
	ci.Segments, ci.Result = j.segments, &res
	if j.cfg.sharded() {
		ci.Shard, ci.Rendezvous = j.cfg.Shard.String(), j.cfg.Rendezvous
	}
	info.Capacity, _ = json.Marshal(ci)
}

// Run implements attack.Job: it runs the search step by step until it is
// done or ctx ends (a step cut short is recorded as not judged). A shard
// of a sharded search judges every segment from all the shards' reports,
// and returns an error naming the shard and the step when one of them
// fails it (missing at the deadline, stopped, or running another search).
func (j *Job) Run(ctx context.Context, target string, sink func(archive.Result) error) (err error) {
	s := newSenders(j.cfg, target)
	var st *capacity.Stats
	var start time.Time // zero: as soon as the attackers are set up
	if j.meet != nil {
		start = j.cfg.StartAt.Add(or(j.cfg.Gap, DefaultGap))
		defer func() { j.abandon(ctx, err) }()
	}
	k := 0
	for step, ok := j.search.Next(); ok && ctx.Err() == nil; step, ok = j.search.Next() {
		if step.Continue {
			k++
		} else {
			st, k = capacity.NewStats(), 0
		}
		j.segments = append(j.segments, j.segment(step, k))
		seg := &j.segments[len(j.segments)-1]
		got, err := j.runSegment(ctx, s, seg, start, sink)
		if err != nil || got == nil {
			seg.Unjudged = true
			j.result = j.search.Result()
			return err
		}
		st.Merge(got.stats)
		start = got.next
		r, _ := j.search.Record(st)
		next, more := j.search.Next()
		if j.cfg.Events != nil {
			j.cfg.Events(StepDone{Segment: *seg, Result: r, Lengthen: more && next.Continue})
		}
	}
	j.result = j.search.Result()
	return nil
}

// judged is a segment's samples to judge, of every shard, and when the
// next segment starts (zero: as soon as its attackers are set up).
type judged struct {
	stats *capacity.Stats
	next  time.Time
}

// runSegment sends seg from start (zero: at once) and returns what to
// judge of it: its own samples, or in a sharded search every shard's.
// Neither (nil, nil) when ctx ended.
func (j *Job) runSegment(ctx context.Context, s *senders, seg *archive.CapacitySegment, start time.Time, sink func(archive.Result) error) (*judged, error) {
	own := capacity.NewStats()
	host := newHostMeter()
	released, err := s.send(ctx, seg, own, sink, start)
	seg.HostWaits = host.Stop()
	own.HostWaits(seg.HostWaits)
	j.released = append(j.released, released)
	if err != nil || ctx.Err() != nil {
		return nil, err
	}
	if j.meet == nil {
		return &judged{stats: own}, nil
	}
	r := report{Segment: len(j.segments) - 1, Step: seg.Step, Stream: seg.Stream, RateRPS: seg.RateRPS, Continue: seg.Continue,
		Finished: time.Now().Round(0), Stats: own}
	if err := j.meet.write(r); err != nil {
		return nil, err
	}
	j.reported++
	deadline := seg.Start.Add(seg.Length() + or(j.cfg.Timeout, 10*time.Second) + or(j.cfg.Slack, DefaultSlack))
	reports, err := j.meet.wait(ctx, r, deadline)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, err
	}
	st, next := merge(reports, or(j.cfg.Gap, DefaultGap))
	return &judged{stats: st, next: next}, nil
}

// abandon tells the other shards, when this one stops before the search
// is done, why: a report with the reason in place of the segment it did
// not report, so that they stop at once rather than wait it out.
func (j *Job) abandon(ctx context.Context, err error) {
	if j.search.Done() {
		return
	}
	reason := "interrupted"
	if err != nil {
		reason = err.Error()
	} else if ctx.Err() == nil {
		return
	}
	r := report{Segment: j.reported, Error: reason}
	if j.reported < len(j.segments) {
		g := j.segments[j.reported]
		r.Step, r.Stream, r.RateRPS, r.Continue = g.Step, g.Stream, g.RateRPS, g.Continue
	}
	j.meet.write(r) // best effort: without it, the others wait out their deadline
}

// segment plans the segment of step, the k-th lengthening when k > 0.
func (j *Job) segment(step capacity.Step, k int) archive.CapacitySegment {
	n := max(step.Sources/max(j.cfg.Shard.N, 1), 1)
	spread := j.cfg.spread()
	srcs := append([]string{}, spread[:min(n, len(spread))]...)
	if len(srcs) == 0 {
		srcs = []string{""}
	}
	g := archive.CapacitySegment{Step: step.Index, Phase: step.Phase, Continue: step.Continue, Stream: streamName(step.Index, k),
		RateRPS: step.Rate, WarmupMS: clock.Ms(step.Warmup), DurationMS: clock.Ms(step.Duration),
		Sources: srcs, PerSourceRPS: step.Rate / float64(len(srcs))}
	if j.cfg.sharded() {
		g.ShardIndex, g.Shards = j.cfg.Shard.I, j.cfg.Shard.N
		g.PerSourceRPS /= float64(g.Shards)
	}
	return g
}

// senders hold what each source keeps across steps: its HTTP client
// (and so its connections) and its targeter.
type senders struct {
	cfg       Config
	target    string
	clients   map[string]*http.Client
	targeters map[string]vegeta.Targeter
	sessions  map[string]bool // the sources whose calls carry an MCP session
	ids       atomic.Uint64
	stream    *scenario.Stream
}

func newSenders(cfg Config, target string) *senders {
	reqs := cfg.Requests
	if reqs == nil {
		reqs = requests(cfg.Surface)
	}
	return &senders{cfg: cfg, target: target, clients: map[string]*http.Client{}, targeters: map[string]vegeta.Targeter{}, sessions: map[string]bool{},
		stream: &scenario.Stream{Name: "capacity", Surface: cfg.Surface, Requests: reqs}}
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
	addr, hdr := s.addrOf(src)
	var rev string
	var sid *atomic.Pointer[client.Session]
	if s.cfg.Surface == method.MCP {
		rev, sid = s.cfg.MCP.Speech(addr)
		s.sessions[src] = sid != nil
	}
	tr, err := attack.SpeakingTargeter(s.stream, s.target, hdr, &s.ids, s.cfg.ClientVersion, rev, sid)
	if err != nil {
		return nil, nil, err
	}
	s.clients[src], s.targeters[src] = s.network().Client(addr, timeout), tr
	return s.clients[src], tr, nil
}

// addrOf returns the address src sends from and the headers it sends
// as: src names a key of the search (sent from Sources[0], or the
// system's address), or is the address.
func (s *senders) addrOf(src string) (string, http.Header) {
	i := slices.IndexFunc(s.cfg.Keys, func(k Key) bool { return k.Name == src })
	switch {
	case i < 0:
		return src, nil
	case len(s.cfg.Sources) > 0:
		return s.cfg.Sources[0], s.cfg.Keys[i].Header
	}
	return "", s.cfg.Keys[i].Header
}

// network is the job's network with, unless the caller capped them, the
// connections per source capped at what its highest rate keeps in flight
// at twice the objective (L/W per source at most, or the highest rate from
// one address through the limit), as Descriptors counts them: an
// overloaded step's requests then wait for a connection, and fail the
// objective, instead of opening one each until memory and descriptors
// run out.
func (s *senders) network() *client.Network {
	var nw client.Network
	if s.cfg.Network != nil {
		nw = *s.cfg.Network
	}
	if nw.MaxConnections > 0 {
		return &nw
	}
	o := s.cfg.Search
	perSource := o.MaxRate
	if o.Limit > 0 && o.Window > 0 && !o.ThroughLimit {
		perSource = min(perSource, float64(o.Limit)/o.Window.Seconds())
	}
	nw.MaxConnections = int(math.Ceil(perSource*2*o.Objective.SLO.Max.Seconds())) + 2
	return &nw
}

// send runs one segment: an attacker per source, each paced at its share
// with its offset, sent through attack.Send as every job is; every result
// goes to sink and, past the warm-up, to st. The schedule begins at begin
// (zero: once every attacker is set up). It returns once every result is
// in, with when (after the start) the last hit was handed to an attacker,
// zero if some never were.
func (s *senders) send(ctx context.Context, seg *archive.CapacitySegment, st *capacity.Stats, sink func(archive.Result) error, begin time.Time) (time.Duration, error) {
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	defer halt()
	start := time.Now().Add(20 * time.Millisecond) // every attacker set up before the first hit
	if !begin.IsZero() {
		now := time.Now()
		start = now.Add(begin.Sub(now)) // the agreed instant to the nanosecond, with a monotonic reading
	}
	seg.Start = start.Round(0)
	cut := newCutter(seg, s.cfg.Search, s.cfg.sharded())
	var unsent atomic.Int64 // sources with hits still to send
	unsent.Store(int64(len(seg.Sources)))
	var released atomic.Int64 // when the last source handed out its last hit
	senders := make([]attack.Sender, len(seg.Sources))
	for i, src := range seg.Sources {
		c, tr, err := s.of(src)
		if err != nil {
			return 0, err
		}
		p := &pacer{seg: seg, j: i, count: seg.Count(i), stop: stop, start: start, unsent: &unsent, released: &released}
		atk := attack.NewAttacker(attack.AttackerOptions{Client: c, Workers: 1, MaxWorkers: s.cfg.MaxWorkers})
		source := src
		if source == "" {
			source = archive.DefaultSource
		}
		senders[i] = attack.Sender{Attacker: atk, Targeter: tr, Pacer: p, Labels: archive.Labels{Surface: s.cfg.Surface, Source: source, Stream: seg.Stream}}
	}
	err := attack.Send(ctx, senders, halt, func(j int, r archive.Result) error {
		if smp, judged := sampleOf(seg, j, r.Result, s.cfg.Search.ThroughLimit); judged {
			st.Add(smp)
			// A failure proved once every hit is sent cuts nothing: the
			// segment is judged whole and says no cut.
			if cut.came(smp) && seg.CutMS == 0 && unsent.Load() > 0 {
				seg.CutMS = max(clock.Ms(time.Since(start)), 1e-3)
				halt()
			}
		}
		if r.Code == http.StatusNotFound && s.sessions[seg.Sources[j]] {
			addr, _ := s.addrOf(seg.Sources[j])
			s.cfg.MCP.Ended(ctx, addr, r.Timestamp) // a new session for the address, from it
		}
		return sink(r)
	})
	return time.Duration(released.Load()), err
}

// sampleOf is the sample of result r of source j in seg, and whether it
// is judged (past the warm-up). Sent and done are wall-clock times, as
// the archive keeps them, so that Replay computes the same.
func sampleOf(seg *archive.CapacitySegment, j int, r *vegeta.Result, throughLimit bool) (capacity.Sample, bool) {
	sent := r.Timestamp.Round(0)
	refused := r.Code == http.StatusTooManyRequests
	failed := r.Code < 200 || r.Code > 299
	if throughLimit && refused {
		refused, failed = false, false
	}
	return capacity.Sample{Intended: seg.Intended(j, r.Seq), Sent: sent, Done: sent.Add(r.Latency), Failed: failed, Refused: refused},
		seg.Judged(j, r.Seq)
}
