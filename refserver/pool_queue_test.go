package refserver

import (
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/internal/hostsim"
)

// quantile returns the q-quantile of ds (the ⌈q·n⌉-th smallest).
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max(0, int(math.Ceil(q*float64(len(s))))-1)]
}

// growth is the mean of the last fifth of latencies, in arrival order, less
// that of the first fifth: how far latency rose over the run.
func growth(ds []time.Duration) time.Duration {
	k := len(ds) / 5
	var first, last time.Duration
	for i := range k {
		first += ds[i]
		last += ds[len(ds)-1-i]
	}
	return (last - first) / time.Duration(k)
}

// TestQueueFigure holds the simulation to what queueing theory says in
// closed form for a fixed service time S over c servers (capacity μ = c/S):
// below μ nobody waits, every sojourn is S; above it the backlog grows by
// λ − μ a second, so a request t seconds in waits t·(λ − μ)/μ.
func TestQueueFigure(t *testing.T) {
	const c, S = 10, 20 * time.Millisecond
	mu := float64(c) / S.Seconds() // 500/s
	for _, d := range hostsim.Queue(250, time.Second, c, hostsim.Fixed(S)) {
		if d != S {
			t.Fatalf("at 250/s a sojourn of %v, want %v", d, S)
		}
	}
	over := hostsim.Queue(750, time.Second, c, hostsim.Fixed(S))
	last := over[len(over)-1]
	want := S + time.Duration((750-mu)/mu*float64(time.Second)) // the last request, 1 s in
	if d := last - want; d < -S || d > S {
		t.Errorf("at 750/s the last sojourn is %v, want %v within one service time", last, want)
	}
	// Uniform service: some waiting below μ, increasing towards it.
	var p99 []time.Duration
	for _, rate := range []float64{250, 400, 480} {
		p99 = append(p99, quantile(hostsim.Queue(rate, 20*time.Second, c, hostsim.Uniform(5*time.Millisecond, 35*time.Millisecond, 1)), 0.99))
	}
	if !slices.IsSorted(p99) || p99[0] > 36*time.Millisecond || p99[2] < 40*time.Millisecond {
		t.Errorf("D/U/10 p99 at 250, 400, 480/s: %v, want rising from the service time's own", p99)
	}
}

// run is what one constant-rate attack observed: latencies in send order,
// the achieved rate and the longest stall of the test
// process meanwhile.
type run struct {
	latency  []time.Duration
	achieved float64 // requests per second, first to last send
	failed   int     // answers other than 200
	stall    time.Duration
}

// attackPool drives the target at url with Vegeta at a constant rate for
// dur, over loopback, and collects what it observed. A stall meter (a
// 1 ms sleep in a loop, timed) measures how long the process went without
// being scheduled: client and server alike.
func attackPool(url string, rate int, dur time.Duration) run {
	stop, stalled := make(chan struct{}), make(chan time.Duration)
	go func() {
		var worst time.Duration
		for {
			select {
			case <-stop:
				stalled <- worst
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(time.Millisecond)
			worst = max(worst, time.Since(t0)-time.Millisecond)
		}
	}()
	// Vegeta's own transport, but ours to close: a connection it dialed
	// and never used would hold the target's Close for five seconds.
	tr := &http.Transport{DialContext: (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: vegeta.DefaultConnections, MaxConnsPerHost: vegeta.DefaultMaxConnections}
	defer tr.CloseIdleConnections()
	atk := vegeta.NewAttacker(vegeta.Client(&http.Client{Transport: tr}), vegeta.Workers(64), vegeta.MaxWorkers(2000),
		vegeta.KeepAlive(true), vegeta.Timeout(10*time.Second), vegeta.MaxBody(0))
	tg := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: url + "/api/public/search?q=capacity"})
	var res []vegeta.Result
	for r := range atk.Attack(tg, vegeta.ConstantPacer{Freq: rate, Per: time.Second}, dur, "pool") {
		res = append(res, *r)
	}
	close(stop)
	out := run{stall: <-stalled}
	slices.SortFunc(res, func(a, b vegeta.Result) int { return a.Timestamp.Compare(b.Timestamp) })
	for _, r := range res {
		out.latency = append(out.latency, r.Latency)
		if r.Code != http.StatusOK {
			out.failed++
		}
	}
	if n := len(res); n > 1 {
		out.achieved = float64(n-1) / res[n-1].Timestamp.Sub(res[0].Timestamp).Seconds()
	}
	return out
}

// poolTarget starts a reference target with a pool on a loopback port,
// its limiter out of the way and its queue long enough to refuse nothing.
func poolTarget(t *testing.T, p Pool) string {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RESTLimit = 1 << 30
	cfg.Pool = p
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(s, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln.URL
}

// arrivalsAt returns the moments a constant pacer of rate requests a
// second sends at over dur: request k at k/rate, as Vegeta's does.
func arrivalsAt(rate int, dur time.Duration) []time.Duration {
	a := make([]time.Duration, int(int64(rate)*int64(dur)/int64(time.Second)))
	for k := range a {
		a[k] = time.Duration(int64(k) * int64(time.Second) / int64(rate))
	}
	return a
}

// serveAt has h serve a GET of the public search arriving at each of the
// moments, on the fake clock of a synctest bubble, each from a goroutine
// of its own as a server does, and returns each request's sojourn
// (arrival to answer) and how many answers were not 200.
func serveAt(h http.Handler, arrivals []time.Duration) (sojourn []time.Duration, failed int) {
	sojourn = make([]time.Duration, len(arrivals))
	codes := make([]int, len(arrivals))
	var wg sync.WaitGroup
	start := time.Now()
	for k, at := range arrivals {
		time.Sleep(at - time.Since(start))
		wg.Go(func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/public/search?q=capacity", nil))
			sojourn[k], codes[k] = time.Since(start)-at, w.Code
		})
	}
	wg.Wait()
	for _, c := range codes {
		if c != http.StatusOK {
			failed++
		}
	}
	return sojourn, failed
}

// TestPoolQueueing holds the target's pool (50 workers, first come first
// served) to the queueing recursion of a c-server FIFO queue on simulated
// time: fed the same arrivals and the same service times (a pool of the
// same seed draws them, in the order requests reach a worker), every
// request's sojourn through the real handler is the one
// hostsim.QueueAt computes, to the nanosecond. TestQueueFigure holds that
// recursion to the closed forms of queueing theory, and
// TestPoolServiceTimes the draws to their distribution. Requests that
// start service at the same instant may draw each other's service time,
// which swaps their sojourns but not the servers' next free times, so the
// sojourns are compared as sorted lists. Over capacity the backlog grows
// and with it the latency; below it nobody waits long.
func TestPoolQueueing(t *testing.T) {
	t.Parallel()
	const c, S = 50, 100 * time.Millisecond // 500/s
	fixed := Pool{Workers: c, ServiceMin: S, ServiceMax: S, Queue: 5000}
	uniform := Pool{Workers: c, ServiceMin: 25 * time.Millisecond, ServiceMax: 175 * time.Millisecond, Queue: 5000}
	tests := []struct {
		name string
		pool Pool
		rate int
		// grows: whether the mean sojourn of the last fifth of requests
		// exceeds the first fifth's by more than a service time.
		grows bool
	}{
		{"fixed 250/s", fixed, 250, false},
		{"fixed 750/s", fixed, 750, true},
		{"uniform 250/s", uniform, 250, false},
		{"uniform 400/s", uniform, 400, false},
		{"uniform 750/s", uniform, 750, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const seed = 11
			arrivals := arrivalsAt(tt.rate, 2*time.Second)
			want := hostsim.QueueAt(arrivals, c, newWorkerPool(tt.pool, seed, nil).service)
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.RESTLimit, cfg.Pool, cfg.Seed = 1<<30, tt.pool, seed
				s, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				got, failed := serveAt(s, arrivals)
				g := growth(got)
				t.Logf("%v at %d/s: p50 %v p99 %v max %v, growth %v (recursion: p99 %v max %v)", tt.pool, tt.rate,
					quantile(got, 0.5), quantile(got, 0.99), slices.Max(got), g, quantile(want, 0.99), slices.Max(want))
				if failed > 0 {
					t.Fatalf("%d of %d answers not 200", failed, len(got))
				}
				if (g > tt.pool.ServiceMax) != tt.grows {
					t.Errorf("latency grew %v over the run; want growth beyond a service time: %v", g, tt.grows)
				}
				slices.Sort(got)
				slices.Sort(want)
				for k := range got {
					if got[k] != want[k] {
						t.Fatalf("sorted sojourn %d of %d: %v, the recursion's %v", k, len(got), got[k], want[k])
					}
				}
			})
		})
	}
}

// TestPoolOverLoopback is the pool's wiring on the real clock: a Vegeta
// attack over loopback at half the pool's capacity is answered 200 every
// time and never faster than the fixed service time. How long requests
// wait is TestPoolQueueing's, on simulated time: a busy host can only add
// to a latency, never take from it, so this holds beside any load.
func TestPoolOverLoopback(t *testing.T) {
	t.Parallel()
	const c, S = 50, 100 * time.Millisecond
	url := poolTarget(t, Pool{Workers: c, ServiceMin: S, ServiceMax: S, Queue: 5000})
	r := attackPool(url, 250, 400*time.Millisecond)
	t.Logf("at %.0f/s: %d requests, p50 %v p99 %v (stall %v)", r.achieved, len(r.latency), quantile(r.latency, 0.5), quantile(r.latency, 0.99), r.stall)
	if r.failed > 0 || len(r.latency) < 50 || slices.Min(r.latency) < S {
		t.Errorf("%d requests, %d not 200, fastest %v: want all 200, none faster than %v", len(r.latency), r.failed, slices.Min(r.latency), S)
	}
}
