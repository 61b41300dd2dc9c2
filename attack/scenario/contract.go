package scenario

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/connectbyjbrh/ratecheck/internal/safefile"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/redact"
)

// A Contract is an API's rate limits as its documentation states them:
// the requests it limits (routes), who the prober sends them as
// (identities), and the limits, each over one route or several. It is
// the file `verify --contract` and `contract check` read (YAML, as strict
// as a profile); Builtin is the documented API's.
type Contract struct {
	Routes     []Route    `yaml:"routes"`
	Identities []Identity `yaml:"identities,omitempty"`
	Limits     []Limit    `yaml:"limits"`
}

// A Route is a named request a limit covers: an HTTP request (method,
// path, query, headers, body) or an MCP call (rpc: tools/call with its
// params), written as a profile's request is.
type Route struct {
	Name    string `yaml:"name"`
	Request `yaml:",inline"`
}

// MarshalYAML writes the route with only the fields it sets.
func (r Route) MarshalYAML() (any, error) {
	return struct {
		Name    string            `yaml:"name"`
		Method  string            `yaml:"method,omitempty"`
		Path    string            `yaml:"path,omitempty"`
		Query   map[string]string `yaml:"query,omitempty"`
		RPC     string            `yaml:"rpc,omitempty"`
		Params  map[string]any    `yaml:"params,omitempty"`
		Headers map[string]string `yaml:"headers,omitempty"`
		Body    *string           `yaml:"body,omitempty"`
		PadTo   int               `yaml:"pad_to,omitempty"`
	}{r.Name, r.Method, r.Path, r.Query, r.RPC, r.Params, r.Headers, r.Body, r.PadTo}, nil
}

// An Identity is who the prober sends as: an address role (the limit
// address, or the isolation address, the second one verify uses) and/or
// credential headers. A header's value is a reference, never the value:
// ${NAME} reads the environment variable NAME, ${file:PATH} the file at
// PATH (its first line), when the request is sent; neither is archived.
type Identity struct {
	Name    string            `yaml:"name"`
	Address string            `yaml:"address,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty"`
	// Tier names the quota of a limit with one per tier that applies.
	Tier string `yaml:"tier,omitempty"`
}

// Address roles of an identity.
const (
	AddressLimit     = "limit"
	AddressIsolation = "isolation"
)

// A Limit is one documented limit: at most Quota requests per Window to
// its routes (several routes: one budget they share), counted per Key.
type Limit struct {
	Name   string   `yaml:"name"`
	Routes []string `yaml:"routes"`
	// Quota is the number of requests a key may make in a window, or one
	// per tier.
	Quota  Quota    `yaml:"quota"`
	Window Duration `yaml:"window"`
	Key    Key      `yaml:"key"`
	// Refused is how a refusal of this limit looks.
	Refused Refusal `yaml:"refused"`
	// RefusalsCount says whether a refused request counts against the
	// budget: true, false, or unknown (not documented).
	RefusalsCount Tristate `yaml:"refusals_count,omitempty"`
	// Family is the limiter's algorithm when the documentation says it.
	Family Family `yaml:"family,omitempty"`
}

// Quota is a limit's number of requests per window: one for everybody, or
// one per tier (Tiers set, N zero).
type Quota struct {
	N     int
	Tiers map[string]int
}

// UnmarshalYAML reads a number, or a mapping of tier to number.
func (q *Quota) UnmarshalYAML(n *yaml.Node) error {
	bad := func(v string) error {
		return &lineError{Line: n.Line, Msg: fmt.Sprintf("quota %s: want a whole number of requests, such as 100, or one per tier, such as {free: 10, paid: 100}", v)}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := strconv.Atoi(n.Value)
		if err != nil {
			return bad(strconv.Quote(n.Value))
		}
		*q = Quota{N: v}
	case yaml.MappingNode:
		q.Tiers = map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			x, err := strconv.Atoi(v.Value)
			if err != nil || v.Kind != yaml.ScalarNode {
				return &lineError{Line: v.Line, Msg: fmt.Sprintf("quota of tier %q: want a whole number of requests, got %q", k.Value, v.Value)}
			}
			q.Tiers[k.Value] = x
		}
	default:
		return bad("")
	}
	return nil
}

// MarshalYAML writes the number, or the tiers' mapping.
func (q Quota) MarshalYAML() (any, error) {
	if q.Tiers != nil {
		return q.Tiers, nil
	}
	return q.N, nil
}

// Duration is a duration written with its unit ("60s", "1h", "500ms"): a
// bare number is refused with the unit it lacks.
type Duration time.Duration

// UnmarshalYAML reads a Go duration, naming the unit a bare number lacks.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		msg := fmt.Sprintf("duration %q: want a number with its unit, such as 60s, 1h or 500ms", n.Value)
		if _, err := strconv.ParseFloat(n.Value, 64); err == nil {
			msg = fmt.Sprintf("duration %q has no unit (%ss?)", n.Value, n.Value)
		}
		return &lineError{Line: n.Line, Msg: msg}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as Go does (1m0s).
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Key kinds: what a limit counts requests by.
const (
	KeyClientAddress = "client-address"
	KeyHeader        = "header"
	KeyGlobal        = "global"
)

// Key is what a limit counts by: the client's address, a header's value
// (an API key) or nothing (one budget for everybody).
type Key struct {
	Kind   string
	Header string // with Kind KeyHeader, canonical
}

// String is the key as a contract writes it.
func (k Key) String() string {
	if k.Kind == KeyHeader {
		return KeyHeader + " " + k.Header
	}
	return k.Kind
}

// UnmarshalYAML reads "client-address", "header NAME" or "global".
func (k *Key) UnmarshalYAML(n *yaml.Node) error {
	f := strings.Fields(n.Value)
	switch {
	case n.Kind == yaml.ScalarNode && len(f) == 1 && (f[0] == KeyClientAddress || f[0] == KeyGlobal):
		*k = Key{Kind: f[0]}
	case n.Kind == yaml.ScalarNode && len(f) == 2 && f[0] == KeyHeader:
		*k = Key{Kind: KeyHeader, Header: http.CanonicalHeaderKey(f[1])}
	default:
		return &lineError{Line: n.Line, Msg: fmt.Sprintf("key %q: want client-address, header NAME (such as header X-Api-Key) or global", n.Value)}
	}
	return nil
}

// MarshalYAML writes the key as String does.
func (k Key) MarshalYAML() (any, error) { return k.String(), nil }

// Refusal is how a limit's refusal looks: its status, and what its body
// holds (a JSON value the body must contain, or a JSON-RPC error code).
type Refusal struct {
	Status int `yaml:"status"`
	// Body is a JSON value the refusal's body contains: every key of an
	// object with the same value, recursively.
	Body any `yaml:"body,omitempty"`
	// JSONRPCCode is the JSON-RPC error code of an MCP refusal.
	JSONRPCCode int `yaml:"jsonrpc_code,omitempty"`
}

// Tristate is true, false or unknown (the zero value).
type Tristate string

// The values of a Tristate.
const (
	Unknown Tristate = ""
	Yes     Tristate = "true"
	No      Tristate = "false"
)

// UnmarshalYAML reads true, false or unknown.
func (t *Tristate) UnmarshalYAML(n *yaml.Node) error {
	switch n.Value {
	case "true":
		*t = Yes
	case "false":
		*t = No
	case "unknown":
		*t = Unknown
	default:
		return &lineError{Line: n.Line, Msg: fmt.Sprintf("%q: want true, false or unknown", n.Value)}
	}
	return nil
}

// MarshalYAML writes true or false (unknown is left out).
func (t Tristate) MarshalYAML() (any, error) { return t == Yes, nil }

// IsZero reports an unknown Tristate, which a written contract leaves out.
func (t Tristate) IsZero() bool { return t == Unknown }

// Family is the limiter's algorithm as documented: sliding-log,
// fixed-window, sliding-window-counter, or token-bucket with its burst
// and refill rate. The zero value is not documented.
type Family struct {
	Name  string
	Burst int
	Rate  Rate
}

// Families a contract may name.
var families = []string{"sliding-log", "fixed-window", "sliding-window-counter", "token-bucket"}

// IsZero reports an undocumented family, which a written contract leaves
// out.
func (f Family) IsZero() bool { return f.Name == "" }

// UnmarshalYAML reads a family's name, or a token bucket as {name:
// token-bucket, burst: N, rate: R}.
func (f *Family) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*f = Family{Name: n.Value}
	case yaml.MappingNode:
		*f = Family{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "name":
				f.Name = v.Value
			case "burst":
				b, err := strconv.Atoi(v.Value)
				if err != nil || b < 1 {
					return &lineError{Line: v.Line, Msg: fmt.Sprintf("burst %q: want a whole number of requests, at least 1", v.Value)}
				}
				f.Burst = b
			case "rate":
				if err := f.Rate.UnmarshalYAML(v); err != nil {
					return err
				}
			default:
				return &lineError{Line: k.Line, Msg: fmt.Sprintf("a family has no key %q; its keys are burst, name, rate", k.Value)}
			}
		}
	default:
		return &lineError{Line: n.Line, Msg: "family: want a name, such as sliding-log, or a mapping with name, burst and rate"}
	}
	if !slices.Contains(families, f.Name) {
		return &lineError{Line: n.Line, Msg: fmt.Sprintf("family %q: want one of %s", f.Name, strings.Join(families, ", "))}
	}
	if (f.Burst != 0 || f.Rate.N != 0) != (f.Name == "token-bucket") || f.Name == "token-bucket" && (f.Burst == 0 || f.Rate.N <= 0) {
		return &lineError{Line: n.Line, Msg: "a token bucket takes its burst and rate (such as {name: token-bucket, burst: 20, rate: 4/s}), and no other family does"}
	}
	return nil
}

// RefillIn is how long a token bucket takes to refill its burst, for a
// limit whose window is w (a rate per window scales with it): the burst
// over the rate. 0 for any other family.
func (f Family) RefillIn(w time.Duration) time.Duration {
	if f.Name != "token-bucket" || f.Rate.N <= 0 {
		return 0
	}
	return time.Duration(float64(f.Burst) / f.Rate.N * float64(f.Rate.Per.In(w)))
}

// MarshalYAML writes the name, or the token bucket's mapping.
func (f Family) MarshalYAML() (any, error) {
	if f.Name != "token-bucket" {
		return f.Name, nil
	}
	return map[string]any{"name": f.Name, "burst": f.Burst, "rate": f.Rate.String()}, nil
}

// The bounds of a limit's window.
const (
	minContractWindow = time.Millisecond
	maxContractWindow = 24 * time.Hour
)

// maxContractSize is the largest contract file read.
const maxContractSize = 1 << 20

// credentialRef is a credential written as a reference: ${NAME} (the
// environment) or ${file:PATH}.
var credentialRef = regexp.MustCompile(`^\$\{(?:file:[^}]+|[A-Za-z_][A-Za-z0-9_]*)\}$`)

// LoadContract reads and validates a contract file strictly: unknown
// keys, wrong types, values out of range and names that point nowhere are
// errors naming the file and line, and what to write instead.
func LoadContract(path string) (*Contract, error) {
	data, err := safefile.Read(path, maxContractSize)
	if err != nil {
		return nil, err
	}
	return ParseContract(path, data)
}

// ParseContract is LoadContract on data already read; file names it in
// errors.
func ParseContract(file string, data []byte) (*Contract, error) {
	var c Contract
	if err := parseStrict(file, data, &c, "the contract", c.validate); err != nil {
		var pe *ProfileError
		if errors.As(err, &pe) && pe.Line > 0 && strings.Contains(pe.Msg, "did not find expected ',' or '}'") && refInFlow(data, pe.Line) {
			pe.Msg = `a ${…} reference inside { } is read as a mapping: quote it, as in {X-Api-Key: "${API_KEY}"}`
		}
		return nil, err
	}
	return &c, nil
}

// refInFlow reports whether a ${…} reference stands unquoted inside a
// { } mapping on one of the lines up to line (1-based), where YAML reads
// its brace as a nested mapping.
func refInFlow(data []byte, line int) bool {
	lines := strings.Split(string(data), "\n")
	for i := max(0, line-3); i < min(line, len(lines)); i++ {
		l := lines[i]
		if at := strings.Index(l, "${"); at > 0 && strings.Contains(l[:at], "{") && !strings.ContainsAny(l[at-1:at], `"'`) {
			return true
		}
	}
	return false
}

// validate checks what the types cannot, at the line of the field at
// fault (line gives it for a dotted path).
func (c *Contract) validate(line func(string) int) error {
	bad := func(path, format string, args ...any) error {
		return &lineError{Line: line(path), Msg: fmt.Sprintf(format, args...)}
	}
	if len(c.Routes) == 0 {
		return bad("routes", "the contract has no routes: name each request a limit covers (name, then method and path, or rpc and params)")
	}
	routes := map[string]bool{}
	for i, r := range c.Routes {
		at := fmt.Sprintf("routes.%d", i)
		switch {
		case r.Name == "" || routes[r.Name]:
			return unnamed(bad, at, "a route", "routes", r.Name)
		case r.Path == "" && r.RPC == "":
			return bad(at, "route %q has neither a path nor an rpc: say the request (method and path) or the MCP call (rpc: tools/call, params)", r.Name)
		case r.Path != "" && r.RPC != "":
			return bad(at, "route %q has both a path and an rpc: an MCP call is sent to the target's /mcp", r.Name)
		}
		routes[r.Name] = true
		if err := inlineCredentials(r.Headers, func(h string) error {
			return bad(at+".headers."+h, "route %q writes the credential %s inline: give it to an identity as ${VARIABLE} (an environment variable) or ${file:PATH}", r.Name, h)
		}); err != nil {
			return err
		}
	}
	names, tiers, keys := map[string]bool{}, map[string]bool{}, map[string]string{}
	for i, id := range c.Identities {
		at := fmt.Sprintf("identities.%d", i)
		switch {
		case id.Name == "" || names[id.Name]:
			return unnamed(bad, at, "an identity", "identities", id.Name)
		case id.Address != "" && id.Address != AddressLimit && id.Address != AddressIsolation:
			return bad(at+".address", "identity %q: address %q: want %s or %s (the addresses verify sends from)", id.Name, id.Address, AddressLimit, AddressIsolation)
		case id.Address == "" && len(id.Headers) == 0:
			return bad(at, "identity %q says neither an address nor a header: give it address: %s or %s, or the header it sends as (headers: {X-Api-Key: ${KEY}})", id.Name, AddressLimit, AddressIsolation)
		}
		names[id.Name] = true
		if id.Tier != "" {
			tiers[id.Tier] = true
		}
		if err := inlineCredentials(id.Headers, func(h string) error {
			return bad(at+".headers."+h, "identity %q writes the credential %s inline: write ${VARIABLE} and set it in the environment, or ${file:PATH}", id.Name, h)
		}); err != nil {
			return err
		}
		for h, v := range id.Headers {
			k := http.CanonicalHeaderKey(h) + ": " + v
			if other, ok := keys[k]; ok {
				return bad(at+".headers."+h, "identities %q and %q send one key (%s %s): each identity needs a key of its own", other, id.Name, http.CanonicalHeaderKey(h), v)
			}
			keys[k] = id.Name
		}
	}
	if len(c.Limits) == 0 {
		return bad("limits", "the contract has no limits: give each its name, routes, quota, window and key")
	}
	limits := map[string]bool{}
	for i, l := range c.Limits {
		at := fmt.Sprintf("limits.%d", i)
		switch {
		case l.Name == "" || limits[l.Name]:
			return unnamed(bad, at, "a limit", "limits", l.Name)
		case len(l.Routes) == 0:
			return bad(at, "limit %q covers no routes: list the routes that draw on its budget (several: one budget they share)", l.Name)
		case l.Key.Kind == "":
			return bad(at, "limit %q has no key: say what it counts by (client-address, header NAME or global)", l.Name)
		case l.Refused.Status == 0:
			return bad(at, "limit %q does not say how a refusal looks: give refused: {status: 429}", l.Name)
		case l.Refused.Status < 100 || l.Refused.Status > 599:
			return bad(at+".refused.status", "limit %q: refusal status %d is not an HTTP status", l.Name, l.Refused.Status)
		}
		limits[l.Name] = true
		for j, r := range l.Routes {
			if !routes[r] {
				return bad(fmt.Sprintf("%s.routes.%d", at, j), "limit %q covers route %q, which no route defines (routes: %s)", l.Name, r, strings.Join(routeNames(c.Routes), ", "))
			}
		}
		if w := time.Duration(l.Window); w < minContractWindow || w > maxContractWindow {
			return bad(at+".window", "limit %q: window %v is outside 1ms to 24h", l.Name, w)
		}
		if l.Quota.Tiers == nil && l.Quota.N < 1 {
			return bad(at+".quota", "limit %q: quota %d: want at least 1 request a window", l.Name, l.Quota.N)
		}
		for _, t := range slices.Sorted(maps.Keys(l.Quota.Tiers)) {
			switch {
			case l.Quota.Tiers[t] < 1:
				return bad(at+".quota."+t, "limit %q: quota %d of tier %q: want at least 1 request a window", l.Name, l.Quota.Tiers[t], t)
			case !tiers[t]:
				return bad(at+".quota."+t, "limit %q has a quota for tier %q, and no identity is of it: give an identity tier: %s", l.Name, t, t)
			}
		}
		if f := l.Family; f.Name == "token-bucket" {
			switch {
			case l.Quota.Tiers != nil:
				return bad(at+".family", "limit %q: a token bucket has one burst, and the limit a quota per tier: give each tier a limit of its own, or leave family out", l.Name)
			case f.Burst != l.Quota.N:
				return bad(at+".family", "limit %q: burst %d is not its quota %d: a token bucket's quota is its burst, what it admits at once (write quota: %d, or burst: %d)", l.Name, f.Burst, l.Quota.N, f.Burst, l.Quota.N)
			}
		}
		if l.Key.Kind == KeyHeader && !carries(c.Identities, l.Key.Header) {
			return bad(at+".key", "limit %q counts by header %s, and no identity sends it: give the identities their keys (headers: {%s: ${VARIABLE}})", l.Name, l.Key.Header, l.Key.Header)
		}
	}
	return nil
}

// unnamed is the error of a part at path at (one, such as "a route", of
// its kind, many: "routes") whose name is empty or taken by another.
func unnamed(bad func(path, format string, args ...any) error, at, one, many, name string) error {
	if name == "" {
		return bad(at, "%s has no name", one)
	}
	return bad(at+".name", "two %s are named %q", many, name)
}

// inlineCredentials calls bad for the first credential header of h whose
// value is written inline rather than as a reference.
func inlineCredentials(h map[string]string, bad func(string) error) error {
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if redact.Names(http.Header{k: {h[k]}}) != nil && !credentialRef.MatchString(h[k]) {
			return bad(k)
		}
	}
	return nil
}

// carries reports whether an identity sends header.
func carries(ids []Identity, header string) bool {
	return slices.ContainsFunc(ids, func(id Identity) bool { return id.Sends(header) })
}

// Sends reports whether id sends header (a canonical name).
func (id Identity) Sends(header string) bool {
	for h := range id.Headers {
		if http.CanonicalHeaderKey(h) == header {
			return true
		}
	}
	return false
}

func routeNames(rs []Route) []string {
	var n []string
	for _, r := range rs {
		n = append(n, r.Name)
	}
	return n
}

// Builtin is the documented API's contract, which verify, analyze,
// attack, capacity and fleet use unless given another: method.RESTLimit
// requests and method.MCPLimit calls per method.Window, rolling, each
// surface per client address, refusals counted (the documentation:
// retrying at once "adds to the count"), from the limit address; the
// isolation address has a budget of its own.
func Builtin() *Contract {
	rest, mcp := RouteOf(method.REST), RouteOf(method.MCP)
	return &Contract{
		Routes: []Route{{Name: "rest-search", Request: rest}, {Name: "mcp-search", Request: mcp}},
		Identities: []Identity{
			{Name: "limit", Address: AddressLimit},
			{Name: "isolation", Address: AddressIsolation},
		},
		Limits: []Limit{
			{Name: method.REST, Routes: []string{"rest-search"}, Quota: Quota{N: method.RESTLimit}, Window: Duration(method.Window),
				Key: Key{Kind: KeyClientAddress}, Refused: Refusal{Status: http.StatusTooManyRequests, Body: map[string]any{"error": map[string]any{"code": "rate_limited"}}},
				RefusalsCount: Yes, Family: Family{Name: "sliding-log"}},
			{Name: method.MCP, Routes: []string{"mcp-search"}, Quota: Quota{N: method.MCPLimit}, Window: Duration(method.Window),
				Key: Key{Kind: KeyClientAddress}, Refused: Refusal{Status: http.StatusTooManyRequests, JSONRPCCode: -32603},
				RefusalsCount: Yes, Family: Family{Name: "sliding-log"}},
		},
	}
}

// RouteOf is the request verify's probes send to a surface of the
// documented API: a search, as a REST request or an MCP tools/call.
func RouteOf(surface string) Request {
	if surface == method.MCP {
		return Request{RPC: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits", "limit": 5}}}
	}
	return Request{Path: "/api/public/search", Query: map[string]string{"q": "rate limits", "limit": "5"}}
}

// Marshal writes c as a contract file that ParseContract reads back to c.
func (c *Contract) Marshal() ([]byte, error) { return yaml.Marshal(c) }

// maxCredentialFile is the largest file a ${file:PATH} reference reads.
const maxCredentialFile = 64 << 10

// Credentials returns the headers id sends, each reference read: ${NAME}
// from env (os.LookupEnv, say), ${file:PATH} the first line of the file.
// An unset variable, an empty value or an unreadable file is an error
// naming the identity, the header and what to set.
func (id Identity) Credentials(env func(string) (string, bool)) (http.Header, error) {
	h := http.Header{}
	for _, k := range slices.Sorted(maps.Keys(id.Headers)) {
		v := id.Headers[k]
		if !credentialRef.MatchString(v) {
			h.Set(k, v)
			continue
		}
		ref := v[2 : len(v)-1]
		var val string
		if path, ok := strings.CutPrefix(ref, "file:"); ok {
			b, err := safefile.Read(path, maxCredentialFile)
			if err != nil {
				return nil, fmt.Errorf("identity %q: header %s reads %s: %w", id.Name, http.CanonicalHeaderKey(k), v, err)
			}
			val, _, _ = strings.Cut(string(b), "\n")
			val = strings.TrimSpace(val)
		} else {
			val, _ = env(ref)
		}
		if val == "" {
			return nil, fmt.Errorf("identity %q: header %s reads %s, which is empty or not set: set it to the identity's credential", id.Name, http.CanonicalHeaderKey(k), v)
		}
		h.Set(k, val)
	}
	return h, nil
}
