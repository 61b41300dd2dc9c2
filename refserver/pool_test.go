package refserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateSleeper is a fake service time: a request stays "in service" until
// the test sends on gate (or the request is abandoned). It records the
// service times asked for, the names of the requests in the order they
// entered service, and the most requests ever in service at once.
type gateSleeper struct {
	gate chan struct{}

	mu       sync.Mutex
	inflight int
	most     int
	asked    []time.Duration
	entered  []string
}

func newGateSleeper() *gateSleeper { return &gateSleeper{gate: make(chan struct{})} }

type nameKey struct{}

func (g *gateSleeper) sleep(ctx context.Context, d time.Duration) error {
	g.mu.Lock()
	g.inflight++
	g.most = max(g.most, g.inflight)
	g.asked = append(g.asked, d)
	name, _ := ctx.Value(nameKey{}).(string)
	g.entered = append(g.entered, name)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inflight--
		g.mu.Unlock()
	}()
	select {
	case <-g.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gateSleeper) state() (inflight, most int, entered []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inflight, g.most, append([]string(nil), g.entered...)
}

// waitFor polls cond until it holds; it fails the test after 10 s (a guard
// against a hang, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// pooledServer is a reference target with a pool and a fake sleep, its
// limiter out of the way.
func pooledServer(t *testing.T, p Pool, sleep func(context.Context, time.Duration) error) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RESTLimit, cfg.MCPLimit = 1<<20, 1<<20
	cfg.Pool, cfg.Sleep = p, sleep
	clock := &fakeClock{}
	cfg.Clock = clock.now
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sendPooled serves one named search request and returns its recorder.
func sendPooled(s *Server, ctx context.Context, name string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/api/public/search?q="+name, nil)
	r = r.WithContext(context.WithValue(ctx, nameKey{}, name))
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// TestPoolAdmitsQueuesAndRefuses: with 2 workers and a queue of 2, two
// requests are served at once, the next two wait and are served in the
// order they came, and a fifth is answered 503 queue_full at once without
// taking a worker.
func TestPoolAdmitsQueuesAndRefuses(t *testing.T) {
	g := newGateSleeper()
	s := pooledServer(t, Pool{Workers: 2, ServiceMin: 20 * time.Millisecond, ServiceMax: 20 * time.Millisecond, Queue: 2}, g.sleep)
	names := []string{"r1", "r2", "r3", "r4"}
	recs := make([]*httptest.ResponseRecorder, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() { defer wg.Done(); recs[i] = sendPooled(s, context.Background(), name) }()
		if i < 2 {
			waitFor(t, name+" in service", func() bool { n, _, _ := g.state(); return n == i+1 })
		} else {
			waitFor(t, name+" in the queue", func() bool { _, q := s.pool.load(); return q == i-1 })
		}
	}
	full := sendPooled(s, context.Background(), "r5")
	var body restErrorBody
	if err := json.Unmarshal(full.Body.Bytes(), &body); err != nil || full.Code != http.StatusServiceUnavailable || body.Error.Code != "queue_full" ||
		!strings.Contains(body.Error.Message, "2 workers are busy and 2 requests are waiting") {
		t.Errorf("fifth request: %d %s (%v), want 503 queue_full", full.Code, full.Body, err)
	}
	for i := range names {
		g.gate <- struct{}{}
		if i < 2 { // a worker is freed: the first still queued takes it
			waitFor(t, names[i+2]+" in service", func() bool { _, _, e := g.state(); return len(e) == i+3 })
		}
	}
	wg.Wait()
	_, most, entered := g.state()
	if strings.Join(entered, ",") != "r1,r2,r3,r4" || most != 2 {
		t.Errorf("served %v with at most %d at once, want r1..r4 in order, 2 at once", entered, most)
	}
	for i, rec := range recs {
		if rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", names[i], rec.Code, rec.Body)
		}
	}
	if busy, q := s.pool.load(); busy != 0 || q != 0 {
		t.Errorf("after the last answer %d busy, %d waiting", busy, q)
	}
}

// TestPoolConcurrencyNeverAboveWorkers: however many requests arrive at
// once, at most N are in service, and all are served once the queue drains.
func TestPoolConcurrencyNeverAboveWorkers(t *testing.T) {
	for _, workers := range []int{1, 3, 8} {
		g := newGateSleeper()
		s := pooledServer(t, Pool{Workers: workers, ServiceMin: time.Millisecond, ServiceMax: 3 * time.Millisecond, Queue: 64}, g.sleep)
		const requests = 40
		codes := make(chan int, requests)
		for i := range requests {
			go func() { codes <- sendPooled(s, context.Background(), "q"+string(rune('a'+i%26))).Code }()
		}
		waitFor(t, "every request in service or queued", func() bool { busy, q := s.pool.load(); return busy+q == requests })
		for range requests {
			if n, _, _ := g.state(); n > workers {
				t.Fatalf("%d workers: %d in service", workers, n)
			}
			g.gate <- struct{}{}
		}
		for range requests {
			if c := <-codes; c != http.StatusOK {
				t.Errorf("%d workers: status %d", workers, c)
			}
		}
		if _, most, entered := g.state(); most != workers || len(entered) != requests {
			t.Errorf("%d workers: at most %d in service, %d served; want %d and %d", workers, most, len(entered), workers, requests)
		}
	}
}

// TestPoolServiceTimes: a fixed service time is asked for exactly; a range
// is drawn uniformly within it (its mean near the middle, both ends
// reached), and the draws are what the server sleeps.
func TestPoolServiceTimes(t *testing.T) {
	tests := []struct{ lo, hi time.Duration }{
		{20 * time.Millisecond, 20 * time.Millisecond},
		{5 * time.Millisecond, 35 * time.Millisecond},
		{0, time.Microsecond},
	}
	for _, tt := range tests {
		p := newWorkerPool(Pool{Workers: 1, ServiceMin: tt.lo, ServiceMax: tt.hi}, 7, nil)
		const n = 20000
		var sum, lo, hi time.Duration = 0, tt.hi, tt.lo
		for range n {
			d := p.service()
			if d < tt.lo || d > tt.hi {
				t.Fatalf("%v-%v: drew %v", tt.lo, tt.hi, d)
			}
			sum, lo, hi = sum+d, min(lo, d), max(hi, d)
		}
		mean, spread := sum/n, tt.hi-tt.lo
		if mid := (tt.lo + tt.hi) / 2; mean < mid-spread/20-1 || mean > mid+spread/20+1 {
			t.Errorf("%v-%v: mean %v, want about %v", tt.lo, tt.hi, mean, mid)
		}
		if lo > tt.lo+spread/50 || hi < tt.hi-spread/50 {
			t.Errorf("%v-%v: draws span only %v-%v", tt.lo, tt.hi, lo, hi)
		}
	}
	var mu sync.Mutex
	var asked []time.Duration
	s := pooledServer(t, Pool{Workers: 2, ServiceMin: 5 * time.Millisecond, ServiceMax: 35 * time.Millisecond}, func(_ context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, d)
		return nil
	})
	for range 50 {
		if rec := sendPooled(s, context.Background(), "limits"); rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
	}
	for _, d := range asked {
		if d < 5*time.Millisecond || d > 35*time.Millisecond {
			t.Errorf("server slept %v", d)
		}
	}
	if len(asked) != 50 {
		t.Errorf("server slept %d times for 50 requests", len(asked))
	}
}

// TestPoolAfterLimiter: the limiter decides first; a 429 never takes a
// worker, on either surface.
func TestPoolAfterLimiter(t *testing.T) {
	var slept int
	cfg := DefaultConfig()
	cfg.RESTLimit, cfg.MCPLimit = 2, 1
	cfg.Clock = (&fakeClock{}).now
	cfg.Pool = Pool{Workers: 1, ServiceMin: time.Millisecond, ServiceMax: time.Millisecond}
	cfg.Sleep = func(context.Context, time.Duration) error { slept++; return nil }
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var codes []int
	for range 5 {
		codes = append(codes, sendPooled(s, context.Background(), "limits").Code)
	}
	if want := []int{200, 200, 429, 429, 429}; !slices.Equal(codes, want) || slept != 2 {
		t.Errorf("statuses %v with %d services, want %v with 2", codes, slept, want)
	}
	slept = 0
	for i := range 3 {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, mcpRequest(t, "http://target", i+1, "tools/list", nil))
		codes[i] = w.Code
	}
	if want := []int{200, 429, 429}; !slices.Equal(codes[:3], want) || slept != 1 {
		t.Errorf("mcp statuses %v with %d services, want %v with 1", codes[:3], slept, want)
	}
}

// TestPoolAbandoned: a request abandoned while it waits leaves the queue
// and gets no answer; one abandoned in service frees its worker; the pool's
// counts come back to zero whichever way a hand-over and a cancellation
// race.
func TestPoolAbandoned(t *testing.T) {
	g := newGateSleeper()
	s := pooledServer(t, Pool{Workers: 1, ServiceMin: time.Millisecond, ServiceMax: time.Millisecond, Queue: 1}, g.sleep)
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- sendPooled(s, context.Background(), "r1") }()
	waitFor(t, "r1 in service", func() bool { n, _, _ := g.state(); return n == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan *httptest.ResponseRecorder)
	go func() { gone <- sendPooled(s, ctx, "r2") }()
	waitFor(t, "r2 in the queue", func() bool { _, q := s.pool.load(); return q == 1 })
	cancel()
	if rec := <-gone; rec.Body.Len() != 0 {
		t.Errorf("abandoned request answered %d %s", rec.Code, rec.Body)
	}
	if _, q := s.pool.load(); q != 0 {
		t.Errorf("%d still waiting after the abandon", q)
	}
	g.gate <- struct{}{}
	if rec := <-first; rec.Code != http.StatusOK {
		t.Errorf("r1: %d", rec.Code)
	}
	ctx, cancel = context.WithCancel(context.Background())
	go func() { gone <- sendPooled(s, ctx, "r3") }()
	waitFor(t, "r3 in service", func() bool { n, _, _ := g.state(); return n == 1 })
	cancel()
	<-gone
	if busy, q := s.pool.load(); busy != 0 || q != 0 {
		t.Errorf("after an abandon in service: %d busy, %d waiting", busy, q)
	}

	p := newWorkerPool(Pool{Workers: 1, ServiceMin: time.Millisecond, ServiceMax: time.Millisecond, Queue: 1}, 1, nil)
	for range 200 {
		if err := p.acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error)
		go func() { got <- p.acquire(ctx) }()
		waitFor(t, "a waiter", func() bool { _, q := p.load(); return q == 1 })
		p.release() // hands the worker to the waiter...
		cancel()    // ...which may see its cancellation first
		if err := <-got; err == nil {
			p.release()
		} else if !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if busy, q := p.load(); busy != 0 || q != 0 {
			t.Fatalf("after a raced hand-over: %d busy, %d waiting", busy, q)
		}
	}
}

// TestPoolConfig: a pool is validated by New; service times parse as one
// duration or a range; the capacity is workers over the mean service time.
func TestPoolConfig(t *testing.T) {
	ms := time.Millisecond
	for _, p := range []Pool{
		{Workers: -1},
		{Workers: 2},
		{Workers: 2, ServiceMin: 30 * ms, ServiceMax: 20 * ms},
		{Workers: 2, ServiceMin: 20 * ms, ServiceMax: 20 * ms, Queue: -1},
	} {
		cfg := DefaultConfig()
		cfg.Pool = p
		if _, err := New(cfg); err == nil || !strings.HasPrefix(err.Error(), "pool: ") {
			t.Errorf("%+v: err %v", p, err)
		}
	}
	for _, tt := range []struct {
		spec   string
		lo, hi time.Duration
		ok     bool
	}{
		{"20ms", 20 * ms, 20 * ms, true},
		{"5ms-35ms", 5 * ms, 35 * ms, true},
		{" 0s-1ms ", 0, ms, true},
		{"35ms-5ms", 0, 0, false},
		{"0s", 0, 0, false},
		{"", 0, 0, false},
		{"-5ms", 0, 0, false},
		{"5ms-", 0, 0, false},
		{"fast", 0, 0, false},
	} {
		lo, hi, err := ParseService(tt.spec)
		if (err == nil) != tt.ok || lo != tt.lo || hi != tt.hi {
			t.Errorf("ParseService(%q) = %v, %v, %v", tt.spec, lo, hi, err)
		}
	}
	p := Pool{Workers: 10, ServiceMin: 5 * ms, ServiceMax: 35 * ms, Queue: 100}
	if got, want := p.String(), "10 workers, service 5ms-35ms, queue 100, capacity 500/s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if c := (Pool{Workers: 50, ServiceMin: 20 * ms, ServiceMax: 20 * ms}).Capacity(); c != 2500 {
		t.Errorf("capacity %v, want 2500", c)
	}
}
