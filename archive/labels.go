package archive

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Every result ratecheck archives carries a label in Vegeta's Result.Attack
// field: "surface=rest source=127.0.0.1 stream=onset", and for a fleet
// client's attempt "… client=3 request=1 attempt=2 delay=41000000" (and, for
// a client program's request, "… answer=fault fp=…"). Vegeta's own tools
// ignore it; the analyzer reads it. Results without one (the Vegeta CLI's)
// get their surface from the URL. A result goes from the engine to the
// archive as a Result, its labels typed (Labels): the label is written
// once, by Labels.String, and read only from a file, by ParseLabel.

// DefaultSource is the source label of results sent from the system's
// choice of address.
const DefaultSource = "default"

// KeySource is the source label of results sent as the API key of a
// contract's identity, by its name, to a limit counted by that key: the
// key, not the address, is what such a limit counts, and what the
// analyzer groups its requests by.
func KeySource(identity string) string { return "key:" + identity }

// GlobalSource is the source label of results sent to a limit counted
// for everybody: one budget, whatever the address or key.
const GlobalSource = "everybody"

// Result is Vegeta's result, whose Attack field holds the labels as
// Vegeta's tools read them, and those labels as the engine knew them when
// it sent (Attack is Labels.String()). Every job of the engine hands its
// results on so, to the archive and to whatever judges them during the
// run, which read the labels here and never parse Attack.
type Result struct {
	*vegeta.Result
	Labels Labels
}

// Labels say where a result belongs: what its label (or its URL) names.
type Labels struct {
	Surface, Source, Stream string
	// Fleet is set on a fleet client's attempt (labels client=, attempt=).
	Fleet *FleetTag
}

// FleetTag is what a fleet result's label says about it: which client,
// which of its logical requests, which attempt, and the backoff the client
// drew before it (negative when the label does not say).
type FleetTag struct {
	Client, Request, Attempt int
	Delay                    time.Duration
	// Repeat is set on a request that repeats, byte for byte, the one
	// before it, which got a failure-table answer, from a client that
	// polls one request: it may be a retry of that answer (label
	// repeat=answer).
	Repeat bool
	// Answer and Fingerprint are set on a client program's request, as the
	// fleet's harness recorded it: what gave its answer (see
	// refserver.Arrival.Answer: "fault" is a fault the harness scripted)
	// and the digest of the request (labels answer=, fp=; "": the label
	// has none).
	Answer, Fingerprint string
}

// String is the label of a result that carries l: "surface=rest
// source=127.0.0.1 stream=onset" (an empty source written as
// DefaultSource), then, when l.Fleet is set, its client, request, attempt
// and delay (ns), repeat=answer when it repeats, and its answer and
// fingerprint when it has an answer. It is the one place a label is
// written.
func (l Labels) String() string {
	source := l.Source
	if source == "" {
		source = DefaultSource
	}
	s := "surface=" + l.Surface + " source=" + source + " stream=" + l.Stream
	t := l.Fleet
	if t == nil {
		return s
	}
	s = fmt.Sprintf("%s client=%d request=%d attempt=%d delay=%d", s, t.Client, t.Request, t.Attempt, t.Delay.Nanoseconds())
	if t.Repeat {
		s += " repeat=answer"
	}
	if t.Answer != "" {
		s += " answer=" + t.Answer + " fp=" + t.Fingerprint
	}
	return s
}

// ParseLabel reads a label, of a result read from a file: it is the one
// place a label is parsed (the engine's results carry theirs typed, see
// Result). A label without a surface gets the one of url; one without a
// source gets DefaultSource.
func ParseLabel(label, url string) Labels {
	var l Labels
	for _, f := range strings.Fields(label) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "surface":
			l.Surface = v
		case "source":
			l.Source = v
		case "stream":
			l.Stream = v
		}
	}
	if l.Surface == "" {
		l.Surface = SurfaceOf(url)
	}
	if l.Source == "" {
		l.Source = DefaultSource
	}
	l.Fleet = parseFleetTag(label)
	return l
}

// parseFleetTag reads client=, request=, attempt= and delay= (ns), and
// repeat=, answer= and fp=, from a label; nil when it has no client.
func parseFleetTag(label string) *FleetTag {
	if !strings.Contains(label, "client=") {
		return nil
	}
	t := &FleetTag{Request: 1, Delay: -1}
	for _, f := range strings.Fields(label) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "repeat":
			t.Repeat = v == "answer"
			continue
		case "answer":
			t.Answer = v
			continue
		case "fp":
			t.Fingerprint = v
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "client":
			t.Client = int(n)
		case "request":
			t.Request = int(n)
		case "attempt":
			t.Attempt = int(n)
		case "delay":
			t.Delay = time.Duration(n)
		}
	}
	if t.Attempt == 0 {
		return nil
	}
	return t
}

// SurfaceOf infers the surface of a result from its URL, for results
// files written without ratecheck's labels (the Vegeta CLI's, say): rest
// under /api/public/, mcp at /mcp, else "other". It reads the path without
// parsing the whole URL: it runs for every such result.
func SurfaceOf(raw string) string {
	path := raw
	if i := strings.Index(path, "://"); i >= 0 {
		path = path[i+3:]
		if j := strings.IndexByte(path, '/'); j >= 0 {
			path = path[j:]
		} else {
			path = "/"
		}
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	switch {
	case strings.HasPrefix(path, "/api/public/"):
		return "rest"
	case path == "/mcp":
		return "mcp"
	}
	return "other"
}

// ErrKind is the part of a transport error that does not name the request
// or the connection: the text after its last colon.
func ErrKind(err string) string {
	if err == "" {
		return "no answer"
	}
	if i := strings.LastIndex(err, ": "); i >= 0 {
		return err[i+2:]
	}
	return err
}
