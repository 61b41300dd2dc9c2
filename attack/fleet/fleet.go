package fleet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Fleet is N retrying clients behind one address (as behind one NAT),
// driven into a shared 429 together: a primer first spends the address's
// budget, then every client sends its first request at the same instant and
// retries by its strategy. Every attempt is a Vegeta result labelled with
// its client, request, attempt and the delay the client drew. It is a Job
// of the Engine. The zero value of every field has a default.
type Fleet struct {
	// Surface is rest (default) or mcp.
	Surface string
	// Clients is the fleet's size (default 100); Requests the logical
	// requests each sends in turn (default 2: the second shows whether the
	// client slowed down).
	Clients, Requests int
	// Backoff, Attempts and SlowDown configure every client; SlowDown is
	// the least pause of a client after a request gave up on repeated 429s.
	Backoff  client.Backoff
	Attempts int
	SlowDown time.Duration
	// Source is the address every client sends from ("": the system's).
	Source string
	// Limit is the surface's limit: the primer sends that many requests.
	Limit int
	// Window is the run's window (the primer's spacing is a share of it).
	Window time.Duration
	// Timeout bounds each attempt (default 10s).
	Timeout time.Duration
	// Seed seeds every client's jitter.
	Seed uint64
	// Rows are failure-table probes (errors.yaml's streams), each sent
	// once, after the fleet, by a client of its own from RowSource: the
	// retry-discipline check (answers are never retried).
	Rows      []scenario.Stream
	RowSource string
	// Epsilon is the collision distance the analysis will use, recorded
	// in run.json (0: Backoff.Base/50).
	Epsilon time.Duration
	// MCP, when set, settles the MCP revision before the run (from its
	// From address: set it to RowSource, never Source) and every MCP
	// request speaks it (nil: [mcpwire.Latest], no negotiation).
	MCP *attack.MCPSession
	// Network is how every request reaches the target (nil: HTTP/1.1,
	// the system's roots). The primer takes its connection pool; each
	// client keeps one connection of its own, as a separate machine would.
	Network *client.Network
	// MaxWorkers caps the primer's requests in flight (0: no cap); the
	// fleet itself is Clients workers.
	MaxWorkers uint64
}

// Negotiate implements [attack.Negotiator]: a fleet that sends MCP
// requests settles the revision before the run.
func (f Fleet) Negotiate(ctx context.Context, target string) (*attack.Negotiation, error) {
	f = f.Defaults()
	mcp := f.Surface == method.MCP
	for _, r := range f.Rows {
		mcp = mcp || r.Surface == method.MCP
	}
	if f.MCP == nil || !mcp {
		return nil, nil
	}
	return f.MCP.Negotiate(ctx, target)
}

// Finish implements [attack.Finisher]: run.json records the
// MCP revision spoken and the handshakes it took.
func (f Fleet) Finish(info *archive.RunInfo) {
	f.MCP.Wait()
	f.MCP.Record(info)
}

// Defaults returns f with its zero fields set.
func (f Fleet) Defaults() Fleet {
	if f.Surface == "" {
		f.Surface = method.REST
	}
	if f.Clients <= 0 {
		f.Clients = 100
	}
	if f.Requests <= 0 {
		f.Requests = 2
	}
	if f.Attempts <= 0 {
		f.Attempts = client.DefaultAttempts
	}
	if f.Window <= 0 {
		f.Window = method.Window
	}
	if f.Backoff.Base <= 0 {
		f.Backoff.Base = f.Window / 60
	}
	if f.Backoff.Cap <= 0 {
		f.Backoff.Cap = f.Window / 2
	}
	f.Backoff = f.Backoff.Defaults()
	if f.SlowDown <= 0 {
		f.SlowDown = 2 * f.Backoff.Base
	}
	if f.Timeout <= 0 {
		f.Timeout = 10 * time.Second
	}
	if f.Epsilon <= 0 {
		f.Epsilon = f.Backoff.Base / 50
	}
	if f.Limit <= 0 {
		f.Limit = method.Limit(f.Surface)
	}
	return f
}

// Duration returns the longest a fleet can run: the primer, then every
// request of a client meeting the slow-down and every attempt at the cap.
func (f Fleet) Duration() time.Duration {
	f = f.Defaults()
	return 2*f.Window/100 + time.Duration(f.Requests)*(f.SlowDown+time.Duration(f.Attempts)*f.Backoff.Cap)
}

// Info describes the fleet for run.json.
func (f Fleet) Info() archive.RunInfo {
	f = f.Defaults()
	var sources []string
	for _, s := range []string{f.Source, f.RowSource} {
		if s != "" {
			sources = append(sources, s)
		}
	}
	info := archive.RunInfo{Profile: "fleet", WindowMS: clock.WholeMs(f.Window),
		Policy: archive.PolicyInfo{Surface: f.Surface, Limit: f.Limit, WindowMS: clock.WholeMs(f.Window)}, Sources: sources,
		Fleet: &archive.FleetInfo{Surface: f.Surface, Source: f.Source, Clients: f.Clients, Requests: f.Requests, Strategy: string(f.Backoff.Strategy),
			BaseMS: clock.Ms(f.Backoff.Base), CapMS: clock.Ms(f.Backoff.Cap), Attempts: f.Attempts, SlowDownMS: clock.Ms(f.SlowDown), EpsilonMS: clock.Ms(f.Epsilon), Rows: len(f.Rows)}}
	f.MCP.Record(&info)
	return info
}

// Run primes the address, runs the fleet against target and hands every
// result to sink, from one goroutine at a time. It returns when every
// client is done or ctx ends (results received so far are handed over
// either way).
func (f Fleet) Run(ctx context.Context, target string, sink func(archive.Result) error) error {
	f = f.Defaults()
	var mu sync.Mutex
	var sinkErr error
	emit := func(r archive.Result) {
		mu.Lock()
		defer mu.Unlock()
		if sinkErr == nil {
			sinkErr = sink(r)
		}
	}
	if err := f.prime(ctx, target, emit); err != nil {
		return err
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range f.Clients {
		c := f.client(target, i, emit)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range f.Requests {
				if ctx.Err() != nil {
					return
				}
				f.request(ctx, c) // the outcome is in the results
			}
		}()
	}
	close(start) // every client's first attempt goes out now
	wg.Wait()
	if err := f.rows(ctx, target, emit); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return sinkErr
}

// prime spends the source's budget with Limit requests over 2 % of the
// window, and waits for their answers. Requests that met a fault (a 5xx, a
// reset) may not have counted, so while none was refused it tops up with
// as many as were not admitted, a few rounds at most.
func (f Fleet) prime(ctx context.Context, target string, emit func(archive.Result)) error {
	req := scenario.Request{Path: "/api/public/search", Query: map[string]string{"q": "rate limits"}}
	if f.Surface == method.MCP {
		req = scenario.Request{RPC: "tools/list"}
	}
	admitted := 0
	for round, burst := 0, f.Limit; round < 5 && burst > 0 && ctx.Err() == nil; round++ {
		p := &scenario.Profile{Name: "fleet", Policy: scenario.Policy{Surface: f.Surface, Limit: f.Limit, Window: scenario.Span{D: f.Window}},
			Streams: []scenario.Stream{{Name: method.StreamPrime, Surface: f.Surface, Requests: []scenario.Request{req},
				Pacer: scenario.PacerSpec{Type: "burst-then-probe", Burst: burst, Over: scenario.Span{W: 0.02}}}}}
		if f.Source != "" {
			p.Sources = []string{f.Source}
		}
		refused := false
		err := attack.Plan{Profile: p, Window: f.Window, Timeout: f.Timeout, MCP: f.MCP, Network: f.Network, MaxWorkers: f.MaxWorkers}.Run(ctx, target, func(r archive.Result) error {
			switch {
			case r.Code == http.StatusTooManyRequests:
				refused = true
			case r.Code != 0 && r.Code < 500:
				admitted++
			}
			emit(r)
			return nil
		})
		if err != nil || refused {
			return err
		}
		burst = f.Limit - admitted
	}
	return nil
}

// rows sends each failure-table probe once through a retrying client.
func (f Fleet) rows(ctx context.Context, target string, emit func(archive.Result)) error {
	var ids atomic.Uint64
	for j, row := range f.Rows {
		if ctx.Err() != nil {
			return nil // stopped: send nothing more
		}
		var rev string
		var sid *atomic.Pointer[client.Session]
		if row.Surface == method.MCP {
			rev, sid = f.MCP.Speech(f.RowSource)
		}
		tr, err := attack.SpeakingTargeter(&row, target, nil, &ids, "", rev, sid)
		if err != nil {
			return fmt.Errorf("row %s: %w", row.Name, err)
		}
		c := f.clientFrom(target, f.RowSource, f.Clients+j, row.Surface, row.Name, emit)
		c.Do(ctx, row.Name, func(ctx context.Context, _ uint64) (*http.Request, error) {
			return attack.NextRequest(ctx, tr)
		})
	}
	return nil
}

// client builds fleet client i: its own connection from the shared
// source, its own jitter stream, its own governor.
func (f Fleet) client(target string, i int, emit func(archive.Result)) *client.Client {
	return f.clientFrom(target, f.Source, i, f.Surface, method.StreamFleet, emit)
}

func (f Fleet) clientFrom(target, source string, i int, surface, stream string, emit func(archive.Result)) *client.Client {
	tr := f.Network.Transport(source, f.Timeout)
	tr.MaxIdleConnsPerHost, tr.IdleConnTimeout = 1, f.Window
	rng := rand.New(rand.NewPCG(f.Seed, uint64(i)))
	c := &client.Client{
		BaseURL:  target,
		HTTP:     &http.Client{Transport: client.SendOnce(tr), Timeout: f.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		Backoff:  f.Backoff,
		Attempts: f.Attempts,
		Governor: &client.Governor{Min: f.SlowDown, Max: f.Backoff.Cap},
		Rand:     rng.Float64,
	}
	c.OnAttempt = func(a client.Attempt) { emit(attemptResult(surface, source, stream, i, a)) }
	if surface == method.MCP {
		c.UseSession(f.MCP.Session())
	}
	return c
}

// request sends one logical request of the fleet's surface.
func (f Fleet) request(ctx context.Context, c *client.Client) {
	if f.Surface == method.MCP {
		c.Call(ctx, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits", "limit": 5}})
		return
	}
	c.Get(ctx, "/api/public/search", url.Values{"q": {"rate limits"}, "limit": {"5"}})
}

// attemptResult turns an attempt of client clientID, sending stream of
// surface from source ("": the system's choice), into a Vegeta result
// labelled as a fleet client's attempt.
func attemptResult(surface, source, stream string, clientID int, a client.Attempt) archive.Result {
	if source == "" {
		source = archive.DefaultSource
	}
	l := archive.Labels{Surface: surface, Source: source, Stream: stream,
		Fleet: &archive.FleetTag{Client: clientID, Request: int(a.Request), Attempt: a.N, Delay: a.Delay}}
	r := &vegeta.Result{Attack: l.String(), Seq: a.Request, Code: uint16(a.Status),
		Timestamp: a.Start, Latency: a.Latency, BytesOut: a.BytesOut, BytesIn: uint64(len(a.Body)),
		Method: a.Method, URL: a.URL, Headers: a.Header}
	if a.Status != http.StatusOK || (stream != method.StreamFleet && stream != method.StreamPrime) {
		r.Body = a.Body // contract probes keep theirs: a 200 may still be an error result
	}
	if a.Err != nil {
		r.Error = a.Err.Error()
	}
	return archive.Result{Result: r, Labels: l}
}

// Descriptors estimates the file descriptors a fleet's run holds open at
// once: a connection per client (each has its own) and per failure-table
// row, twice over when the target is embedded in the same process, and a
// margin.
func (f Fleet) Descriptors(embedded bool) int {
	conns := f.Defaults().Clients + len(f.Rows) + 1 // and the primer
	if embedded {
		conns *= 2
	}
	return conns + attack.DescriptorMargin
}
