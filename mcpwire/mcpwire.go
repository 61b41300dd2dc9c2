// Package mcpwire is what an MCP request and its answer look like on the
// wire of the Streamable HTTP transport: the protocol revisions, the
// per-request _meta of revision 2026-07-28, the transport headers that
// mirror the body, and the two forms of an answer (application/json and
// text/event-stream).
//
// It is the one place that knows these rules: the client, the attackers
// and the reference target all build or read MCP messages through it. It
// depends on the standard library only.
//
// A request is rendered once into a [Template] and stamped with a JSON-RPC
// id per send, which costs one allocation: load generators send thousands
// a second.
package mcpwire

import (
	"encoding/base64"
	"mime"
	"slices"
	"strings"
)

// The protocol revisions this package speaks, newest first.
const (
	// Latest is the newest revision: stateless, with protocol version,
	// client identity and capabilities in every request's params._meta.
	Latest = "2026-07-28"
	// Revision20251125 and the older ones establish a session with
	// initialize and notifications/initialized; the server may assign an
	// Mcp-Session-Id.
	Revision20251125 = "2025-11-25"
	// Revision20250618 is the first revision with the MCP-Protocol-Version
	// header.
	Revision20250618 = "2025-06-18"
	// Revision20250326 is the first revision of the Streamable HTTP
	// transport; it has no MCP-Protocol-Version header.
	Revision20250326 = "2025-03-26"
)

var revisions = []string{Latest, Revision20251125, Revision20250618, Revision20250326}

// Revisions returns the revisions this package speaks, newest first. The
// slice is a copy.
func Revisions() []string { return slices.Clone(revisions) }

// Known reports whether rev is one of [Revisions].
func Known(rev string) bool { return slices.Contains(revisions, rev) }

// Modern reports whether rev carries version, identity and capabilities
// in every request (2026-07-28 and later) rather than in an initialize
// handshake. Revisions are dates, so they compare as strings.
func Modern(rev string) bool { return rev >= Latest }

// Newest returns the newest of [Revisions] that supported also lists, and
// whether there is one.
func Newest(supported []string) (string, bool) {
	for _, r := range revisions {
		if slices.Contains(supported, r) {
			return r, true
		}
	}
	return "", false
}

// Keys of params._meta (requests) and result._meta (results).
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// HTTP headers of the Streamable HTTP transport.
const (
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderSessionID       = "Mcp-Session-Id"
	// Accept is the Accept header every POST carries: a client must read
	// both answer forms.
	Accept = "application/json, text/event-stream"
	// ContentTypeJSON and ContentTypeEventStream are the two answer forms.
	ContentTypeJSON        = "application/json"
	ContentTypeEventStream = "text/event-stream"
)

// JSON-RPC error codes that MCP defines (besides JSON-RPC's own).
const (
	// CodeHeaderMismatch: a transport header is missing or disagrees with
	// the body.
	CodeHeaderMismatch = -32020
	// CodeMissingRequiredClientCapabilities: the request needs a client
	// capability it did not declare.
	CodeMissingRequiredClientCapabilities = -32021
	// CodeUnsupportedProtocolVersion: the server does not speak the
	// requested revision; data lists the ones it does.
	CodeUnsupportedProtocolVersion = -32022
)

// Implementation names a client or server, as clientInfo and serverInfo
// carry it.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// DefaultClient is the clientInfo sent when a [Request] names none.
var DefaultClient = Implementation{Name: "ratecheck", Version: "dev"}

// UnsupportedVersion is the data of a [CodeUnsupportedProtocolVersion]
// error.
type UnsupportedVersion struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

// NameOf returns the params member the Mcp-Name header mirrors for method
// (the tool or prompt name, the resource URI), and whether the method has
// one. A member that is missing or not a string is "".
func NameOf(method string, params map[string]any) (string, bool) {
	key := nameKey(method)
	if key == "" {
		return "", false
	}
	s, _ := params[key].(string)
	return s, true
}

// nameKey is the params member Mcp-Name mirrors, or "" when the method
// has none.
func nameKey(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

const (
	b64Prefix = "=?base64?"
	b64Suffix = "?="
)

// EncodeHeaderValue returns s as an Mcp-Name (or Mcp-Param-*) header
// value: s itself when it is plain printable ASCII without leading or
// trailing space, otherwise "=?base64?…?=" around the base64 of its UTF-8
// bytes, as the 2026-07-28 transport requires (a plain value that looks
// like that form is encoded too).
func EncodeHeaderValue(s string) string {
	if headerSafe(s) && !(strings.HasPrefix(s, b64Prefix) && strings.HasSuffix(s, b64Suffix)) {
		return s
	}
	return b64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + b64Suffix
}

// DecodeHeaderValue reverses [EncodeHeaderValue]: a value in the
// "=?base64?…?=" form is decoded, any other is returned as is. ok is false
// when the form is there but its content is not valid base64.
func DecodeHeaderValue(v string) (s string, ok bool) {
	if len(v) < len(b64Prefix)+len(b64Suffix) || !strings.HasPrefix(v, b64Prefix) || !strings.HasSuffix(v, b64Suffix) {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(v[len(b64Prefix) : len(v)-len(b64Suffix)])
	if err != nil {
		return "", false
	}
	return string(b), true
}

// headerSafe reports whether s can travel as a plain header value.
func headerSafe(s string) bool {
	if s != "" && (s[0] == ' ' || s[len(s)-1] == ' ') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// IsEventStream reports whether a Content-Type header value names
// text/event-stream (parameters and case aside).
func IsEventStream(contentType string) bool {
	return mediaType(contentType) == ContentTypeEventStream
}

// mediaType is the lower-cased media type of a Content-Type value.
func mediaType(ct string) string {
	// The common values need no parsing.
	switch ct {
	case ContentTypeJSON, ContentTypeEventStream:
		return ct
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}
