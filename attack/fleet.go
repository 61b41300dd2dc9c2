package attack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/contract"
)

// Fleet is N retrying clients behind one address (as behind one NAT),
// driven into a shared 429 together: a primer first spends the address's
// budget, then every client sends its first request at the same instant and
// retries by its strategy. Every attempt is a Vegeta result labelled with
// its client, request, attempt and the delay the client drew. The zero
// value of every field but Target has a default.
type Fleet struct {
	// Target is the base URL.
	Target string
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
	Rows      []Stream
	RowSource string
}

// Defaults returns f with its zero fields set.
func (f Fleet) Defaults() Fleet {
	if f.Surface == "" {
		f.Surface = contract.REST
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
		f.Window = time.Minute
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
	return f
}

// Run primes the address, runs the fleet and hands every result to sink,
// from one goroutine at a time. It returns when every client is done or
// ctx ends (results received so far are handed over either way).
func (f Fleet) Run(ctx context.Context, sink func(*vegeta.Result) error) error {
	f = f.Defaults()
	var mu sync.Mutex
	var sinkErr error
	emit := func(r *vegeta.Result) {
		mu.Lock()
		defer mu.Unlock()
		if sinkErr == nil {
			sinkErr = sink(r)
		}
	}
	if f.Limit > 0 {
		if err := f.prime(ctx, emit); err != nil {
			return err
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range f.Clients {
		c := f.client(i, emit)
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
	if err := f.rows(ctx, emit); err != nil {
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
func (f Fleet) prime(ctx context.Context, emit func(*vegeta.Result)) error {
	req := Request{Path: "/api/public/search", Query: map[string]string{"q": "rate limits"}}
	if f.Surface == contract.MCP {
		req = Request{RPC: "tools/list"}
	}
	admitted := 0
	for round, burst := 0, f.Limit; round < 5 && burst > 0 && ctx.Err() == nil; round++ {
		p := &Profile{Name: "fleet", Policy: Policy{Surface: f.Surface, Limit: f.Limit, Window: Span{D: f.Window}},
			Streams: []Stream{{Name: archive.StreamPrime, Surface: f.Surface, Requests: []Request{req},
				Pacer: PacerSpec{Type: "burst-then-probe", Burst: burst, Over: Span{W: 0.02}}}}}
		if f.Source != "" {
			p.Sources = []string{f.Source}
		}
		refused := false
		err := Plan{Profile: p, Target: f.Target, Window: f.Window, Timeout: f.Timeout}.Run(ctx, func(r *vegeta.Result) error {
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
func (f Fleet) rows(ctx context.Context, emit func(*vegeta.Result)) error {
	var ids atomic.Uint64
	for j, row := range f.Rows {
		if ctx.Err() != nil {
			return nil // stopped: send nothing more
		}
		tr, err := row.Targeter(f.Target, nil, &ids)
		if err != nil {
			return fmt.Errorf("row %s: %w", row.Name, err)
		}
		c := f.clientFrom(f.RowSource, f.Clients+j, row.Surface, row.Name, emit)
		c.Do(ctx, row.Name, func(ctx context.Context, _ uint64) (*http.Request, error) {
			var tgt vegeta.Target
			if err := tr(&tgt); err != nil {
				return nil, err
			}
			req, err := tgt.Request()
			if err != nil {
				return nil, err
			}
			return req.WithContext(ctx), nil
		})
	}
	return nil
}

// client builds fleet client i: its own connection from the shared
// source, its own jitter stream, its own governor.
func (f Fleet) client(i int, emit func(*vegeta.Result)) *client.Client {
	return f.clientFrom(f.Source, i, f.Surface, archive.StreamFleet, emit)
}

func (f Fleet) clientFrom(source string, i int, surface, stream string, emit func(*vegeta.Result)) *client.Client {
	dialer := &net.Dialer{Timeout: f.Timeout}
	if source != "" {
		dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	tr := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 1, IdleConnTimeout: f.Window}
	rng := rand.New(rand.NewPCG(f.Seed, uint64(i)))
	c := &client.Client{
		BaseURL:  f.Target,
		HTTP:     &http.Client{Transport: client.SendOnce(tr), Timeout: f.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		Backoff:  f.Backoff,
		Attempts: f.Attempts,
		Governor: &client.Governor{Min: f.SlowDown, Max: f.Backoff.Cap},
		Rand:     rng.Float64,
	}
	c.OnAttempt = func(a client.Attempt) { emit(attemptResult(surface, source, stream, i, a)) }
	return c
}

// request sends one logical request of the fleet's surface.
func (f Fleet) request(ctx context.Context, c *client.Client) {
	if f.Surface == contract.MCP {
		c.Call(ctx, "tools/call", map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits", "limit": 5}})
		return
	}
	c.Get(ctx, "/api/public/search", url.Values{"q": {"rate limits"}, "limit": {"5"}})
}

// attemptResult turns an attempt into a Vegeta result.
func attemptResult(surface, source, stream string, clientID int, a client.Attempt) *vegeta.Result {
	tag := archive.FleetTag{Client: clientID, Request: int(a.Request), Attempt: a.N, Delay: a.Delay}
	r := &vegeta.Result{Attack: archive.FleetLabel(surface, source, stream, tag), Seq: a.Request, Code: uint16(a.Status),
		Timestamp: a.Start, Latency: a.Latency, BytesOut: a.BytesOut, BytesIn: uint64(len(a.Body)),
		Method: a.Method, URL: a.URL, Headers: a.Header}
	if a.Status != http.StatusOK || (stream != archive.StreamFleet && stream != archive.StreamPrime) {
		r.Body = a.Body // contract probes keep theirs: a 200 may still be an error result
	}
	if a.Err != nil {
		r.Error = a.Err.Error()
	}
	return r
}
