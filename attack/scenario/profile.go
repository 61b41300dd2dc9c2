package scenario

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/connectbyjbrh/ratecheck/attack/schedule"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/internal/safefile"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Profile is a scenario file: the policy it expects and the streams of
// requests that test it. Load one with [LoadProfile].
type Profile struct {
	// Name names the profile in archive folders; defaults to the file name
	// (its unsafe characters replaced by '-'). See [CheckName].
	Name string `yaml:"name"`
	// Description says what the profile shows, for people.
	Description string `yaml:"description"`
	// Policy is the limit the profile expects the target to enforce.
	Policy Policy `yaml:"policy"`
	// Sources are the default local addresses of every stream. A source
	// may be written as a range (first-last) or a prefix; once loaded,
	// each is its addresses (see ExpandSources).
	Sources []string `yaml:"sources"`
	// Headers are added to every request.
	Headers map[string]string `yaml:"headers"`
	// Timeout bounds each request (default 10s).
	Timeout Span `yaml:"timeout"`
	// Streams run in parallel, each with its own pacer.
	Streams []Stream `yaml:"streams"`
	// Contract is a limits contract file (relative to the profile's
	// folder) whose routes and identities the streams may name (Route,
	// As) instead of restating requests and credentials.
	Contract string `yaml:"contract"`

	// dir is the profile's folder; contract the contract read from it.
	dir      string
	contract *Contract
}

// Policy is the documented limit a profile expects.
type Policy struct {
	// Surface is rest, mcp or both.
	Surface string `yaml:"surface"`
	// Limit is the requests admitted per window and client address; zero
	// means the contract's (240 REST, 120 MCP).
	Limit int `yaml:"limit"`
	// Window is the contract's window (default 60s); the run's window may
	// be compressed with --window, and every span written in w follows it.
	Window Span `yaml:"window"`
}

// Stream is one paced sequence of requests to one surface.
type Stream struct {
	// Name labels the stream's results (see [CheckName]).
	Name string `yaml:"name"`
	// Surface is rest or mcp.
	Surface string `yaml:"surface"`
	// Start delays the stream from the start of the run.
	Start Span `yaml:"start"`
	// After names earlier streams whose every request must have its result
	// (an answer or an error) before this stream begins: the stream starts
	// at Start or then, whichever is later, and keeps its own pacing from
	// there. It keeps a plan's order on a machine too slow for its times.
	After []string `yaml:"after"`
	// Lag, when the streams of After end later than Start, is how long
	// after them this stream begins, so that streams waiting on the same
	// ones keep their order (verify's forged probes go out between plain
	// ones). Not written in profiles.
	Lag Span `yaml:"-"`
	// Group names streams whose requests go out in due order across them,
	// interleaved as planned even when the host stalled past several
	// (verify's spoof probes; see timeline.Stream.Group). Not written in
	// profiles.
	Group string `yaml:"-"`
	// Sources overrides the profile's sources (written as they are); the
	// pacer's rate and count are split evenly across them.
	Sources []string `yaml:"sources"`
	// Requests are sent round-robin.
	Requests []Request `yaml:"requests"`
	// Pacer says when requests are sent.
	Pacer PacerSpec `yaml:"pacer"`
	// Expect maps a status ("200", "429", "2xx", "4xx", "other", "errors"
	// for transport errors) to the exact count the stream must get.
	Expect map[string]int `yaml:"expect"`
	// Route names the profile's contract's route whose request the stream
	// sends, in place of Requests; its surface is the route's (mcp for an
	// rpc, else rest).
	Route string `yaml:"route" json:",omitempty"`
	// As names the contract's identity whose headers (credentials read
	// from the environment or a file when the run starts, never archived)
	// every request of the stream carries: see Profile.BindIdentities.
	As string `yaml:"as" json:",omitempty"`
	// Wire is how its requests are sent, rest or mcp, where Surface names
	// something else (verify --contract labels a stream with its limit's
	// name); empty, Surface says it. Not written in profiles.
	Wire string `yaml:"-" json:",omitempty"`
	// Key, when set, is the source label of the stream's results in
	// place of the address: what verify's probes of a limit counted by an
	// API key, or for everybody, are counted by (archive.KeySource,
	// archive.GlobalSource). Not written in profiles.
	Key string `yaml:"-" json:",omitempty"`
}

// Sent returns how s's requests are sent: method.REST (plain HTTP) or
// method.MCP (JSON-RPC over the MCP session).
func (s *Stream) Sent() string {
	if s.Wire != "" {
		return s.Wire
	}
	return s.Surface
}

// Request describes one request. REST requests use Method, Path and Query;
// MCP requests use RPC and Params, and the transport headers are derived
// from the body unless Headers overrides them.
type Request struct {
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Query   map[string]string `yaml:"query"`
	RPC     string            `yaml:"rpc"`
	Params  map[string]any    `yaml:"params"`
	Headers map[string]string `yaml:"headers"`
	// Body replaces the generated body (for malformed-request probes).
	Body *string `yaml:"body"`
	// PadTo pads the body with trailing spaces to this many bytes.
	PadTo int `yaml:"pad_to"`
}

// PacerSpec selects and parameterises a pacer. Which fields apply depends on
// Type; see profiles/README.md.
type PacerSpec struct {
	Type       string `yaml:"type"`
	Rate       Rate   `yaml:"rate"`
	From       Rate   `yaml:"from"`
	To         Rate   `yaml:"to"`
	Amplitude  Rate   `yaml:"amplitude"`
	Period     Span   `yaml:"period"`
	Duration   Span   `yaml:"duration"`
	Count      int    `yaml:"count"`
	Steps      []Step `yaml:"steps"`
	Burst      int    `yaml:"burst"`
	Over       Span   `yaml:"over"`
	ProbeFrom  Span   `yaml:"probe_from"`
	ProbeEvery Span   `yaml:"probe_every"`
	Until      Span   `yaml:"until"`
}

// Step is one constant-rate step of a steps pacer.
type Step struct {
	Rate     Rate `yaml:"rate"`
	Duration Span `yaml:"duration"`
}

// ProfileError is an error in a profile file, at a line when known.
type ProfileError struct {
	File string
	Line int
	Msg  string
}

func (e *ProfileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// maxProfileSize is the largest profile read: far above any real one, so
// that a name such as /dev/zero cannot take the machine's memory.
const maxProfileSize = 1 << 20

// ReadProfile reads a profile's file, refusing anything but a regular file
// of at most MaxProfileSize (a FIFO is refused without blocking).
func ReadProfile(path string) ([]byte, error) { return safefile.Read(path, maxProfileSize) }

// LoadProfile reads and validates a profile strictly: unknown fields, bad
// values and inconsistent pacers are errors naming the file and line.
func LoadProfile(path string) (*Profile, error) {
	data, err := ReadProfile(path)
	if err != nil {
		return nil, err
	}
	return ParseProfile(path, data)
}

// ParseProfile is LoadProfile on data already read; file names it in errors.
func ParseProfile(file string, data []byte) (*Profile, error) {
	p := Profile{dir: filepath.Dir(file)}
	if err := parseStrict(file, data, &p, "the profile", p.validate); err != nil {
		return nil, err
	}
	if p.Name == "" {
		base := file[strings.LastIndexAny(file, `/\`)+1:]
		p.Name = safeName(strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml"))
	}
	return &p, nil
}

// parseStrict decodes file's data into v as decodeStrict does, then has
// validate check what the types cannot, given the line of a dotted path;
// either's error names the file and the line.
func parseStrict(file string, data []byte, v any, what string, validate func(line func(string) int) error) error {
	perr := func(line int, format string, args ...any) error {
		return &ProfileError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if err := decodeStrict(data, v, what, perr); err != nil {
		return err
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	if err := validate(nodeLines(&root)); err != nil {
		var le *lineError
		if errors.As(err, &le) {
			return perr(le.Line, "%s", le.Msg)
		}
		return perr(0, "%v", err)
	}
	return nil
}

// decodeStrict decodes data into v, refusing unknown keys, and says a
// decoding error as perr does, at its line, in the words of the file's
// parts (what names the whole file, for an empty one).
func decodeStrict(data []byte, v any, what string, perr func(line int, format string, args ...any) error) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	var le *lineError
	var te *yaml.TypeError
	switch {
	case errors.As(err, &le):
		return perr(le.Line, "%s", le.Msg)
	case errors.As(err, &te):
		if m := yamlLine.FindStringSubmatch(strings.TrimSpace(te.Errors[0])); m != nil {
			n, _ := strconv.Atoi(m[1])
			if k := unknownKey(m[2]); k != "" {
				return perr(n, "%s", k)
			}
			return perr(n, "%s", strings.ReplaceAll(m[2], "scenario.", ""))
		}
		return perr(0, "%s", te.Errors[0])
	case err.Error() == "EOF":
		return perr(0, "%s is empty", what)
	}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		if at := faultLine(data, m[2]); at > n {
			return perr(at, "%s (in the block that begins at line %d: is this line indented as its neighbours?)", m[2], n)
		}
		return perr(n, "%s", m[2])
	}
	return perr(0, "%v", err)
}

// nodeLines returns a function giving the line of a dotted path such as
// "streams.2.pacer.rate" in the YAML tree (the nearest existing ancestor's
// line when the path is absent).
func nodeLines(root *yaml.Node) func(string) int {
	return func(path string) int {
		n := root
		if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
			n = n.Content[0]
		}
		line := n.Line
		for _, part := range strings.Split(path, ".") {
			var next *yaml.Node
			switch n.Kind {
			case yaml.MappingNode:
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == part {
						next = n.Content[i+1]
						line = n.Content[i].Line
					}
				}
			case yaml.SequenceNode:
				if i, err := strconv.Atoi(part); err == nil && i < len(n.Content) {
					next = n.Content[i]
					line = next.Line
				}
			}
			if next == nil {
				return line
			}
			n = next
		}
		return line
	}
}

// badFunc makes the error of a field at a dotted path, with its line.
type badFunc func(path, format string, args ...any) error

// validate checks values the YAML types cannot, reporting the line of the
// offending field: the policy, the profile's own fields, then each stream.
func (p *Profile) validate(line func(string) int) error {
	bad := func(path, format string, args ...any) error {
		return &lineError{Line: line(path), Msg: fmt.Sprintf(format, args...)}
	}
	if err := p.Policy.validate(bad); err != nil {
		return err
	}
	w := p.Policy.Window.D
	if p.Name != "" {
		if err := CheckName(p.Name); err != nil {
			return bad("name", "profile %v", err)
		}
	}
	if err := checkSpan("timeout", p.Timeout, w); err != nil {
		return bad("timeout", "%v", err)
	}
	srcs, path, err := expandSources(p.Sources, "sources")
	if err != nil {
		return bad(path, "%v", err)
	}
	p.Sources = srcs
	for k := range p.Headers {
		if err := checkHeaderName(k); err != nil {
			return bad("headers."+k, "%v", err)
		}
	}
	if p.Contract != "" {
		c, err := LoadContract(p.contractPath())
		if err != nil {
			return bad("contract", "contract %s: %v", p.Contract, err)
		}
		p.contract = c
	}
	if len(p.Streams) == 0 {
		return bad("streams", "a profile needs at least one stream")
	}
	names := map[string]bool{}
	for i := range p.Streams {
		if err := p.fromContract(i, bad); err != nil {
			return err
		}
		if err := p.Streams[i].validate(i, names, w, line, bad); err != nil {
			return err
		}
	}
	return nil
}

// fromContract sets stream i's request and surface from the contract's
// route it names, and checks the identity it sends as.
func (p *Profile) fromContract(i int, bad badFunc) error {
	s := &p.Streams[i]
	at := func(field string) string { return fmt.Sprintf("streams.%d.%s", i, field) }
	name := cmp.Or(s.Name, fmt.Sprintf("stream%d", i+1))
	for _, f := range []struct{ field, value, what string }{{"route", s.Route, "route"}, {"as", s.As, "identity"}} {
		if f.value != "" && p.contract == nil {
			return bad(at(f.field), "stream %s: %s %q is a contract's %s: name the contract file the profile reads (contract: my-api.yaml)", name, f.field, f.value, f.what)
		}
	}
	if s.Route != "" {
		k := slices.IndexFunc(p.contract.Routes, func(r Route) bool { return r.Name == s.Route })
		switch {
		case k < 0:
			return bad(at("route"), "stream %s: route %q: %s has no such route (routes: %s)", name, s.Route, p.Contract, strings.Join(routeNames(p.contract.Routes), ", "))
		case len(s.Requests) > 0:
			return bad(at("requests"), "stream %s: route %s is the stream's request: give route or requests, not both", name, s.Route)
		}
		req := p.contract.Routes[k].Request
		surface := method.REST
		if req.RPC != "" {
			surface = method.MCP
		}
		if s.Surface != "" && s.Surface != surface {
			return bad(at("surface"), "stream %s: surface %s, but route %s is %s: leave surface out", name, s.Surface, s.Route, surface)
		}
		s.Surface, s.Requests = surface, []Request{req}
	}
	if s.As != "" && !slices.ContainsFunc(p.contract.Identities, func(id Identity) bool { return id.Name == s.As }) {
		var ids []string
		for _, id := range p.contract.Identities {
			ids = append(ids, id.Name)
		}
		return bad(at("as"), "stream %s: as %q: %s has no such identity (identities: %s)", name, s.As, p.Contract, strings.Join(ids, ", "))
	}
	return nil
}

// ContractFile is the contract the profile names: its path (as read,
// relative to the working folder) and what it says; nil without one.
func (p *Profile) ContractFile() (string, *Contract) {
	if p.contract == nil {
		return "", nil
	}
	return p.contractPath(), p.contract
}

// contractPath is where Contract is: relative to the profile's folder.
func (p *Profile) contractPath() string {
	if filepath.IsAbs(p.Contract) {
		return p.Contract
	}
	return filepath.Join(p.dir, p.Contract)
}

// BindIdentities adds to every request of a stream that sends as one of
// the contract's identities that identity's headers, each credential read
// from env (os.LookupEnv, say) or its file: an unset variable or an
// unreadable file is an error naming the stream, the identity and what to
// set. Call it once the profile's own headers were checked for
// credentials (HeaderCredentials): these are the contract's, which the
// archive never records.
func (p *Profile) BindIdentities(env func(string) (string, bool)) error {
	for i := range p.Streams {
		s := &p.Streams[i]
		if s.As == "" {
			continue
		}
		k := slices.IndexFunc(p.contract.Identities, func(id Identity) bool { return id.Name == s.As })
		h, err := p.contract.Identities[k].Credentials(env)
		if err != nil {
			return fmt.Errorf("stream %s: %v", s.Name, err)
		}
		reqs := slices.Clone(s.Requests)
		for j := range reqs {
			headers := maps.Clone(reqs[j].Headers)
			if headers == nil {
				headers = map[string]string{}
			}
			for name := range h {
				headers[name] = h.Get(name)
			}
			reqs[j].Headers = headers
		}
		s.Requests = reqs
	}
	return nil
}

// validate checks the policy and sets its default window (the contract's).
func (pol *Policy) validate(bad badFunc) error {
	switch pol.Surface {
	case method.REST, method.MCP, "both":
	case "":
		return bad("policy", "policy.surface is required (rest, mcp or both)")
	default:
		return bad("policy.surface", "policy.surface %q: want rest, mcp or both", pol.Surface)
	}
	if pol.Limit < 0 {
		return bad("policy.limit", "policy.limit must be positive, got %d", pol.Limit)
	}
	if pol.Window.W != 0 {
		return bad("policy.window", "policy.window is the contract's window: write it as a duration such as 60s, not in windows")
	}
	if pol.Window.IsZero() {
		pol.Window = Span{D: method.Window}
	}
	if err := checkSpan("policy.window", pol.Window, pol.Window.D); err != nil {
		return bad("policy.window", "%v", err)
	}
	return nil
}

// validate checks stream i of a profile whose window is w, given the names
// of the streams before it (it adds its own), and names it when unnamed.
func (s *Stream) validate(i int, names map[string]bool, w time.Duration, line func(string) int, bad badFunc) error {
	at := func(field string) string { return fmt.Sprintf("streams.%d.%s", i, field) }
	if s.Name == "" {
		s.Name = fmt.Sprintf("stream%d", i+1)
	}
	if err := CheckName(s.Name); err != nil {
		return bad(at("name"), "stream %v", err)
	}
	if names[s.Name] {
		return bad(at("name"), "stream name %q is repeated", s.Name)
	}
	if err := checkSpan("start", s.Start, w); err != nil {
		return bad(at("start"), "stream %s: %v", s.Name, err)
	}
	for j, a := range s.After {
		if !names[a] {
			return bad(fmt.Sprintf("streams.%d.after.%d", i, j), "stream %s: after %q: no earlier stream has that name", s.Name, a)
		}
	}
	names[s.Name] = true
	if s.Surface != method.REST && s.Surface != method.MCP {
		return bad(at("surface"), "stream %s: surface %q: want rest or mcp", s.Name, s.Surface)
	}
	srcs, path, err := expandSources(s.Sources, at("sources"))
	if err != nil {
		return bad(path, "%v", err)
	}
	s.Sources = srcs
	if len(s.Requests) == 0 {
		return bad(at("requests"), "stream %s needs at least one request", s.Name)
	}
	for j, r := range s.Requests {
		if err := r.validate(s, fmt.Sprintf("streams.%d.requests.%d", i, j), bad); err != nil {
			return err
		}
	}
	if err := s.Pacer.validate(func(f string) int { return line(at("pacer." + f)) }); err != nil {
		return err
	}
	if err := s.Pacer.checkNumbers(w, func(f, format string, args ...any) error {
		return bad(at("pacer."+f), "stream %s: %s", s.Name, fmt.Sprintf(format, args...))
	}); err != nil {
		return err
	}
	for k, v := range s.Expect {
		if !validExpectKey(k) || v < 0 {
			return bad(at("expect."+k), "expect %s: %d: want a status (200, 429, 2xx, 4xx, other, errors) and a count >= 0", k, v)
		}
	}
	return nil
}

// validate checks a request of stream s, at the dotted path rat.
func (r Request) validate(s *Stream, rat string, bad badFunc) error {
	switch {
	case s.Surface == method.REST && (r.RPC != "" || r.Params != nil):
		return bad(rat, "stream %s: a REST request takes method, path and query, not rpc or params", s.Name)
	case s.Surface == method.REST && !strings.HasPrefix(r.Path, "/"):
		return bad(rat, "stream %s: a REST request needs a path starting with /", s.Name)
	case s.Surface == method.MCP && r.RPC == "" && r.Body == nil && r.Method == "":
		return bad(rat, "stream %s: an MCP request needs rpc (the JSON-RPC method) or a body", s.Name)
	case s.Surface == method.MCP && r.Query != nil:
		return bad(rat, "stream %s: an MCP request takes rpc and params, not query", s.Name)
	case r.PadTo < 0 || r.PadTo > 16<<20:
		return bad(rat+".pad_to", "pad_to must be between 0 and 16 MiB")
	}
	for k := range r.Headers {
		if err := checkHeaderName(k); err != nil {
			return bad(rat+".headers."+k, "%v", err)
		}
	}
	return nil
}

func validExpectKey(k string) bool {
	switch k {
	case "2xx", "3xx", "4xx", "5xx", "other", "errors":
		return true
	}
	n, err := strconv.Atoi(k)
	return err == nil && n >= 100 && n <= 599
}

// MaxSources is the most addresses the sources of a profile, or of one
// of its streams, may come to, a range or a prefix counted address by
// address: a stream sends from every one of its sources, each an
// attacker of its own, and its rate is split over them.
const MaxSources = 4096

// ExpandSources returns the addresses of a list of sources, each an
// address, a range (first-last) or a prefix as client.ParsePool reads an
// item, in the pool's order (items as listed, each ascending, a prefix
// without its network and broadcast addresses) and canonical form. It
// refuses an item that is not one, items that overlap, and more than
// MaxSources addresses in all.
func ExpandSources(items []string) ([]string, error) {
	srcs, _, err := expandSources(items, "")
	return srcs, err
}

// expandSources is ExpandSources, also returning the path of the field at
// fault under field (field.i for one item).
func expandSources(items []string, field string) ([]string, string, error) {
	if len(items) == 0 {
		return nil, field, nil
	}
	for i, item := range items {
		if strings.Contains(item, ",") {
			return nil, fmt.Sprintf("%s.%d", field, i), fmt.Errorf("source %q: one address, range or prefix a list entry", item)
		}
		if _, err := client.ParsePool(item); err != nil || strings.TrimSpace(item) == "" {
			if err == nil {
				err = errors.New("an empty source")
			}
			return nil, fmt.Sprintf("%s.%d", field, i), fmt.Errorf("source %v", err)
		}
	}
	pool, err := client.ParsePool(strings.Join(items, ","))
	if err != nil {
		return nil, field, fmt.Errorf("sources: %v", err)
	}
	if pool.Len() > MaxSources {
		return nil, field, fmt.Errorf("sources come to %s addresses, more than the %d a stream may send from (each its own attacker): name a range or a longer prefix", countOf(pool.Len()), MaxSources)
	}
	return pool.Take(pool.Len()), field, nil
}

// countOf writes a count of addresses, with "over 2^63" for a saturated
// one.
func countOf(n int) string {
	if n == math.MaxInt {
		return "over 2^63"
	}
	return strconv.Itoa(n)
}

func checkHeaderName(k string) error {
	if k == "" || strings.ContainsAny(k, " :\r\n") {
		return fmt.Errorf("header name %q is not valid", k)
	}
	return nil
}

// pacerTypes lists the pacer types a profile may name.
var pacerTypes = []string{"constant", "linear", "sine", "steps", "burst-then-probe"}

func (ps *PacerSpec) validate(line func(string) int) error {
	bad := func(field, format string, args ...any) error {
		return &lineError{Line: line(field), Msg: fmt.Sprintf(format, args...)}
	}
	need := func(ok bool, field, what string) error {
		if !ok {
			return bad(field, "pacer %s needs %s", ps.Type, what)
		}
		return nil
	}
	if ps.Count < 0 {
		return bad("count", "count must not be negative")
	}
	var err error
	switch ps.Type {
	case "constant":
		err = errors.Join(need(ps.Rate.N > 0, "rate", "a rate above zero"),
			need(!ps.Duration.IsZero() || ps.Count > 0, "duration", "a duration or a count"))
	case "linear":
		err = errors.Join(need(ps.From.N > 0 || ps.To.N > 0, "from", "from and to rates, not both zero"),
			need(!ps.Duration.IsZero(), "duration", "a duration"))
	case "sine":
		err = errors.Join(need(ps.Rate.N > 0, "rate", "a mean rate above zero"),
			need(ps.Amplitude.N == 0 || ps.Amplitude.Per == ps.Rate.Per && ps.Amplitude.N <= ps.Rate.N, "amplitude", "an amplitude in the rate's unit, at most the mean rate"),
			need(!ps.Period.IsZero(), "period", "a period"),
			need(!ps.Duration.IsZero(), "duration", "a duration"))
	case "steps":
		err = need(len(ps.Steps) > 0, "steps", "at least one step")
		for i, st := range ps.Steps {
			if st.Duration.IsZero() {
				err = errors.Join(err, bad(fmt.Sprintf("steps.%d", i), "step %d needs a duration", i+1))
			}
		}
	case "burst-then-probe":
		err = errors.Join(need(ps.Burst > 0, "burst", "a burst above zero"),
			need(ps.ProbeEvery.IsZero() == ps.Until.IsZero(), "probe_every", "probe_every and until together (or neither)"))
	case "":
		return bad("", "the stream needs a pacer type (%s)", strings.Join(pacerTypes, ", "))
	default:
		return bad("type", "pacer type %q: want one of %s", ps.Type, strings.Join(pacerTypes, ", "))
	}
	if err != nil {
		var le *lineError
		if errors.As(err, &le) {
			return le
		}
	}
	return err
}

// Schedule returns the schedule a pacer spec describes for a run window w.
func (ps PacerSpec) Schedule(w time.Duration) schedule.Schedule {
	count := uint64(ps.Count)
	switch ps.Type {
	case "constant":
		return schedule.Constant(ps.Rate.PerSecond(w), ps.Duration.In(w), count)
	case "linear":
		return schedule.Linear(ps.From.PerSecond(w), ps.To.PerSecond(w), ps.Duration.In(w), count)
	case "sine":
		return schedule.Sine(ps.Rate.PerSecond(w), ps.Amplitude.PerSecond(w), ps.Period.In(w), ps.Duration.In(w), count)
	case "steps":
		steps := make([]schedule.StepSpec, len(ps.Steps))
		for i, st := range ps.Steps {
			steps[i] = schedule.StepSpec{Rate: st.Rate.PerSecond(w), Duration: st.Duration.In(w)}
		}
		return schedule.Steps(steps, count)
	default: // burst-then-probe
		return schedule.BurstThenProbe(ps.Burst, ps.Over.In(w), ps.ProbeFrom.In(w), ps.ProbeEvery.In(w), ps.Until.In(w))
	}
}

// StreamSources returns the sources of a stream: its own, else the
// profile's, else the system's choice ("").
func (p *Profile) StreamSources(s *Stream) []string {
	switch {
	case len(s.Sources) > 0:
		return s.Sources
	case len(p.Sources) > 0:
		return p.Sources
	}
	return []string{""}
}

// AfterKey returns the "surface/name" of the stream named a in s.After:
// the stream of that name on s's surface, else the one of that name (a
// plan may repeat a name across surfaces, as verify's does, and After then
// names the stream of its own surface).
func (p *Profile) AfterKey(s *Stream, a string) string {
	surface := ""
	for i := range p.Streams {
		if o := &p.Streams[i]; o.Name == a && (surface == "" || o.Surface == s.Surface) {
			surface = o.Surface
		}
	}
	return surface + "/" + a
}
