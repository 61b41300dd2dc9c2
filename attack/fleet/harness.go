package fleet

import (
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// HarnessConfig configures a Harness.
type HarnessConfig struct {
	// Surface is the surface the programs call; Clients how many run.
	Surface string
	Clients int
	// Requests is how many logical requests each program is asked to make
	// (see refserver.ClientsConfig).
	Requests int
	// Barrier is how long the first requests wait for every client to
	// arrive (see refserver.ClientsConfig).
	Barrier time.Duration
	// Window is the target's window.
	Window time.Duration
}

// Harness is the server of a fleet of client programs ([Programs]): the
// reference target in-process, the address's budget spent, an unlimited
// one for the scripted answers that pass, and [refserver.Clients] before
// them, recording every request as a fleet client's attempt and measuring
// how long this process stalled (see [refserver.StallMeter]).
type Harness struct {
	cfg     HarnessConfig
	results chan archive.Result
	clients *refserver.Clients
	stall   *refserver.StallMeter
	mu      sync.Mutex
	session map[int]bool // clients that sent Mcp-Session-Id
	origin  map[int]bool // clients that sent Origin
	release time.Time    // the wall time of the harness clock's origin
	base    string       // the harness's URL
}

// NewHarness returns a harness configured by cfg; Start starts it.
func NewHarness(cfg HarnessConfig) *Harness {
	return &Harness{cfg: cfg, results: make(chan archive.Result, 4096), session: map[int]bool{}, origin: map[int]bool{}}
}

// Results delivers what the harness recorded, for [Programs.Results].
func (h *Harness) Results() chan archive.Result { return h.results }

// Start starts the harness on a free loopback port (the engine's embedded
// target); closing the listener stops it.
func (h *Harness) Start() (*refserver.Listener, error) {
	cfg := refserver.DefaultConfig()
	cfg.Window = h.cfg.Window
	limited, err := refserver.New(cfg)
	if err != nil {
		return nil, err
	}
	open := refserver.DefaultConfig()
	open.RESTLimit, open.MCPLimit = 1<<30, 1<<30
	openSrv, err := refserver.New(open)
	if err != nil {
		return nil, err
	}
	// Every program runs on this machine: its requests come from
	// loopback and share one address's budget, as behind one NAT.
	const addr = "127.0.0.1"
	surface := h.cfg.Surface
	limited.Spend(surface, addr, method.Limit(surface))
	h.release = time.Now()
	origin := h.release
	clock := func() time.Duration { return time.Since(origin) }
	h.clients = refserver.NewClients(refserver.ClientsConfig{N: h.cfg.Clients, Requests: h.cfg.Requests, Surface: surface, Barrier: h.cfg.Barrier,
		Limited: limited, Open: openSrv, Clock: clock,
		Counted: func() { limited.Spend(surface, addr, 1) },
		Record:  h.record})
	ln, err := refserver.ListenHandler(h.clients, "127.0.0.1:0", 0)
	if err != nil {
		return nil, err
	}
	h.base = ln.URL
	h.stall = refserver.NewStallMeter()
	return ln, nil
}

// record turns what the harness saw of a request into a Vegeta result,
// labelled as a fleet client's attempt (the delay it drew unknown) with
// the answer the harness gave it and its fingerprint, and hands it to the
// job.
func (h *Harness) record(a refserver.Arrival) {
	h.mu.Lock()
	if a.SessionID {
		h.session[a.Client] = true
	}
	if a.Origin {
		h.origin[a.Client] = true
	}
	h.mu.Unlock()
	surface := archive.SurfaceOf(a.Path)
	l := archive.Labels{Surface: surface, Source: "127.0.0.1", Stream: method.StreamFleet, Fleet: &archive.FleetTag{Client: a.Client, Request: a.Request,
		Attempt: a.Attempt, Delay: -1, Repeat: a.Repeat, Answer: a.Answer, Fingerprint: a.Fingerprint}}
	h.results <- archive.Result{Result: &vegeta.Result{Attack: l.String(), Code: uint16(a.Status), Timestamp: h.release.Add(a.At), Latency: a.Done - a.At,
		Method: a.Method, URL: h.base + a.Path}, Labels: l}
}

// Finish records in run.json what the harness saw (for
// [Programs.OnFinish]): the barrier, and the longest this process stalled
// after the barrier opened.
func (h *Harness) Finish(info *archive.RunInfo) {
	b := h.clients.Barrier()
	info.Fleet.Barrier = &archive.BarrierInfo{Arrived: b.Arrived, WaitedMS: clock.Ms(b.Waited), TimedOut: b.TimedOut}
	var opened time.Time // the barrier's opening, on the wall clock
	if b.Opened {
		opened = h.release.Add(b.OpenedAt)
	}
	info.Fleet.StallMS = clock.Ms(h.stall.Stop(opened))
}

// Headers returns how many clients sent Mcp-Session-Id, and how many
// sent Origin: what the checks do not judge.
func (h *Harness) Headers() (session, origin int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.session), len(h.origin)
}
