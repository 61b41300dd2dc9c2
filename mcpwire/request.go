package mcpwire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
)

// Request is one MCP message a client sends: a request, or a notification
// when Notification is set. Only Method is required.
type Request struct {
	// Revision is the protocol revision spoken ("" means [Latest]).
	Revision string
	// Method is the JSON-RPC method, such as "tools/call".
	Method string
	// Params are the JSON-RPC params (nil: none, or only the _meta that a
	// modern revision adds). A "_meta" member, which must be an object,
	// is merged with the one built: its keys win, as in the official SDKs,
	// so a caller can override one field and keep the rest.
	Params map[string]any
	// Client is sent as clientInfo on modern revisions (zero:
	// [DefaultClient]).
	Client Implementation
	// Capabilities are sent as clientCapabilities on modern revisions (nil:
	// {}, no optional capability).
	Capabilities map[string]any
	// SessionID is sent as Mcp-Session-Id when set: the session an older
	// revision's server assigned on initialize.
	SessionID string
	// Notification makes the message a notification: no id.
	Notification bool
}

// Template is a [Request] rendered once: the headers and the body around
// the JSON-RPC id. Its methods are safe for concurrent use; do not modify
// Header.
type Template struct {
	// Method is the JSON-RPC method.
	Method string
	// Header holds every transport header the request needs.
	Header http.Header
	// pre and post surround the id; a notification's body is pre alone.
	pre, post []byte
	notify    bool
}

// Build renders r. It fails only when params cannot be encoded as JSON or
// params._meta is not an object.
//
// On a modern revision ([Modern]) params._meta carries protocolVersion,
// clientInfo and clientCapabilities (merged with the caller's), and the
// headers are MCP-Protocol-Version (the body's protocolVersion, so the two
// agree even when the caller overrides it), Mcp-Method and, for
// tools/call, prompts/get and resources/read, Mcp-Name (encoded by
// [EncodeHeaderValue]).
//
// On an older revision the body is sent as given, MCP-Protocol-Version is
// sent from 2025-06-18 on except with initialize (the client does not know
// the revision before the server answers it), and Mcp-Method and Mcp-Name
// are not sent (those revisions do not define them).
//
// Every request carries Content-Type: application/json and the Accept of
// both answer forms; Mcp-Session-Id when SessionID is set.
func Build(r Request) (*Template, error) {
	rev := r.Revision
	if rev == "" {
		rev = Latest
	}
	h := http.Header{
		"Content-Type": {ContentTypeJSON},
		"Accept":       {Accept},
	}
	params := r.Params
	if Modern(rev) {
		var err error
		if params, err = withMeta(r, rev); err != nil {
			return nil, err
		}
		if v, ok := params["_meta"].(map[string]any)[MetaProtocolVersion].(string); ok {
			rev = v
		}
		h.Set(HeaderProtocolVersion, rev)
		h.Set(HeaderMethod, r.Method)
		if name, ok := NameOf(r.Method, params); ok {
			h.Set(HeaderName, EncodeHeaderValue(name))
		}
	} else if rev >= Revision20250618 && r.Method != "initialize" {
		h.Set(HeaderProtocolVersion, rev)
	}
	if r.SessionID != "" {
		h.Set(HeaderSessionID, r.SessionID)
	}
	method, err := marshal(r.Method)
	if err != nil {
		return nil, err
	}
	var p []byte
	if params != nil {
		if p, err = marshal(params); err != nil {
			return nil, fmt.Errorf("params: %w", err)
		}
	}
	t := &Template{Method: r.Method, Header: h, notify: r.Notification}
	if r.Notification {
		t.pre = concat(`{"jsonrpc":"2.0","method":`, method, p, `}`)
	} else {
		t.pre = []byte(`{"jsonrpc":"2.0","id":`)
		t.post = concat(`,"method":`, method, p, `}`)
	}
	return t, nil
}

// concat joins the body parts; p, when present, goes after `,"params":`.
func concat(head string, method, p []byte, tail string) []byte {
	b := append([]byte(head), method...)
	if p != nil {
		b = append(append(b, `,"params":`...), p...)
	}
	return append(b, tail...)
}

// withMeta returns a copy of r.Params whose _meta holds the three fields
// of a modern request, merged under the caller's own.
func withMeta(r Request, rev string) (map[string]any, error) {
	client := r.Client
	if client == (Implementation{}) {
		client = DefaultClient
	}
	caps := r.Capabilities
	if caps == nil {
		caps = map[string]any{}
	}
	meta := map[string]any{
		MetaProtocolVersion:    rev,
		MetaClientInfo:         client,
		MetaClientCapabilities: caps,
	}
	switch m := r.Params["_meta"].(type) {
	case nil:
	case map[string]any:
		maps.Copy(meta, m)
	case map[string]string:
		for k, v := range m {
			meta[k] = v
		}
	default:
		return nil, fmt.Errorf("params._meta must be an object, not %T", m)
	}
	params := make(map[string]any, len(r.Params)+1)
	maps.Copy(params, r.Params)
	params["_meta"] = meta
	return params, nil
}

// marshal encodes v as JSON without escaping <, > and & (URIs stay as
// written).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Body returns the body with the given id (ignored by a notification).
// It allocates once.
func (t *Template) Body(id uint64) []byte {
	return t.AppendBody(make([]byte, 0, t.maxLen()), id)
}

// AppendBody appends the body with the given id to dst.
func (t *Template) AppendBody(dst []byte, id uint64) []byte {
	dst = append(dst, t.pre...)
	if t.notify {
		return dst
	}
	dst = strconv.AppendUint(dst, id, 10)
	return append(dst, t.post...)
}

// maxLen is the length of the longest body (a 20-digit id).
func (t *Template) maxLen() int { return len(t.pre) + 20 + len(t.post) }

// NewRequest returns an HTTP request of the template with the given id,
// posted to endpoint (such as http://127.0.0.1:8080/mcp).
func (t *Template) NewRequest(ctx context.Context, endpoint string, id uint64) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(t.Body(id)))
	if err != nil {
		return nil, err
	}
	req.Header = t.Header.Clone()
	return req, nil
}
