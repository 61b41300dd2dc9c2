package refserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ClientsConfig configures a Clients harness.
type ClientsConfig struct {
	// N is the number of client programs: the barrier waits for N first
	// requests.
	N int
	// Requests is how many logical requests each client is asked to make
	// (0: not known). A client that polls one request (repeats it after a
	// success) gets its failure-table answer only on its last one, so that
	// a repeat after it can only be a retry of the answer.
	Requests int
	// Surface is the surface the clients call: rest or mcp.
	Surface string
	// Barrier bounds how long first requests wait for all N clients;
	// past it, those that arrived are released anyway (Barrier reports it).
	Barrier time.Duration
	// Limited is the target retries of a client's first request meet (its
	// budget spent before the clients start); Open answers the scripted
	// requests that pass (it is not limited).
	Limited, Open http.Handler
	// Counted, when set, is called for each shared 429 of the barrier, so
	// that the limited target counts it as it counts its own refusals.
	Counted func()
	// Clock returns monotonic time since an arbitrary origin (nil: a real
	// one started by NewClients).
	Clock func() time.Duration
	// Record, when set, receives every request as it was answered, from
	// the request's goroutine.
	Record func(Arrival)
}

// Arrival is one request of a client program as the server saw it.
type Arrival struct {
	// Client is the client's number (its base URL's /c/N); Request and
	// Attempt number its logical request and the attempt within it, from
	// the fingerprints: the same fingerprint again is a retry, another one
	// a new request.
	Client, Request, Attempt int
	// Fingerprint digests the request: method, path and query, and the
	// body (an MCP body without its JSON-RPC id, which a client may renew
	// on a retry).
	Fingerprint  string
	Method, Path string
	// At is when the request arrived, Done when its answer was written
	// (monotonic, see ClientsConfig.Clock).
	At, Done time.Duration
	// Status is the answer's status (0: the connection was reset).
	Status int
	// Answer says what gave it: "barrier" (the shared 429 of the first
	// requests), "limiter" (a retry of the first request, through the
	// limited target), "answer" (a failure-table answer of the script,
	// never to be retried), "fault" (a 503 or a reset of the script, to be
	// retried) or "pass" (the open target's answer).
	Answer string
	// SessionID and Origin say whether the request sent Mcp-Session-Id or
	// Origin.
	SessionID, Origin bool
	// Repeat is set on a new logical request that repeats, byte for byte,
	// the one before it, which got a failure-table answer, from a client
	// that polls one request (it repeated one after a success): a retry of
	// that answer cannot be told from it.
	Repeat bool
}

// Clients is the harness of a fleet of client programs (ratecheck fleet
// --client-cmd): each program's base URL carries its number, /c/17, which
// the harness strips before routing. Its first request waits at a
// barrier until all N have arrived (so that interpreter start-up is not
// taken for jitter) and all are answered 429 together; retries of it meet
// the limited target; later requests are answered from a script that
// cycles through a failure-table answer (REST 422 or 404; MCP -32602 or a
// tool error), a 503 then success, a reset then success, and success.
// Every request is recorded. Clients is an http.Handler, safe for
// concurrent use.
type Clients struct {
	cfg      ClientsConfig
	mu       sync.Mutex
	state    map[int]*clientState
	arrived  int
	release  chan struct{}
	released bool
	firstAt  time.Duration // the first request at the barrier
	openedAt time.Duration // when the barrier opened
	timedOut bool
}

// clientState is what the harness knows of one client program: its
// current request, what it was last answered (set as the answer's status
// is written, before the client can send again), and whether it polls
// (repeated a request after a success).
type clientState struct {
	fingerprint      string
	request, attempt int
	last             string // the last answer's kind (see Arrival.Answer)
	lastOK           bool   // and whether it was a 2xx
	poller           bool
}

// next numbers a's request and attempt: the same fingerprint again is a
// retry, but after a success it is a new request (the client polls), and
// after a failure-table answer from a client that polls it is a new
// request that may be a retry of the answer (Repeat), unless it had made
// all its requests (of requests, when known).
func (st *clientState) next(a *Arrival, requests int) {
	same := st.request > 0 && st.fingerprint == a.Fingerprint
	switch {
	case same && st.lastOK && st.last != "answer":
		same, st.poller = false, true
	case same && st.last == "answer" && st.poller && (requests == 0 || st.request < requests):
		same, a.Repeat = false, true
	}
	if !same {
		st.request, st.attempt, st.fingerprint = st.request+1, 0, a.Fingerprint
	}
	st.attempt++
	st.last, st.lastOK = "", false
	a.Request, a.Attempt = st.request, st.attempt
}

// answered notes what st's client was answered (kind, status).
func (c *Clients) answered(st *clientState, kind string, status int) {
	c.mu.Lock()
	st.last, st.lastOK = kind, status >= 200 && status <= 299
	c.mu.Unlock()
}

// NewClients returns a harness configured by cfg.
func NewClients(cfg ClientsConfig) *Clients {
	if cfg.Clock == nil {
		start := time.Now()
		cfg.Clock = func() time.Duration { return time.Since(start) }
	}
	return &Clients{cfg: cfg, state: map[int]*clientState{}, release: make(chan struct{}), firstAt: -1}
}

// BarrierReport says how the barrier went: how many clients arrived,
// how long it waited from the first arrival to its opening, and whether it
// opened on its timeout rather than on the N-th arrival.
type BarrierReport struct {
	Arrived  int
	Waited   time.Duration
	TimedOut bool
	Opened   bool
	// OpenedAt is when it opened, on the harness's clock (set when
	// Opened): the clients' retries all come after it.
	OpenedAt time.Duration
}

// Barrier reports on the barrier so far.
func (c *Clients) Barrier() BarrierReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := BarrierReport{Arrived: c.arrived, TimedOut: c.timedOut, Opened: c.released}
	if c.released {
		b.OpenedAt = c.openedAt
		if c.firstAt >= 0 {
			b.Waited = c.openedAt - c.firstAt
		}
	}
	return b
}

// Open opens the barrier now (the caller gave up waiting: clients that
// never arrive).
func (c *Clients) Open() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open(false)
}

func (c *Clients) open(byCount bool) {
	if c.released {
		return
	}
	c.released, c.timedOut, c.openedAt = true, !byCount, c.cfg.Clock()
	close(c.release)
}

// ServeHTTP implements http.Handler.
func (c *Clients) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := c.cfg.Clock()
	rest, ok := strings.CutPrefix(r.URL.Path, "/c/")
	id, path, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(id)
	if !ok || err != nil || n < 1 || n > c.cfg.N {
		writeJSON(w, http.StatusNotFound, restError("not_found", "no such client: base URLs are /c/1 to /c/N"))
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, MaxMCPBody+1))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.URL.Path = "/" + path
	r.URL.RawPath = ""
	a := Arrival{Client: n, Method: r.Method, Path: r.URL.Path, At: at, Fingerprint: fingerprint(r, body),
		SessionID: r.Header.Get("Mcp-Session-Id") != "", Origin: r.Header.Get("Origin") != ""}
	c.mu.Lock()
	st := c.state[n]
	if st == nil {
		st = &clientState{}
		c.state[n] = st
	}
	st.next(&a, c.cfg.Requests)
	first, poller := a.Request == 1 && a.Attempt == 1, st.poller
	if first {
		if c.firstAt < 0 {
			c.firstAt = at
		}
		if c.arrived++; c.arrived == c.cfg.N {
			c.open(true)
		}
	}
	c.mu.Unlock()

	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	rec.onStatus = func(status int) { c.answered(st, a.Answer, status) }
	switch {
	case first:
		a.Answer = "barrier"
		select {
		case <-c.release:
		case <-time.After(c.cfg.Barrier):
			c.Open()
		case <-r.Context().Done():
			return
		}
		c.refuse(rec, body)
		if c.cfg.Counted != nil {
			c.cfg.Counted()
		}
	case a.Request == 1:
		a.Answer = "limiter"
		c.cfg.Limited.ServeHTTP(rec, r)
	default:
		a.Answer = scriptKind(a.Request, a.Attempt)
		if poller && c.cfg.Requests > 0 { // a poller's answer comes last: see ClientsConfig.Requests
			switch {
			case a.Request >= c.cfg.Requests:
				a.Answer = "answer"
			case a.Answer == "answer":
				a.Answer = "pass"
			}
		}
		c.script(rec, r, body, a.Request, a.Attempt, a.Answer)
	}
	a.Status, a.Done = rec.status, c.cfg.Clock()
	if rec.reset {
		a.Status = 0
	}
	if c.cfg.Record != nil {
		c.cfg.Record(a)
	}
	rec.deliver()
}

// scriptKind is what the script answers logical request k (from 2) of a
// client, attempt n: a cycle of a failure-table answer, a 503 then the
// open target, a reset then the open target, and the open target.
func scriptKind(k, n int) string {
	switch {
	case k%4 == 2:
		return "answer"
	case (k%4 == 3 || k%4 == 0) && n == 1:
		return "fault"
	}
	return "pass"
}

// script answers logical request k, attempt n, as kind says.
func (c *Clients) script(w *recorder, r *http.Request, body []byte, k, n int, kind string) {
	switch kind {
	case "answer":
		c.answer(w, body, k)
	case "fault":
		if k%4 == 0 {
			w.reset = true // ServeHTTP resets the connection once the arrival is recorded
			w.told(0)
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, restError("unavailable", "scripted fault: retry"))
	default:
		c.cfg.Open.ServeHTTP(w, r)
	}
}

// answer writes a failure-table answer, alternating between two rows:
// REST 422 and 404, MCP an unknown tool (-32602) and a tool error.
func (c *Clients) answer(w http.ResponseWriter, body []byte, k int) {
	second := k%8 == 6
	if c.cfg.Surface != string(surfaceMCP) {
		if second {
			writeJSON(w, http.StatusNotFound, restError("not_found", "scripted answer: no such page; do not retry"))
			return
		}
		writeJSON(w, http.StatusUnprocessableEntity, restError("invalid_parameter", "scripted answer: fix the request; do not retry"))
		return
	}
	id := rpcID(body)
	if second {
		writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: id, Result: toolError("scripted tool error: the tool ran and could not answer")})
		return
	}
	writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: CodeInvalidParams, Message: "scripted answer: invalid params; do not retry"}})
}

// refuse writes the surface's documented 429.
func (c *Clients) refuse(w http.ResponseWriter, body []byte) {
	if c.cfg.Surface == string(surfaceMCP) {
		writeJSON(w, http.StatusTooManyRequests, rpcResponse{JSONRPC: "2.0", ID: rpcID(body),
			Error: &rpcError{Code: CodeInternalError, Message: "rate limited: the shared budget is spent"}})
		return
	}
	writeJSON(w, http.StatusTooManyRequests, restError("rate_limited", "the shared budget is spent"))
}

// rpcID returns the JSON-RPC id of a body (nil when it has none).
func rpcID(body []byte) json.RawMessage {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &req)
	return req.ID
}

// fingerprint digests a request: method, path and query, and body — an
// MCP body without its id, which a client may renew on each attempt.
func fingerprint(r *http.Request, body []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil {
		delete(m, "id")
		body, _ = json.Marshal(m) // map keys sorted: the same body digests the same
	}
	h := sha256.New()
	io.WriteString(h, r.Method+" "+r.URL.RequestURI()+"\n")
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// recorder remembers the status written, and whether the connection is to
// be reset instead. It holds the answer back (ServeHTTP delivers it) until
// the arrival is on record, so that a client never sees an answer, and never
// sends its next request, before the arrival it answers is recorded.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	reset  bool
	body   bytes.Buffer
	// onStatus, when set, is told the status before it is written (0: a
	// reset), once.
	onStatus func(int)
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
		r.told(code)
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.wrote = true
		r.told(http.StatusOK)
	}
	return r.body.Write(b)
}

// deliver sends the answer held back, or resets the connection.
func (r *recorder) deliver() {
	if r.reset {
		resetConn(r.ResponseWriter)
		return
	}
	r.ResponseWriter.WriteHeader(r.status)
	_, _ = r.ResponseWriter.Write(r.body.Bytes())
}

// told calls onStatus once.
func (r *recorder) told(code int) {
	if r.onStatus != nil {
		f := r.onStatus
		r.onStatus = nil
		f(code)
	}
}

// Unwrap lets http.ResponseController reach the connection (a reset).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
