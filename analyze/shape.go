package analyze

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// fastErrorCode returns what errorCodes returns of b's error.code (a REST
// string or a JSON-RPC number), without reflection, for bodies of the
// usual form; ok is false when it cannot tell, and the caller asks
// errorCodes. A target that puts a request id in every refusal makes every
// body differ, so each is judged: this keeps that cheap.
func fastErrorCode(b []byte) (rest string, rpc int, ok bool) {
	if !json.Valid(b) {
		return "", 0, true // json.Unmarshal refuses it whole
	}
	s := scanner{b: b}
	s.space()
	if !s.is('{') {
		return "", 0, false
	}
	errVal, found, ok := s.member("error")
	if !ok || !found {
		return "", 0, ok
	}
	e := scanner{b: errVal}
	if !e.is('{') {
		return "", 0, true // null, or not an object: no code
	}
	code, found, ok := e.member("code")
	if !ok || !found {
		return "", 0, ok
	}
	switch c := code[0]; {
	case c == '"':
		inner := code[1 : len(code)-1]
		if bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
			return "", 0, false // escapes, or bytes json.Unmarshal replaces
		}
		return string(inner), 0, true
	case c == '-' || '0' <= c && c <= '9':
		n, err := strconv.ParseInt(string(code), 10, 0)
		if err != nil {
			return "", 0, true // a fraction, an exponent, too big: not an int
		}
		return "", int(n), true
	}
	return "", 0, true // null, true, false, an object or an array
}

// scanner reads a JSON text already known to be valid.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// is reports whether the next byte is c, and steps over it if so.
func (s *scanner) is(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// member reads the members of the object just opened and returns the
// value of the last one named key (as json.Unmarshal keeps the last). It
// cannot tell (ok false) when a name has escapes or differs from key only
// in case, which json.Unmarshal would also match.
func (s *scanner) member(key string) (val []byte, found, ok bool) {
	if s.is('}') {
		return nil, false, true
	}
	for {
		s.space()
		start := s.i
		s.value()
		name := s.b[start+1 : s.i-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return nil, false, false
		}
		s.is(':')
		s.space()
		vstart := s.i
		s.value()
		switch {
		case string(name) == key:
			val, found = s.b[vstart:s.i], true
		case bytes.EqualFold(name, []byte(key)):
			return nil, false, false
		}
		if !s.is(',') {
			return val, found, true
		}
	}
}

// value steps over one value.
func (s *scanner) value() {
	s.space()
	switch s.b[s.i] {
	case '"':
		s.i++
		for s.b[s.i] != '"' {
			if s.b[s.i] == '\\' {
				s.i++
			}
			s.i++
		}
		s.i++
	case '{', '[':
		depth := 0
		for {
			switch s.b[s.i] {
			case '"':
				s.value()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return
			}
		}
	default: // a number or a literal
		for s.i < len(s.b) && !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(s.b[s.i])) {
			s.i++
		}
	}
}
