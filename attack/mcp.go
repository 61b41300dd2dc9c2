package attack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/connectbyjbrh/ratecheck/method"
)

// MCPSession is how the MCP requests of a run speak to the target. The
// revision (Want: auto or one of [mcpwire.Revisions]) is settled once,
// before the run, by [client.Client.Negotiate] from the address From, the
// contract probes' address: never the limit address, whose budget is
// under test. Every MCP request of the run is then built in that revision
// and, for a revision before 2026-07-28, carries the Mcp-Session-Id the
// server assigned and MCP-Protocol-Version.
//
// The session is used from every source address. A target that binds
// sessions to an address answers 404 to it from another one: that address
// then gets a handshake of its own, once, and so does any address whose
// session the server ended during the run; run.json counts them.
//
// Set the exported fields before the run; an MCPSession serves one run
// and is safe for concurrent use.
type MCPSession struct {
	// Want is the revision asked for: "auto" (or "") or a revision.
	Want string
	// From is the source address negotiation goes out from ("": the
	// system's choice).
	From string
	// Timeout bounds each handshake request (0: 10 s).
	Timeout time.Duration
	// ClientVersion is the version of the clientInfo sent.
	ClientVersion string
	// Settle, when set, is how long to wait after a negotiation that sent
	// requests: when From is also the limit address, a window lets the
	// handshake leave the budget under test before the run starts.
	Settle time.Duration
	// Network is how the handshakes reach the target (nil: HTTP/1.1, the
	// system's roots), as the run's own requests do.
	Network *client.Network
	// HTTP, when set, is the client the handshakes from source go out
	// through instead of Network's (a simulated run's in-process target).
	HTTP func(source string) *http.Client

	mu       sync.Mutex
	target   string
	base     *client.Session
	bySource map[string]*atomic.Pointer[client.Session]
	renewing map[string]bool
	renewed  map[string]time.Time
	info     archive.MCPInfo
	done     bool
	pending  sync.WaitGroup
}

// Negotiation is how the MCP revision of a run was settled (see
// [MCPSession.Negotiate]).
type Negotiation struct {
	// Want is the revision asked for: "auto" or one of [mcpwire.Revisions].
	Want string
	// Revision is the revision the run speaks.
	Revision string
	// From is the source address the handshake went out from ("": the
	// system's choice).
	From string
	// Requests is how many requests the handshake sent, failed attempts
	// included; Session says the server assigned a session.
	Requests int
	Session  bool
	// Err, when set, is why an "auto" negotiation failed: the run then
	// speaks Revision without a session.
	Err error
	// Settled is how long the run waited after the handshake for it to
	// leave the limit address's window (0: it did not wait; see
	// [MCPSession.Settle]).
	Settled time.Duration
}

// RevisionError is a revision asked for by name that the target does not
// speak.
type RevisionError struct {
	Want string
	Err  error
}

func (e *RevisionError) Error() string { return fmt.Sprintf("MCP revision %s: %v", e.Want, e.Err) }
func (e *RevisionError) Unwrap() error { return e.Err }

// Negotiate settles the revision against target (a base URL) and returns
// how (nil when it was settled before). An "auto" negotiation that fails
// is no error (Negotiation.Err says why): the run then speaks
// [mcpwire.Latest] without a session and its answers say what the target
// made of it. A named revision the target does not speak is a
// *RevisionError. Calling Negotiate again does nothing.
func (m *MCPSession) Negotiate(ctx context.Context, target string) (*Negotiation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return nil, nil
	}
	m.done, m.target = true, target
	want := m.Want
	if want == "" {
		want = "auto"
	}
	m.info = archive.MCPInfo{Requested: want, From: m.From}
	c := m.client(target, m.From)
	defer c.HTTP.CloseIdleConnections()
	c.OnAttempt = func(client.Attempt) { m.info.Requests++ } // every attempt, failed ones too
	s, nerr := c.Negotiate(ctx, want)
	m.info.Handshakes = 1
	if nerr != nil {
		if want != "auto" {
			return nil, &RevisionError{Want: want, Err: nerr}
		}
		m.info.Error = nerr.Error()
		m.base = &client.Session{Revision: mcpwire.Latest}
		return &Negotiation{Want: want, Revision: mcpwire.Latest, From: m.From, Requests: m.info.Requests, Err: nerr}, nil
	}
	m.base = s
	m.info.Supported, m.info.Session = s.Supported, s.ID != ""
	if s.Server.Name != "" {
		m.info.Server = strings.TrimSuffix(s.Server.Name+"/"+s.Server.Version, "/")
	}
	n := &Negotiation{Want: want, Revision: s.Revision, From: m.From, Requests: m.info.Requests, Session: s.ID != ""}
	if m.Settle > 0 && m.info.Requests > 0 {
		n.Settled = m.Settle
		t := time.NewTimer(m.Settle)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-t.C:
		}
	}
	return n, nil
}

// Revision returns the revision spoken ("" before [MCPSession.Negotiate]).
func (m *MCPSession) Revision() string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.base == nil {
		return ""
	}
	return m.base.Revision
}

// Session returns the session negotiated (nil before
// [MCPSession.Negotiate]), for clients that share it (see
// [client.Client.UseSession]).
func (m *MCPSession) Session() *client.Session {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.base
}

// Info returns what run.json records of the negotiation.
func (m *MCPSession) Info() *archive.MCPInfo {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.done {
		return nil
	}
	info := m.info
	info.Supported = slices.Clone(info.Supported)
	info.BoundSources = slices.Clone(info.BoundSources)
	return &info
}

// Record writes the revision and the negotiation into info (nothing
// before [MCPSession.Negotiate]).
func (m *MCPSession) Record(info *archive.RunInfo) {
	if mi := m.Info(); mi != nil {
		info.MCPRevision, info.MCP = m.Revision(), mi
	}
}

// Speech returns how the requests from source speak: the revision, and
// the session they carry (nil when there is none).
func (m *MCPSession) Speech(source string) (rev string, sid *atomic.Pointer[client.Session]) {
	if m == nil {
		return "", nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.base == nil {
		return "", nil
	}
	if m.base.ID == "" {
		return m.base.Revision, nil
	}
	if m.bySource == nil {
		m.bySource = map[string]*atomic.Pointer[client.Session]{}
	}
	p := m.bySource[source]
	if p == nil {
		p = new(atomic.Pointer[client.Session])
		p.Store(m.base)
		m.bySource[source] = p
	}
	return m.base.Revision, p
}

// Ended handles a 404 to a request from source, sent at sent, that
// carried the session: the target ended that session, or binds sessions
// to the address they were made from. source then gets a handshake of its
// own, from itself, once at a time; it returns at once and the handshake
// runs meanwhile. Requests sent before it ends still carry the old
// session, so a 404 to one sent before source's last handshake ended
// (while it ran, or before) asks for nothing: that session is already
// replaced.
func (m *MCPSession) Ended(ctx context.Context, source string, sent time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.bySource[source]
	if m.base == nil || m.base.ID == "" || p == nil || m.renewing[source] || sent.Before(m.renewed[source]) {
		return
	}
	if m.renewing == nil {
		m.renewing, m.renewed = map[string]bool{}, map[string]time.Time{}
	}
	m.renewing[source] = true
	old := p.Load()
	m.pending.Add(1)
	go func() {
		defer m.pending.Done()
		var sent atomic.Int64
		c := m.client(m.target, source)
		defer c.HTTP.CloseIdleConnections()
		c.OnAttempt = func(client.Attempt) { sent.Add(1) }
		s, err := c.Negotiate(ctx, old.Revision)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.renewing[source] = false
		m.info.Handshakes++
		m.info.Requests += int(sent.Load())
		if err != nil {
			return
		}
		p.Store(s)
		// A request stamped from now on is built after the Store above
		// (Vegeta stamps a hit before it asks for its target).
		m.renewed[source] = time.Now()
		if source != m.From && !slices.Contains(m.info.BoundSources, source) {
			m.info.BoundSources = append(m.info.BoundSources, source)
		}
	}()
}

// Wait waits for the handshakes under way.
func (m *MCPSession) Wait() {
	if m != nil {
		m.pending.Wait()
	}
}

// client is a client of target sending from source.
func (m *MCPSession) client(target, source string) *client.Client {
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	hc := m.Network.Client(source, timeout)
	if m.HTTP != nil {
		hc = m.HTTP(source)
	}
	return &client.Client{BaseURL: target, HTTP: hc, Attempts: 2,
		Backoff:    client.Backoff{Base: 100 * time.Millisecond, Cap: time.Second},
		ClientInfo: mcpwire.Implementation{Name: "ratecheck", Version: m.ClientVersion}}
}

// speaksMCP reports whether a profile sends MCP requests.
func speaksMCP(p *scenario.Profile) bool {
	for _, s := range p.Streams {
		if s.Sent() == method.MCP {
			return true
		}
	}
	return false
}

// carriesSession reports whether every request of an MCP stream carries
// the run's session: a JSON-RPC message whose headers do not name their
// own Mcp-Session-Id.
func carriesSession(s *scenario.Stream) bool {
	for _, r := range s.Requests {
		if r.RPC == "" || hasHeader(r.Headers, mcpwire.HeaderSessionID) {
			return false
		}
	}
	return len(s.Requests) > 0
}
