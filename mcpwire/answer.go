package mcpwire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
)

// ErrNoResponse is returned when an event stream ended (or was cut off)
// before it carried the JSON-RPC response: the answer never came.
var ErrNoResponse = errors.New("the event stream ended without a JSON-RPC response")

// ErrNotResponse is returned when an application/json body is not a
// JSON-RPC response.
var ErrNotResponse = errors.New("the body is not a JSON-RPC response")

// Response is a JSON-RPC response: exactly one of Result and Error is set.
type Response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error: the code and the message.
func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Unsupported returns the data of a [CodeUnsupportedProtocolVersion]
// error, and whether e is one with readable data.
func (e *Error) Unsupported() (UnsupportedVersion, bool) {
	var d UnsupportedVersion
	if e == nil || e.Code != CodeUnsupportedProtocolVersion || json.Unmarshal(e.Data, &d) != nil {
		return UnsupportedVersion{}, false
	}
	return d, true
}

// ResponseJSON returns the JSON-RPC response an answer body carries. An
// event stream (contentType text/event-stream) yields the data of its
// first event that is a JSON-RPC response to id (to any request when id
// is nil); notifications and server requests before it are skipped, and
// [ErrNoResponse] says the stream ended without one. Any other body is
// returned as it is: the caller judges whether it is JSON-RPC.
//
// The result aliases body unless the response event's data spans several
// lines.
func ResponseJSON(contentType string, body []byte, id json.RawMessage) ([]byte, error) {
	if !IsEventStream(contentType) {
		return body, nil
	}
	for ev := range Events(body) {
		if ev.message() && isResponse(ev.Data, id) {
			return ev.Data, nil
		}
	}
	return nil, ErrNoResponse
}

// DecodeResponse decodes the JSON-RPC response an answer body carries
// (see [ResponseJSON]).
func DecodeResponse(contentType string, body []byte, id json.RawMessage) (*Response, error) {
	data, err := ResponseJSON(contentType, body, id)
	if err != nil {
		return nil, err
	}
	var r Response
	if err := json.Unmarshal(data, &r); err != nil || (r.Result == nil) == (r.Error == nil) {
		return nil, ErrNotResponse
	}
	return &r, nil
}

// ReadAnswer reads an answer body from r, at most max bytes. A JSON body
// is read to its end. An event stream is read only up to its first
// JSON-RPC response event, so that a server that keeps the stream open
// after the response does not hold the reader; [ErrNoResponse] says it
// ended (or reached max) without one. body is every byte read, which may
// run a little past the response event.
func ReadAnswer(r io.Reader, contentType string, max int) (body []byte, err error) {
	lr := &io.LimitedReader{R: r, N: int64(max)}
	if !IsEventStream(contentType) {
		return io.ReadAll(lr)
	}
	var buf bytes.Buffer
	er := NewEventReader(io.TeeReader(lr, &buf), max)
	for {
		ev, err := er.Next()
		if err == io.EOF {
			return buf.Bytes(), ErrNoResponse
		}
		if err != nil {
			return buf.Bytes(), err
		}
		if ev.message() && isResponse(ev.Data, nil) {
			return buf.Bytes(), nil
		}
	}
}

// presence records whether a JSON member was there, without copying it.
type presence bool

// UnmarshalJSON implements [json.Unmarshaler].
func (p *presence) UnmarshalJSON([]byte) error { *p = true; return nil }

// isResponse reports whether data is a JSON-RPC response, to id when id
// is not nil: an object with a result or error member and no method.
func isResponse(data []byte, id json.RawMessage) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method presence        `json:"method"`
		Result presence        `json:"result"`
		Error  presence        `json:"error"`
	}
	if json.Unmarshal(data, &m) != nil || m.Method || !(m.Result || m.Error) {
		return false
	}
	return id == nil || bytes.Equal(bytes.TrimSpace(m.ID), bytes.TrimSpace(id))
}

// Event is one server-sent event.
type Event struct {
	// Type is the event's type; "" when it named none, which means
	// "message".
	Type string
	// Data is the event's data lines joined by "\n". It is valid until the
	// next event is read.
	Data []byte
}

// message reports whether the event is a message event: the only type
// that carries JSON-RPC (the official SDKs skip the others).
func (e Event) message() bool { return e.Type == "" || e.Type == "message" }

// Events iterates over the events of an event stream held in memory, as
// the SSE specification reads them: lines end in LF, CRLF or CR; a line
// starting with ':' is a comment; "field: value" loses one space after
// the colon; data lines join with "\n"; a blank line dispatches an event
// that has data. An event cut off by the end of the body is dispatched
// too (the official Go SDK does so; a JSON-RPC message in it is complete
// or fails to parse).
func Events(body []byte) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		var p eventParser
		body = bytes.TrimPrefix(body, bom)
		for len(body) > 0 {
			n, line, _ := splitLine(body, true)
			body = body[n:]
			if ev, ok := p.line(line); ok && !yield(ev) {
				return
			}
		}
		if ev, ok := p.flush(); ok {
			yield(ev)
		}
	}
}

// EventReader reads events from a stream as it arrives (see [Events] for
// the rules). It is not safe for concurrent use.
type EventReader struct {
	sc    *bufio.Scanner
	p     eventParser
	first bool
	done  bool
}

// NewEventReader returns a reader of the events on r; a line longer than
// max bytes stops it with [bufio.ErrTooLong].
func NewEventReader(r io.Reader, max int) *EventReader {
	sc := bufio.NewScanner(r)
	// One byte over max, so that a reader capped at max ends (EOF) before
	// the scanner gives up on a long line.
	sc.Buffer(make([]byte, 0, min(4096, max+1)), max+1)
	sc.Split(splitLine)
	return &EventReader{sc: sc, p: eventParser{copy: true}, first: true}
}

// Next returns the next event, or io.EOF after the last one.
func (r *EventReader) Next() (Event, error) {
	for !r.done && r.sc.Scan() {
		line := r.sc.Bytes()
		if r.first {
			line, r.first = bytes.TrimPrefix(line, bom), false
		}
		if ev, ok := r.p.line(line); ok {
			return ev, nil
		}
	}
	if err := r.sc.Err(); err != nil {
		return Event{}, err
	}
	if !r.done {
		r.done = true
		if ev, ok := r.p.flush(); ok {
			return ev, nil
		}
	}
	return Event{}, io.EOF
}

var bom = []byte("\xef\xbb\xbf")

// splitLine is a [bufio.SplitFunc] for SSE lines, which end in LF, CRLF
// or a lone CR. A CR at the end of the data waits for the next byte
// (unless at EOF), since an LF may follow.
func splitLine(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if len(data) == 0 {
		return 0, nil, nil
	}
	end := len(data)
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		end = i
	}
	if i := bytes.IndexByte(data[:end], '\r'); i >= 0 {
		switch {
		case i+1 < len(data) && data[i+1] == '\n':
			return i + 2, data[:i], nil
		case i+1 < len(data) || atEOF:
			return i + 1, data[:i], nil
		}
		return 0, nil, nil
	}
	if end < len(data) {
		return end + 1, data[:end], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// eventParser assembles events from lines. With copy set, lines do not
// outlive the call (a scanner's buffer) and data is copied; otherwise a
// single data line is returned as a slice of the input.
type eventParser struct {
	copy  bool
	typ   []byte
	data  []byte
	buf   []byte
	lines int // data lines of the pending event
}

// line takes one line without its terminator and returns the event a
// blank line dispatches.
func (p *eventParser) line(l []byte) (Event, bool) {
	if len(l) == 0 {
		return p.flush()
	}
	if l[0] == ':' {
		return Event{}, false
	}
	field, value := l, l[len(l):]
	if i := bytes.IndexByte(l, ':'); i >= 0 {
		field, value = l[:i], l[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		switch {
		case p.lines == 0 && !p.copy:
			p.data = value
		case p.lines == 0:
			p.buf = append(p.buf[:0], value...)
			p.data = p.buf
		default:
			if p.lines == 1 && !p.copy {
				p.buf = append(p.buf[:0], p.data...)
			}
			p.buf = append(append(p.buf, '\n'), value...)
			p.data = p.buf
		}
		p.lines++
	case "event":
		p.typ = append(p.typ[:0], value...)
	}
	return Event{}, false
}

// flush dispatches the pending event, if it has data, and resets.
func (p *eventParser) flush() (Event, bool) {
	if p.lines == 0 {
		p.typ = p.typ[:0]
		return Event{}, false
	}
	ev := Event{Data: p.data}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	switch string(p.typ) {
	case "":
	case "message":
		ev.Type = "message"
	default:
		ev.Type = string(p.typ)
	}
	p.typ, p.data, p.lines = p.typ[:0], nil, 0
	return ev, true
}
