package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/connectbyjbrh/ratecheck/mcpwire"
)

// Session is the MCP protocol revision a [Client] speaks to an endpoint,
// as [Client.Negotiate] settled it. A Session is not changed once a
// client uses it.
type Session struct {
	// Revision is the revision spoken.
	Revision string
	// ID is the Mcp-Session-Id the server assigned on initialize (older
	// revisions only; "" when it assigned none).
	ID string
	// Supported lists the revisions the server named: server/discover's
	// supportedVersions or an unsupported-version error's data (nil when
	// it named none).
	Supported []string
	// Server is the server's clientInfo counterpart, when it sent one:
	// result._meta serverInfo on 2026-07-28, the initialize result's
	// serverInfo before.
	Server mcpwire.Implementation
	// Requests counts the HTTP requests negotiation sent (every attempt
	// of server/discover, initialize and notifications/initialized).
	Requests int
}

// Session returns the session the client speaks in, or nil before
// [Client.Negotiate] or [Client.UseSession] (the client then speaks
// [mcpwire.Latest]).
func (c *Client) Session() *Session { return c.session.Load() }

// UseSession makes the client speak in s (nil: [mcpwire.Latest], no
// session), such as a session negotiated by another client against the
// same server.
func (c *Client) UseSession(s *Session) { c.session.Store(s) }

// Negotiate settles the revision the client speaks to the MCP endpoint,
// keeps it for later calls and returns it. want is "auto" (or "") or one
// of [mcpwire.Revisions].
//
// With "auto" it asks server/discover in the newest revision. A
// DiscoverResult's supportedVersions, or an unsupported-version error
// (-32022) listing data.supported, name the newest revision both sides
// speak. A 4xx answer without such an error, from a server older than
// server/discover, falls back to initialize in 2025-11-25, and the
// server's answer names the revision. A 4xx carrying an error only a
// 2026-07-28 server sends (-32020, -32021) is an error: the server speaks
// that revision and refused the request itself.
//
// A named revision is spoken as is: 2026-07-28 needs no request; an older
// one is initialized, and a server that answers initialize with another
// revision is an error.
//
// Older revisions then send notifications/initialized, and every later
// request carries the MCP-Protocol-Version (from 2025-06-18) and the
// Mcp-Session-Id the server assigned.
func (c *Client) Negotiate(ctx context.Context, want string) (*Session, error) {
	var s *Session
	var err error
	switch {
	case want == "" || want == "auto":
		s, err = c.discover(ctx)
	case !mcpwire.Known(want):
		return nil, fmt.Errorf("unknown MCP revision %q (want auto or one of %s)", want, strings.Join(mcpwire.Revisions(), ", "))
	case mcpwire.Modern(want):
		s = &Session{Revision: want}
	default:
		s = &Session{}
		err = c.initialize(ctx, want, true, s)
	}
	if err != nil {
		return nil, err
	}
	c.session.Store(s)
	return s, nil
}

// discover asks server/discover and settles the revision from its answer.
func (c *Client) discover(ctx context.Context) (*Session, error) {
	s := &Session{}
	resp, err := c.call(ctx, nil, "server/discover", nil, false)
	if resp != nil {
		s.Requests += resp.Attempts
	}
	if err != nil {
		return nil, fmt.Errorf("server/discover: %w", err)
	}
	rpc, rerr := resp.RPC()
	switch ok2xx := resp.Status >= 200 && resp.Status < 300; {
	case ok2xx && rerr == nil && rpc.Result != nil:
		var res struct {
			SupportedVersions []string `json:"supportedVersions"`
			Meta              struct {
				Server mcpwire.Implementation `json:"io.modelcontextprotocol/serverInfo"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(rpc.Result, &res); err != nil || res.SupportedVersions == nil {
			return nil, fmt.Errorf("server/discover: the result is not a DiscoverResult (no supportedVersions)")
		}
		s.Supported, s.Server = res.SupportedVersions, res.Meta.Server
		return s, c.settle(ctx, s)
	case resp.Status >= 400 && resp.Status < 500:
		if rerr == nil && rpc.Error != nil {
			if d, ok := rpc.Error.Unsupported(); ok {
				s.Supported = d.Supported
				return s, c.settle(ctx, s)
			}
			switch rpc.Error.Code {
			case mcpwire.CodeHeaderMismatch, mcpwire.CodeMissingRequiredClientCapabilities:
				return nil, fmt.Errorf("server/discover: answered %d with %v: the server speaks %s and refused the request", resp.Status, rpc.Error, mcpwire.Latest)
			}
		}
		return s, c.initialize(ctx, mcpwire.Revision20251125, false, s)
	}
	return nil, fmt.Errorf("server/discover: answered %d (%s)", resp.Status, describe(resp, rpc, rerr))
}

// settle picks the newest revision of s.Supported that the client speaks,
// and initializes it when it is an older one.
func (c *Client) settle(ctx context.Context, s *Session) error {
	rev, ok := mcpwire.Newest(s.Supported)
	if !ok {
		return fmt.Errorf("no MCP revision in common: the server speaks %s, ratecheck %s",
			strings.Join(s.Supported, ", "), strings.Join(mcpwire.Revisions(), ", "))
	}
	if mcpwire.Modern(rev) {
		s.Revision = rev
		return nil
	}
	return c.initialize(ctx, rev, false, s)
}

// initialize opens a session of an older revision: initialize, then
// notifications/initialized. With exact set, the server must answer rev.
func (c *Client) initialize(ctx context.Context, rev string, exact bool, s *Session) error {
	client := c.ClientInfo
	if client == (mcpwire.Implementation{}) {
		client = mcpwire.DefaultClient
	}
	params := map[string]any{"protocolVersion": rev, "capabilities": map[string]any{}, "clientInfo": client}
	resp, err := c.call(ctx, &Session{Revision: rev}, "initialize", params, false)
	if resp != nil {
		s.Requests += resp.Attempts
	}
	if err != nil {
		return fmt.Errorf("initialize (%s): %w", rev, err)
	}
	rpc, rerr := resp.RPC()
	if resp.Status < 200 || resp.Status > 299 || rerr != nil || rpc.Result == nil {
		return fmt.Errorf("initialize (%s): answered %d (%s)", rev, resp.Status, describe(resp, rpc, rerr))
	}
	var res struct {
		ProtocolVersion string                 `json:"protocolVersion"`
		ServerInfo      mcpwire.Implementation `json:"serverInfo"`
	}
	_ = json.Unmarshal(rpc.Result, &res)
	switch got := res.ProtocolVersion; {
	case !mcpwire.Known(got) || mcpwire.Modern(got):
		return fmt.Errorf("initialize (%s): the server answered revision %q, which ratecheck does not speak in a session", rev, got)
	case exact && got != rev:
		return fmt.Errorf("initialize (%s): the server answered revision %s", rev, got)
	}
	s.Revision, s.ID, s.Server = res.ProtocolVersion, resp.Header.Get(mcpwire.HeaderSessionID), res.ServerInfo
	resp, err = c.call(ctx, s, "notifications/initialized", nil, true)
	if resp != nil {
		s.Requests += resp.Attempts
	}
	if err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	if resp.Status < 200 || resp.Status > 299 {
		rpc, rerr := resp.RPC()
		return fmt.Errorf("notifications/initialized: answered %d (%s)", resp.Status, describe(resp, rpc, rerr))
	}
	return nil
}

// renew replaces an expired session old with a new one of the same
// revision, once however many calls found it expired.
func (c *Client) renew(ctx context.Context, old *Session) (*Session, error) {
	c.renewMu.Lock()
	defer c.renewMu.Unlock()
	if cur := c.session.Load(); cur != old {
		return cur, nil // renewed meanwhile
	}
	s := &Session{Supported: old.Supported}
	if err := c.initialize(ctx, old.Revision, true, s); err != nil {
		return nil, err
	}
	c.session.Store(s)
	return s, nil
}

// describe says what an answer that negotiation could not use was.
func describe(resp *Response, rpc *mcpwire.Response, rerr error) string {
	switch {
	case rerr == nil && rpc.Error != nil:
		return rpc.Error.Error()
	case rerr == nil:
		return "a JSON-RPC result"
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "no content type"
	}
	return fmt.Sprintf("%s, %d bytes, not JSON-RPC", ct, len(resp.Body))
}
