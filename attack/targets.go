package attack

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/connectbyjbrh/ratecheck/method"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// template is a request ready to be stamped into a vegeta.Target.
type template struct {
	method string
	url    string
	header http.Header
	// mcp renders MCP requests with a generated body: every request gets a
	// unique id cheaply.
	mcp *mcpwire.Template
	// body is the whole body when it is fixed (REST, or an MCP override).
	body  []byte
	padTo int
	// session, when set, holds the MCP session whose id the request
	// carries in Mcp-Session-Id (read at every send: it may be renewed).
	session *atomic.Pointer[client.Session]
}

// targeter returns a [vegeta.Targeter] sending the stream's requests
// round-robin against base (such as http://127.0.0.1:8080), with the given
// extra headers. MCP requests carry a JSON-RPC id unique within the run,
// drawn from ids, headers that always agree with the body, and
// clientVersion as the version of their clientInfo. The targeter is safe
// for concurrent use.
func targeter(s *scenario.Stream, base string, extra http.Header, ids *atomic.Uint64, clientVersion string) (vegeta.Targeter, error) {
	return SpeakingTargeter(s, base, extra, ids, clientVersion, "", nil)
}

// SpeakingTargeter is targeter whose MCP requests speak in revision rev
// ("": [mcpwire.Latest]) and carry the session of sid when it is set.
func SpeakingTargeter(s *scenario.Stream, base string, extra http.Header, ids *atomic.Uint64, clientVersion, rev string, sid *atomic.Pointer[client.Session]) (vegeta.Targeter, error) {
	base = strings.TrimRight(base, "/")
	tpls := make([]template, len(s.Requests))
	for i, r := range s.Requests {
		t, err := requestTemplate(r, s.Sent(), base, extra, clientVersion, rev, sid)
		if err != nil {
			return nil, fmt.Errorf("stream %s request %d: %w", s.Name, i+1, err)
		}
		tpls[i] = t
	}
	var next atomic.Uint64
	return func(tgt *vegeta.Target) error {
		if tgt == nil {
			return vegeta.ErrNilTarget
		}
		t := &tpls[(next.Add(1)-1)%uint64(len(tpls))]
		tgt.Method, tgt.URL = t.method, t.url
		tgt.Header = t.header.Clone()
		switch {
		case t.mcp != nil:
			tgt.Body = t.mcp.Body(ids.Add(1))
		default:
			tgt.Body = t.body
		}
		if t.session != nil {
			if cur := t.session.Load(); cur != nil && cur.ID != "" {
				tgt.Header.Set(mcpwire.HeaderSessionID, cur.ID)
			}
		}
		if t.padTo > len(tgt.Body) {
			tgt.Body = append(tgt.Body, bytes.Repeat([]byte(" "), t.padTo-len(tgt.Body))...)
		}
		return nil
	}, nil
}

func requestTemplate(r scenario.Request, surface, base string, extra http.Header, clientVersion, rev string, sid *atomic.Pointer[client.Session]) (template, error) {
	t := template{method: r.Method, header: extra.Clone(), padTo: r.PadTo}
	if t.header == nil {
		t.header = http.Header{}
	}
	if surface == method.REST {
		if t.method == "" {
			t.method = http.MethodGet
		}
		u := base + r.Path
		if len(r.Query) > 0 {
			q := url.Values{}
			for k, v := range r.Query {
				q.Set(k, v)
			}
			u += "?" + q.Encode()
		}
		t.url = u
	} else {
		if t.method == "" {
			t.method = http.MethodPost
		}
		t.url = base + "/mcp"
		if r.Path != "" { // a contract's MCP route at an endpoint of its own
			t.url = base + r.Path
		}
		if r.RPC == "" {
			t.header.Set("Content-Type", mcpwire.ContentTypeJSON)
			t.header.Set("Accept", mcpwire.Accept)
			if rev == "" || mcpwire.Modern(rev) {
				t.header.Set(mcpwire.HeaderProtocolVersion, mcpwire.Latest)
			} else if rev >= mcpwire.Revision20250618 {
				t.header.Set(mcpwire.HeaderProtocolVersion, rev)
			}
		} else {
			tpl, err := mcpwire.Build(mcpwire.Request{Method: r.RPC, Params: r.Params, Revision: rev,
				Client: mcpwire.Implementation{Name: "ratecheck", Version: clientVersion}})
			if err != nil {
				return t, err
			}
			t.mcp = tpl
			for k, v := range tpl.Header {
				t.header[k] = v
			}
		}
	}
	if r.Body != nil {
		t.mcp, t.body = nil, []byte(*r.Body)
	}
	// A GET or DELETE of the endpoint never carries the shared session: a
	// DELETE would end it for every other request of the run.
	if surface == method.MCP && r.RPC != "" && sid != nil && !hasHeader(r.Headers, mcpwire.HeaderSessionID) {
		t.session = sid
	}
	for k, v := range r.Headers {
		if v == "" {
			t.header.Del(k)
		} else {
			t.header.Set(k, v)
		}
	}
	return t, nil
}

// hasHeader reports whether h names the header key (in any case).
func hasHeader(h map[string]string, key string) bool {
	for k := range h {
		if http.CanonicalHeaderKey(k) == http.CanonicalHeaderKey(key) {
			return true
		}
	}
	return false
}

// NextRequest is the next request tr makes, bound to ctx: for a caller
// that sends one request at a time through its own client rather than
// through an attacker.
func NextRequest(ctx context.Context, tr vegeta.Targeter) (*http.Request, error) {
	var tgt vegeta.Target
	if err := tr(&tgt); err != nil {
		return nil, err
	}
	req, err := tgt.Request()
	if err != nil {
		return nil, err
	}
	return req.WithContext(ctx), nil
}
