package attack

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/attack/schedule"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/redact"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// DefaultMaxBody is how much of each response body is kept: enough for an
// error object, never a whole documentation page.
const DefaultMaxBody = 1024

// Plan is a profile bound to a window, ready to run against a target. It
// is a Job of the Engine.
type Plan struct {
	Profile *scenario.Profile
	// Window is the run's window: every span written in w is a multiple of it.
	Window time.Duration
	// Headers are added to every request (after the profile's).
	Headers http.Header
	// Timeout bounds each request; zero means the profile's or 10 s.
	Timeout time.Duration
	// MaxBody caps the bytes of each response body kept (default DefaultMaxBody).
	MaxBody int64
	// Shard is the part of the attack this machine sends (zero: all).
	Shard Shard
	// ClientVersion is the version MCP requests name in their clientInfo.
	ClientVersion string
	// MCP, when set, settles the MCP revision before the run (see
	// [Plan.Negotiate]) and speaks it in every MCP request (nil:
	// [mcpwire.Latest], no negotiation).
	MCP *MCPSession
	// Network is how requests reach the target: TLS, HTTP version,
	// connection pool (nil: HTTP/1.1, the system's roots, Vegeta's pool).
	// Each stream from each source has a transport of its own, as each
	// Vegeta attacker does.
	Network *client.Network
	// MaxWorkers caps the requests each stream from each source has in
	// flight (Vegeta's -max-workers; 0: no cap). A stream that reaches it
	// sends late: Behind says how late.
	MaxWorkers uint64
	// Behind, when set, records how far the run fell behind its schedule.
	Behind *Behind
	// FollowUp, when set, holds streams back until the rest is answered
	// and sends those it then chooses (see [FollowUp]).
	FollowUp *FollowUp
	// Refusals are, by surface, the statuses a contract's limits refuse
	// with (nginx's limit_req refuses with 503 by default): the failure
	// guard takes them for answers, not for a failing target.
	Refusals map[string]uint16
}

// ScriptedFault implements [FaultScripter]: a 5xx that is a limit's
// refusal (Plan.Refusals) is what the target answers on purpose.
func (pl Plan) ScriptedFault(r archive.Result) bool {
	s, ok := pl.Refusals[r.Labels.Surface]
	return ok && r.Code == s
}

// lateAfter is how late a request must go out, after its planned time, to
// count as late in [Behind]: well above a timer's jitter.
const lateAfter = 10 * time.Millisecond

// Behind records how far an open-model run fell behind its schedule: each
// request that went out after its planned time, as its pacer saw it (a
// stream held at MaxWorkers, or a machine too slow for the plan). The zero
// value is ready; it is safe for concurrent use.
type Behind struct {
	mu sync.Mutex
	// Max is the latest a request went out after its planned time, and
	// Stream and Source say whose; Late counts the requests more than
	// lateAfter late, of Sent.
	Max            time.Duration
	Stream, Source string
	Late, Sent     int
}

// add records that a request of stream from source went out lag after
// its planned time.
func (b *Behind) add(stream, source string, lag time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Sent++
	if lag > lateAfter {
		b.Late++
	}
	if lag > b.Max {
		b.Max, b.Stream, b.Source = lag, stream, source
	}
}

// Fell reports whether any request went out more than LateAfter late.
func (b *Behind) Fell() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Late > 0
}

// String says how far behind the run fell.
func (b *Behind) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	from := ""
	if b.Source != "" {
		from = " from " + b.Source
	}
	return fmt.Sprintf("%d of %d requests went out more than %v after their planned time, the latest %v late (stream %s%s)",
		b.Late, b.Sent, lateAfter, b.Max.Round(time.Millisecond), b.Stream, from)
}

// Negotiate implements [Negotiator]: when the plan sends MCP requests and
// has an MCPSession, it settles the revision against target before the
// run.
func (pl Plan) Negotiate(ctx context.Context, target string) (*Negotiation, error) {
	if pl.MCP == nil || !speaksMCP(pl.Profile) {
		return nil, nil
	}
	return pl.MCP.Negotiate(ctx, target)
}

// Finish implements [Finisher]: run.json records the
// MCP revision spoken and the handshakes it took, and how far the run
// fell behind its schedule (see Behind).
func (pl Plan) Finish(info *archive.RunInfo) {
	pl.MCP.Wait()
	pl.MCP.Record(info)
	if pl.Behind != nil && pl.Behind.Fell() {
		pl.Behind.mu.Lock()
		info.BehindMS, info.LateRequests = clock.Ms(pl.Behind.Max), pl.Behind.Late
		pl.Behind.mu.Unlock()
	}
	if pl.FollowUp != nil {
		info.FollowUps = pl.FollowUp.said
	}
}

// unit is one attacker: one stream from one source.
type unit struct {
	stream *scenario.Stream
	source string
	pacer  schedule.Pacer
	labels archive.Labels
	lag    time.Duration // the stream's Lag
}

func (pl Plan) units() []unit {
	var us []unit
	for i := range pl.Profile.Streams {
		s := &pl.Profile.Streams[i]
		srcs := pl.Profile.StreamSources(s)
		sched := s.Pacer.Schedule(pl.Window)
		for j, src := range srcs {
			ok, J, K := pl.Shard.take(j, len(srcs))
			if !ok {
				continue
			}
			label := src
			if s.Key != "" {
				label = s.Key
			}
			if label == "" && pl.Shard.Split() {
				label = fmt.Sprintf("shard-%d", pl.Shard.I)
			}
			if label == "" {
				label = archive.DefaultSource
			}
			us = append(us, unit{stream: s, source: src, labels: archive.Labels{Surface: s.Surface, Source: label, Stream: s.Name}, lag: s.Lag.In(pl.Window),
				pacer: schedule.Pacer{Sched: sched, Offset: s.Start.In(pl.Window), K: K, J: J}})
		}
	}
	return us
}

// unitsOf returns the units of stream s.
func unitsOf(units []unit, s *scenario.Stream) []unit {
	var out []unit
	for _, u := range units {
		if u.stream == s {
			out = append(out, u)
		}
	}
	return out
}

// A Unit is one attacker of a plan: one stream from one source, with the
// labels its results carry and the targeter of its requests.
type Unit struct {
	Stream *scenario.Stream
	// Source is the address it sends from ("": the system's choice).
	Source string
	// Labels label its results; Label is their string, which Vegeta
	// writes in each result's Attack (Labels.String).
	Labels   archive.Labels
	Label    string
	Targeter vegeta.Targeter
}

// Units returns the plan's units against target (a base URL), in the
// order of the streams of the timeline that paces them, and that
// timeline: the engine sends them on the real clock, a simulation on a
// virtual one. MCP requests speak the revision the plan negotiated.
func (pl Plan) Units(target string) ([]Unit, *timeline.Timeline, error) {
	units := pl.units()
	targeters, _, err := pl.targeters(target, units)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Unit, len(units))
	for i, u := range units {
		out[i] = Unit{Stream: u.stream, Source: u.source, Labels: u.labels, Label: u.labels.String(), Targeter: targeters[i]}
	}
	return out, pl.timeline(units), nil
}

// Duration returns the planned length of the run: the latest planned send
// time over all streams but those held for a follow-up, saturating at the
// longest duration.
func (pl Plan) Duration() time.Duration {
	var d time.Duration
	for i := range pl.Profile.Streams {
		s := &pl.Profile.Streams[i]
		if !pl.held(s.Surface, s.Name) {
			d = max(d, schedule.SatAdd(s.Start.In(pl.Window), schedule.Planned(s.Pacer.Schedule(pl.Window))))
		}
	}
	return d
}

// Info describes the plan for run.json.
func (pl Plan) Info() archive.RunInfo {
	p := pl.Profile
	info := archive.RunInfo{Profile: p.Name, WindowMS: clock.WholeMs(pl.Window),
		Policy:  archive.PolicyInfo{Surface: p.Policy.Surface, Limit: p.Policy.Limit, WindowMS: clock.WholeMs(p.Policy.Window.In(pl.Window))},
		Headers: redact.Header(pl.headers())}
	pl.MCP.Record(&info)
	if pl.Shard.Split() {
		info.Shard = pl.Shard.String()
	}
	units := pl.units()
	for i := range p.Streams {
		s := &p.Streams[i]
		si := archive.StreamInfo{Name: s.Name, Surface: s.Surface, Pacer: s.Pacer.Type, StartMS: clock.WholeMs(s.Start.In(pl.Window)), As: s.As}
		for _, u := range unitsOf(units, s) {
			si.Sources = append(si.Sources, u.source)
			si.Planned += u.pacer.Count()
			if u.source != "" && !slices.Contains(info.Sources, u.source) {
				info.Sources = append(info.Sources, u.source)
			}
		}
		info.Streams = append(info.Streams, si)
	}
	return info
}

// headers returns the profile's headers with the plan's on top.
func (pl Plan) headers() http.Header {
	h := http.Header{}
	for k, v := range pl.Profile.Headers {
		h.Set(k, v)
	}
	for k, vs := range pl.Headers {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	return h
}

// Run attacks target (a base URL such as http://127.0.0.1:8080) as
// planned and hands every result to sink, with its unit's labels, from a
// single goroutine, as it arrives. When ctx is done the attackers stop at
// once, streams waiting to start, behind a gate or for their next hit
// included (nothing more is sent), and every result already in flight is
// still handed over before Run returns. A sink error stops the attack and
// is returned.
func (pl Plan) Run(ctx context.Context, target string, sink func(archive.Result) error) error {
	units := pl.units()
	targeters, sessionOf, err := pl.targeters(target, units)
	if err != nil {
		return err
	}
	attackers, clients := pl.attackers(units)
	c := &clocked{tl: pl.timeline(units), changed: make(chan struct{}), stop: make(chan struct{}), fu: pl.FollowUp}
	senders := make([]Sender, len(units))
	for i, u := range units {
		p := &pacer{c: c, i: i, rate: u.pacer}
		if pl.Behind != nil {
			p.behind = func(lag time.Duration) { pl.Behind.add(u.stream.Name, u.source, lag) }
		}
		senders[i] = Sender{Attacker: attackers[i], Targeter: targeters[i], Pacer: p, Labels: u.labels}
		if u.stream.Group == "" {
			// A group's client is closed with the run, not when one of
			// its streams ends: the others' next requests would dial
			// afresh, by their stream again.
			senders[i].Client = clients[i]
		}
	}
	c.origin = time.Now()
	if c.tl.Deciding() {
		c.decide() // nothing else to wait for
	}
	return Send(ctx, senders, c.abort, func(i int, r archive.Result) error {
		c.answered(i, r)
		if r.Code == http.StatusNotFound && len(sessionOf) > 0 {
			if src, ok := sessionOf[i]; ok {
				pl.MCP.Ended(ctx, src, r.Timestamp)
			}
		}
		return sink(r)
	})
}

// timeline returns the timeline of the plan's units, in their order: each
// keyed by its stream's surface and name, waiting for the streams its
// After names (see scenario.Profile.AfterKey), held when the plan's
// follow-up holds its stream.
func (pl Plan) timeline(units []unit) *timeline.Timeline {
	streams := make([]timeline.Stream, len(units))
	for i, u := range units {
		s := u.stream
		ts := timeline.Stream{Key: s.Surface + "/" + s.Name, Due: u.pacer.Due, Start: u.pacer.Offset, Count: u.pacer.Count(),
			Lag: u.lag, Held: pl.held(s.Surface, s.Name), Group: s.Group}
		for _, a := range s.After {
			ts.After = append(ts.After, pl.Profile.AfterKey(s, a))
		}
		streams[i] = ts
	}
	return timeline.New(pl.Window, streams)
}

// timeout is how long each request may take.
func (pl Plan) timeout() time.Duration {
	timeout := pl.Timeout
	if timeout == 0 {
		timeout = pl.Profile.Timeout.In(pl.Window)
	}
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	return timeout
}

// targeters returns a targeter of target per unit, and sessionOf, which
// maps the index of a unit that carries an MCP session to its source: a
// 404 to it gets that source a session of its own.
func (pl Plan) targeters(target string, units []unit) (targeters []vegeta.Targeter, sessionOf map[int]string, err error) {
	var ids atomic.Uint64
	hdr := pl.headers()
	targeters = make([]vegeta.Targeter, len(units))
	sessionOf = map[int]string{}
	for i, u := range units {
		var rev string
		var sid *atomic.Pointer[client.Session]
		if u.stream.Sent() == method.MCP {
			rev, sid = pl.MCP.Speech(u.source)
			if sid != nil && carriesSession(u.stream) {
				sessionOf[i] = u.source
			}
		}
		tr, err := SpeakingTargeter(u.stream, target, hdr, &ids, pl.ClientVersion, rev, sid)
		if err != nil {
			return nil, nil, err
		}
		targeters[i] = tr
	}
	return targeters, sessionOf, nil
}

// attackers returns an attacker per unit and the HTTP client it sends
// through: a client of its own, but one for every unit of a group from
// one source. A group's streams are compared by how the target answered
// them (verify's forged and plain probes), so they reach it by one
// connection pool: with a pool each, a stream whose earlier requests the
// target held open dials afresh for its next ones while the others reuse
// their idle connections, and a server that accepts new connections
// behind requests on open ones (nginx, one accept per turn of its event
// loop when busy) sees that stream's requests later, by their stream
// rather than their order: nginx's limit_req with delay, holding what it
// admits, then admitted every probe of one forged header and refused
// most plain ones in two suite runs on a loaded host.
func (pl Plan) attackers(units []unit) (attackers []*vegeta.Attacker, clients []*http.Client) {
	attackers = make([]*vegeta.Attacker, len(units))
	clients = make([]*http.Client, len(units))
	shared := map[[2]string]*http.Client{}
	for i, u := range units {
		k := [2]string{u.stream.Group, u.source}
		c := shared[k]
		if c == nil {
			c = pl.Network.Client(u.source, pl.timeout())
			if u.stream.Group != "" {
				shared[k] = c
			}
		}
		clients[i] = c
		// Capped workers start at Vegeta's default or the cap, the fewer;
		// uncapped, at Vegeta's default (min gives 0).
		attackers[i] = NewAttacker(AttackerOptions{Client: clients[i], MaxBody: pl.MaxBody,
			Workers: min(vegeta.DefaultWorkers, pl.MaxWorkers), MaxWorkers: pl.MaxWorkers})
	}
	return attackers, clients
}

// Counts tallies results by outcome. The zero value is ready; it is safe for
// concurrent use.
type Counts struct {
	Sent, OK2xx, TooMany, Other, Errors atomic.Int64
}

// Add counts one result.
func (c *Counts) Add(r *vegeta.Result) {
	c.Sent.Add(1)
	switch {
	case r.Code == 0:
		c.Errors.Add(1)
	case r.Code == http.StatusTooManyRequests:
		c.TooMany.Add(1)
	case r.Code >= 200 && r.Code < 300:
		c.OK2xx.Add(1)
	default:
		c.Other.Add(1)
	}
}

// String is the progress line's tally.
func (c *Counts) String() string {
	return fmt.Sprintf("sent %d  2xx %d  429 %d  other %d  errors %d",
		c.Sent.Load(), c.OK2xx.Load(), c.TooMany.Load(), c.Other.Load(), c.Errors.Load())
}

// Outcomes tallies each stream's results by status for the expect checks.
type Outcomes map[string]map[int]int

// Add records a result under its stream (its labels').
func (o Outcomes) Add(r archive.Result) {
	name := r.Labels.Stream
	if o[name] == nil {
		o[name] = map[int]int{}
	}
	o[name][int(r.Code)]++
}

// Check compares each stream's outcomes with its expect block and returns
// one line per mismatch (none when every expectation holds).
func (o Outcomes) Check(p *scenario.Profile) []string {
	var bad []string
	for _, s := range p.Streams {
		keys := make([]string, 0, len(s.Expect))
		for k := range s.Expect {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			want, got := s.Expect[k], 0
			for code, n := range o[s.Name] {
				if statusMatches(k, code) {
					got += n
				}
			}
			if got != want {
				bad = append(bad, fmt.Sprintf("stream %s: %d × %s, expected %d", s.Name, got, k, want))
			}
		}
	}
	return bad
}

// statusMatches reports whether a status code falls under an expect key.
func statusMatches(key string, code int) bool {
	switch key {
	case "errors":
		return code == 0
	case "other":
		return code != 0 && (code < 200 || code >= 300) && code != http.StatusTooManyRequests
	case "2xx", "3xx", "4xx", "5xx":
		return code/100 == int(key[0]-'0')
	}
	n, _ := strconv.Atoi(key)
	return n == code
}

// PeakRate returns the most requests the plan sends in any one second: per
// stream, the busiest second of its schedule, added up over the streams
// (as if their busiest seconds met, which bounds the real peak). It is
// exact for a stream of up to a million planned requests and an upper
// bound from its highest rate beyond, never a walk over them all.
func (pl Plan) PeakRate() int {
	total := 0
	units := pl.units()
	for i := range pl.Profile.Streams {
		if mine := unitsOf(units, &pl.Profile.Streams[i]); len(mine) > 0 {
			parts := make([]schedule.Pacer, len(mine))
			for j, u := range mine {
				parts[j] = u.pacer
			}
			total = min(total+min(schedule.Busiest(parts, time.Second), math.MaxInt32), math.MaxInt32)
		}
	}
	return total
}
