package refserver

import (
	"math"
	"net"
	"net/http"
	"slices"
	"testing"
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
// when each was sent, the achieved rate and the longest stall of the test
// process meanwhile.
type run struct {
	latency  []time.Duration
	sent     []time.Duration // from the first send, in send order
	achieved float64         // requests per second, first to last send
	failed   int             // answers other than 200
	stall    time.Duration
}

// simulate is the D/G/c queue of c servers drawing service times from
// draw, fed the sends this run made: a client that fell behind and sent a
// burst is in the figure as it happened.
func (r run) simulate(c int, draw func() time.Duration) []time.Duration {
	return hostsim.QueueAt(r.sent, c, draw)
}

// slack is what a stall of the process (client and server alike) can add
// to a sojourn at this run's rate against capacity mu: the stall itself,
// and above capacity the backlog it left, which drains at mu.
func (r run) slack(mu float64) time.Duration {
	return time.Duration(float64(r.stall) * max(1, r.achieved/mu))
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
		out.sent = append(out.sent, r.Timestamp.Sub(res[0].Timestamp))
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

// TestPoolQueueingUnderLoad drives the target's pool (50 workers of 100 ms
// on average: 500/s) with Vegeta at constant rates below and above its
// capacity for under a second each, once, and holds what it observed to
// queueing theory computed over the sends the run made (a D/G/c queue fed
// that trace, so a client that fell behind and sent a burst is in the
// figure) plus what the process's longest stall can add to a sojourn
// (run.slack): a loaded machine widens the bounds by what it measurably
// did, rather than the run being tried again. The service times are long
// and the workers many so that the stalls of a loaded 2-core machine stay
// small beside them; the bounds are wide still, but tell a queue that
// works from one that does not:
//   - fixed 100 ms, 250/s: no request waits; latency is never below the
//     service time, stays of its order and does not grow;
//   - fixed 100 ms, 750/s: latency grows as the simulated queue's does,
//     within a factor of two;
//   - uniform 25ms-175ms at 250, 400 and 750/s: the p99 within a factor
//     of two of the simulated D/G/c queue's (plus 100 ms), and
//     above capacity above its value below.
func TestPoolQueueingUnderLoad(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("seconds of real load; the plain run checks it")
	}
	const c, S = 50, 100 * time.Millisecond
	mu := float64(c) / S.Seconds()
	// Two pools, each its own target, loaded side by side: about 2.5 s of
	// attacks each, an eighth of a core, most of it waiting out service
	// times.
	t.Run("fixed", func(t *testing.T) {
		t.Parallel()
		url := poolTarget(t, Pool{Workers: c, ServiceMin: S, ServiceMax: S, Queue: 5000})
		under := attackPool(url, 250, 600*time.Millisecond)
		over := attackPool(url, 750, time.Second)
		for name, r := range map[string]run{"250/s": under, "750/s": over} {
			if r.failed > 0 || len(r.latency) < 100 || slices.Min(r.latency) < S {
				t.Fatalf("%s: %d requests, %d not 200, fastest %v (want all 200, none faster than %v)",
					name, len(r.latency), r.failed, slices.Min(r.latency), S)
			}
		}
		// Theory over the run: the mean latency of the last fifth less that
		// of the first, against the simulated queue's over the same sends.
		wantGrowth := growth(over.simulate(c, hostsim.Fixed(S)))
		t.Logf("fixed %v, %d workers (μ %.0f/s): at %.0f/s p50 %v p99 %v growth %v (theory: %v, no growth; stall %v);"+
			" at %.0f/s p50 %v p99 %v growth %v (simulated over its sends %v; stall %v)",
			S, c, mu, under.achieved, quantile(under.latency, 0.5), quantile(under.latency, 0.99), growth(under.latency), S, under.stall,
			over.achieved, quantile(over.latency, 0.5), quantile(over.latency, 0.99), growth(over.latency), wantGrowth, over.stall)
		if g := growth(over.latency); g < wantGrowth/2 || g > 2*wantGrowth+50*time.Millisecond+over.slack(mu) {
			t.Errorf("at %.0f/s latency grew %v, want %v within a factor of two (stall %v)", over.achieved, g, wantGrowth, over.stall)
		}
		if g := growth(under.latency); g > wantGrowth/4+under.slack(mu) {
			t.Errorf("at %.0f/s, below capacity, latency grew %v (stall %v); at %.0f/s %v", under.achieved, g, under.stall, over.achieved, growth(over.latency))
		}
		if p := quantile(under.latency, 0.99); p > 5*S+under.slack(mu) {
			t.Errorf("at %.0f/s, below capacity, p99 %v (stall %v): want the order of the service time %v", under.achieved, p, under.stall, S)
		}
	})
	t.Run("uniform", func(t *testing.T) {
		t.Parallel()
		lo, hi := 25*time.Millisecond, 175*time.Millisecond
		url := poolTarget(t, Pool{Workers: c, ServiceMin: lo, ServiceMax: hi, Queue: 5000})
		var observed, slack []time.Duration
		for _, rate := range []int{250, 400, 750} {
			dur := 600 * time.Millisecond
			if rate > 500 {
				dur = time.Second
			}
			r := attackPool(url, rate, dur)
			if r.failed > 0 || len(r.latency) < 100 {
				t.Fatalf("uniform, %d/s: %d requests, %d not 200", rate, len(r.latency), r.failed)
			}
			// The figure over the run's sends, its p99 averaged over
			// replications of the service draws.
			var sim time.Duration
			const reps = 20
			for i := range reps {
				sim += quantile(r.simulate(c, hostsim.Uniform(lo, hi, uint64(i))), 0.99) / reps
			}
			got := quantile(r.latency, 0.99)
			observed, slack = append(observed, got), append(slack, r.slack(mu))
			t.Logf("uniform %v-%v, %d workers: at %.0f/s p99 %v, simulated D/G/c p99 %v (stall %v)", lo, hi, c, r.achieved, got, sim, r.stall)
			if got < sim/2 || got > 2*sim+100*time.Millisecond+r.slack(mu) {
				t.Errorf("uniform, %.0f/s: p99 %v, want the simulated %v within a factor of two (stall %v)", r.achieved, got, sim, r.stall)
			}
		}
		if observed[2] <= observed[0]-slack[0] || observed[2] <= observed[1]-slack[1] {
			t.Errorf("uniform p99 at 250, 400, 750/s: %v (stalls adding up to %v): above capacity it should be above its values below", observed, slack)
		}
	})
}
