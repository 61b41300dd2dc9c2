package refserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Config configures a reference target. The zero value is not valid: use
// [DefaultConfig] and change what differs.
type Config struct {
	// Window is the length of the rolling window (60 s in the contract).
	Window time.Duration
	// RESTLimit and MCPLimit are the requests admitted per window and client
	// address on each surface (240 and 120 in the contract).
	RESTLimit, MCPLimit int
	// Limiter selects the limiting algorithm; only Rolling is documented.
	Limiter LimiterMode
	// Faults are injected before a request reaches a surface; a faulted
	// request is not counted.
	Faults Faults
	// Seed makes fault injection and the pool's service times repeatable.
	Seed uint64
	// Pool, when it has workers, serves every request the limiter admits
	// in a pool of workers for a service time (see [Pool]); the zero value
	// answers at once.
	Pool Pool
	// Sleep waits through a worker's service time, an injected delay and
	// the hold of a request the leaky bucket admitted late, returning
	// early with ctx's error when the request is abandoned; nil means a
	// real timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// AllowedOrigins lists the Origin values /mcp accepts; a request with
	// no Origin is always accepted, one with any other Origin gets 403.
	AllowedOrigins []string
	// Advertise names the rate-limit fields every answer of a surface
	// carries (zero: AdvertiseNone, the documented API).
	Advertise Advertise
	// Log receives one line per refused or failed request (nil: none).
	Log io.Writer
	// Clock returns monotonic time since an arbitrary origin; nil means a
	// real monotonic clock started by New.
	Clock func() time.Duration
	// Rules, when set, are the limits the target enforces in place of the
	// documented ones (RESTLimit, MCPLimit and Window are then unused),
	// each by Limiter's algorithm; nothing is advertised.
	Rules *Rules
	// ReadTimeout bounds reading a whole request, body included, on a
	// connection [Listen] serves (zero: DefaultReadTimeout): a client that
	// sends its headers and then trickles its body is cut off.
	ReadTimeout time.Duration
}

// DefaultReadTimeout is the default [Config.ReadTimeout]: ample for the
// largest body the target reads (256 KiB) on any link.
const DefaultReadTimeout = 30 * time.Second

// DefaultConfig returns the contract's configuration: a 60 s rolling window,
// 240 REST requests and 120 MCP calls per window and address.
func DefaultConfig() Config {
	return Config{Window: method.Window, RESTLimit: method.RESTLimit, MCPLimit: method.MCPLimit, Limiter: Rolling, ReadTimeout: DefaultReadTimeout}
}

// Server is the reference target. It is an [http.Handler] and is safe for
// concurrent use.
type Server struct {
	cfg     Config
	restLim *Limiter
	mcpLim  *Limiter
	corpus  *corpus
	faults  *faultSource
	log     *slog.Logger
	rest    http.HandlerFunc
	mcp     http.HandlerFunc
	reqID   atomic.Uint64
	pool    *workerPool // nil: no pool
	rules   *rulesRun   // nil: the documented limits
	// tooMany is the REST 429 body, built once: under a flood almost every
	// answer is this one.
	tooMany    []byte
	tooManyLen []string
	queueFull  restErrorBody
}

// jsonContentType is shared by every answer's header map: never mutated.
var jsonContentType = []string{"application/json"}

// New returns a reference target configured by cfg.
func New(cfg Config) (*Server, error) {
	if _, err := ParseAdvertise(string(cfg.Advertise)); err != nil {
		return nil, err
	}
	rest, err := NewLimiter(cfg.Limiter, cfg.Advertise.enforced(cfg.RESTLimit), cfg.Window)
	if err != nil {
		return nil, fmt.Errorf("rest limiter: %w", err)
	}
	mcp, err := NewLimiter(cfg.Limiter, cfg.Advertise.enforced(cfg.MCPLimit), cfg.Window)
	if err != nil {
		return nil, fmt.Errorf("mcp limiter: %w", err)
	}
	if err := cfg.Pool.validate(); err != nil {
		return nil, fmt.Errorf("pool: %w", err)
	}
	var rules *rulesRun
	if cfg.Rules != nil {
		if cfg.Advertise != "" && cfg.Advertise != AdvertiseNone {
			return nil, errors.New("a target serving a contract's rules advertises nothing")
		}
		if rules, err = newRulesRun(*cfg.Rules, cfg.Limiter); err != nil {
			return nil, err
		}
	}
	if cfg.Clock == nil {
		start := time.Now()
		cfg.Clock = func() time.Duration { return time.Since(start) }
	}
	if cfg.Sleep == nil {
		cfg.Sleep = clock.Sleep
	}
	s := &Server{cfg: cfg, restLim: rest, mcpLim: mcp, rules: rules, corpus: loadCorpus(), faults: newFaultSource(cfg.Faults, cfg.Seed)}
	s.tooMany, _ = json.Marshal(restError("rate_limited",
		fmt.Sprintf("more than %d requests in the last %v from your address", cfg.RESTLimit, cfg.Window)))
	s.tooMany = append(s.tooMany, '\n')
	s.tooManyLen = []string{strconv.Itoa(len(s.tooMany))}
	if cfg.Pool.Workers > 0 {
		s.pool = newWorkerPool(cfg.Pool, cfg.Seed, cfg.Sleep)
		s.queueFull = restError("queue_full", fmt.Sprintf("all %d workers are busy and %d requests are waiting: the queue is full",
			cfg.Pool.Workers, cfg.Pool.Queue))
	}
	if cfg.Log != nil {
		s.log = slog.New(slog.NewTextHandler(cfg.Log, nil))
	}
	s.rest = s.limited(surfaceREST, s.serveREST)
	s.mcp = s.limited(surfaceMCP, s.serveMCP)
	return s, nil
}

// ServeHTTP implements [http.Handler]: /api/public/* is the REST surface,
// /mcp the MCP endpoint, anything else a plain 404; with [Config.Rules],
// the rules decide first (see serveRules).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.rules != nil {
		s.serveRules(w, r)
		return
	}
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/api/public/"):
		s.rest(w, r)
	case p == "/mcp":
		s.mcp(w, r)
	default:
		writeJSON(w, http.StatusNotFound, restError("not_found", "no such route: the surfaces are /api/public/ and /mcp"))
	}
}

type surface string

const (
	surfaceREST surface = "rest"
	surfaceMCP  surface = "mcp"
)

// Spend counts n requests of a client address against a surface's limiter
// (rest or mcp), as if it had sent them: the budget of that address is
// spent, as a fleet's primer spends it.
func (s *Server) Spend(surface, addr string, n int) {
	lim := s.restLim
	if surface == string(surfaceMCP) {
		lim = s.mcpLim
	}
	for range n {
		lim.Allow(addr, s.cfg.Clock())
	}
}

// ClientAddr returns the address a request is counted against: the host of
// the connection's remote address, in canonical form (an IPv6 address
// compressed and in lower case, an IPv4-mapped one, as a dual-stack
// listener sees an IPv4 client, as IPv4), so that it is the address the
// client was told to send from. Forwarding headers are never trusted.
func ClientAddr(r *http.Request) string {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().String()
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limited wraps a surface handler with fault injection, the surface's
// limiter and the worker pool, in that order: every request that reaches
// the surface is counted, whatever it is answered, and only those the
// limiter admits take a worker.
func (s *Server) limited(sf surface, next func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	lim, limit := s.restLim, s.cfg.RESTLimit
	if sf == surfaceMCP {
		lim, limit = s.mcpLim, s.cfg.MCPLimit
	}
	advertising := s.cfg.Advertise != "" && s.cfg.Advertise != AdvertiseNone
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if (id == "" || len(id) > 64) && s.log != nil {
			id = strconv.FormatUint(s.reqID.Add(1), 10)
		}
		if s.faulted(w, r, sf, id) {
			return
		}
		ok, hold, st := lim.decide(ClientAddr(r), s.cfg.Clock(), advertising)
		if advertising {
			s.advertise(w.Header(), sf, limit, ok, st)
		}
		if !ok {
			if sf == surfaceMCP {
				s.refuseMCP(w, r, id)
			} else {
				s.logf(r, sf, "", http.StatusTooManyRequests, "rate_limited", id)
				h := w.Header()
				h["Content-Type"] = jsonContentType
				h["Content-Length"] = s.tooManyLen
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write(s.tooMany)
			}
			return
		}
		if hold > 0 && s.cfg.Sleep(r.Context(), hold) != nil {
			return // abandoned while held
		}
		if s.pool != nil {
			s.pooled(w, r, sf, id, next)
			return
		}
		next(w, r, id)
	}
}

// faulted injects the fault and delay drawn for r (see [Faults]) and
// reports whether that answered it (a reset, an injected 503, or a
// request abandoned during its delay).
func (s *Server) faulted(w http.ResponseWriter, r *http.Request, sf surface, id string) bool {
	f, delay := s.faults.draw()
	delay += s.cfg.Faults.frozen(s.cfg.Clock())
	if delay > 0 && s.cfg.Sleep(r.Context(), delay) != nil {
		return true
	}
	switch f {
	case faultReset:
		s.logf(r, sf, "", 0, "reset", id)
		resetConn(w)
		return true
	case faultServerError:
		s.logf(r, sf, "", http.StatusServiceUnavailable, "injected_fault", id)
		writeJSON(w, http.StatusServiceUnavailable, restError("unavailable", "injected fault"))
		return true
	}
	return false
}

// pooled serves an admitted request in the worker pool: it waits for a
// worker (503 queue_full when the queue is full), holds it for a drawn
// service time, and has the surface answer before giving it back. A
// request abandoned by its client while it waits or is served gets no
// answer and frees its place.
func (s *Server) pooled(w http.ResponseWriter, r *http.Request, sf surface, id string, next func(http.ResponseWriter, *http.Request, string)) {
	switch err := s.pool.acquire(r.Context()); {
	case errors.Is(err, errQueueFull):
		s.logf(r, sf, "", http.StatusServiceUnavailable, "queue_full", id)
		writeJSON(w, http.StatusServiceUnavailable, s.queueFull)
		return
	case err != nil:
		return
	}
	defer s.pool.release()
	if s.pool.sleep(r.Context(), s.pool.service()) != nil {
		return
	}
	next(w, r, id)
}

// resetConn closes the connection under w with SO_LINGER 0, so the client
// sees a reset instead of an answer.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// logf writes one line for a refused or failed request: client address,
// surface, route, JSON-RPC (or HTTP) method, status, error code and request
// id. Never a body, never a header value.
func (s *Server) logf(r *http.Request, sf surface, method string, status int, code, id string) {
	if s.log == nil {
		return
	}
	msg := "failed"
	if status == http.StatusTooManyRequests {
		msg = "refused"
	}
	if method == "" {
		method = r.Method
	}
	s.log.Info(msg, "client", ClientAddr(r), "surface", string(sf), "route", r.URL.Path,
		"method", method, "status", status, "code", code, "id", id)
}

// Listener is a reference target serving on a loopback port.
type Listener struct {
	// URL is the base URL of the target, such as http://127.0.0.1:41234.
	URL    string
	srv    *http.Server
	ln     net.Listener
	served chan error
}

// Listen starts s on addr (such as "127.0.0.1:0" for a free loopback port)
// and serves until Close. A request's headers must arrive within 10 s, the
// whole request within the configured ReadTimeout.
func Listen(s *Server, addr string) (*Listener, error) {
	return ListenHandler(s, addr, s.cfg.ReadTimeout)
}

// ListenHandler is Listen for any handler (a Clients harness, say), with
// read the bound on a whole request (0: DefaultReadTimeout).
func ListenHandler(h http.Handler, addr string, read time.Duration) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if read <= 0 {
		read = DefaultReadTimeout
	}
	l := &Listener{
		URL: "http://" + ln.Addr().String(),
		ln:  ln,
		srv: &http.Server{Handler: h, ReadHeaderTimeout: min(10*time.Second, read), ReadTimeout: read,
			IdleTimeout: 2 * time.Minute},
		served: make(chan error, 1),
	}
	go func() { l.served <- l.srv.Serve(ln) }()
	return l, nil
}

// Addr returns the address the listener is bound to.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Close stops accepting, waits up to five seconds for requests in flight, and
// then closes every connection.
func (l *Listener) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = l.srv.Close()
	}
	if serr := <-l.served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
