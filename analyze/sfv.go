package analyze

import (
	"errors"
	"strconv"
)

// The structured field values (RFC 9651, which obsoletes RFC 8941) the
// RateLimit fields are written in: a List of Items with Parameters, or a
// Dictionary (draft 7's RateLimit). Only what the fields use is kept:
// Integers, Strings, Tokens and Byte Sequences as text; Decimals,
// Booleans, Dates, Display Strings and Inner Lists are parsed and kept as
// their kind alone, so that a field using them is well formed.

// An sfItem is a bare item with its parameters.
type sfItem struct {
	kind   sfKind
	text   string // a String's, Token's or Byte Sequence's content; an Integer's digits
	num    int64  // an Integer's value
	params []sfParam
}

// An sfParam is one parameter of an item (or a dictionary member).
type sfParam struct {
	key string
	val sfItem // a parameter without a value is Boolean true
}

// sfKind is the type of a bare item.
type sfKind uint8

const (
	sfInteger sfKind = iota + 1
	sfDecimal
	sfString
	sfToken
	sfBytes
	sfBoolean
	sfDate
	sfDisplay
	sfInner // an Inner List (its members are not kept)
)

// sfMaxParams bounds the parameters kept of one item: a field is at most
// maxText bytes, and a parser does not grow with an attacker's input.
const sfMaxParams = 32

var errSF = errors.New("not a structured field value")

// sfParser reads one field value.
type sfParser struct {
	s   string
	pos int
}

// param returns the value of the parameter key of it (nil: none).
func (it *sfItem) param(key string) *sfItem {
	for i := range it.params {
		if it.params[i].key == key {
			return &it.params[i].val
		}
	}
	return nil
}

// parseSFList parses a List (RFC 9651 §4.2.1).
func parseSFList(s string) ([]sfItem, error) {
	p := &sfParser{s: s}
	p.sp()
	var out []sfItem
	for p.pos < len(p.s) {
		it, err := p.member()
		if err != nil {
			return nil, err
		}
		if len(out) < sfMaxParams {
			out = append(out, it)
		}
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errSF
	}
	return out, nil
}

// parseSFDict parses a Dictionary (RFC 9651 §4.2.2): each member as a
// parameter, its key and its value.
func parseSFDict(s string) ([]sfParam, error) {
	p := &sfParser{s: s}
	p.sp()
	var out []sfParam
	for p.pos < len(p.s) {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		m := sfItem{kind: sfBoolean, text: "1"}
		if p.peek() == '=' {
			p.pos++
			if m, err = p.member(); err != nil {
				return nil, err
			}
		} else if m.params, err = p.params(); err != nil {
			return nil, err
		}
		if len(out) < sfMaxParams {
			out = append(out, sfParam{key, m})
		}
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errSF
	}
	return out, nil
}

// next reads what follows a member: the end, or a comma and another.
func (p *sfParser) next() error {
	p.ows()
	if p.pos == len(p.s) {
		return nil
	}
	if p.s[p.pos] != ',' {
		return errSF
	}
	p.pos++
	p.ows()
	if p.pos == len(p.s) {
		return errSF // a trailing comma
	}
	return nil
}

func (p *sfParser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *sfParser) sp() {
	for p.pos < len(p.s) && p.s[p.pos] == ' ' {
		p.pos++
	}
}

func (p *sfParser) ows() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

// member reads an Item or an Inner List, with its parameters.
func (p *sfParser) member() (sfItem, error) {
	var it sfItem
	var err error
	if p.peek() == '(' {
		it, err = p.inner()
	} else {
		it, err = p.bare()
	}
	if err != nil {
		return it, err
	}
	it.params, err = p.params()
	return it, err
}

// inner reads an Inner List (RFC 9651 §4.2.1.2), keeping only its kind.
func (p *sfParser) inner() (sfItem, error) {
	p.pos++
	for {
		p.sp()
		if p.peek() == ')' {
			p.pos++
			return sfItem{kind: sfInner}, nil
		}
		if _, err := p.bare(); err != nil {
			return sfItem{}, err
		}
		if _, err := p.params(); err != nil {
			return sfItem{}, err
		}
		if c := p.peek(); c != ' ' && c != ')' {
			return sfItem{}, errSF
		}
	}
}

// params reads an item's parameters (RFC 9651 §4.2.3.2).
func (p *sfParser) params() ([]sfParam, error) {
	var out []sfParam
	for p.peek() == ';' {
		p.pos++
		p.sp()
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		v := sfItem{kind: sfBoolean, text: "1"}
		if p.peek() == '=' {
			p.pos++
			if v, err = p.bare(); err != nil {
				return nil, err
			}
		}
		if len(out) < sfMaxParams {
			out = append(out, sfParam{key, v})
		}
	}
	return out, nil
}

// key reads a key: lowercase letters, digits, "_-.*", starting with a
// letter or "*".
func (p *sfParser) key() (string, error) {
	start := p.pos
	if c := p.peek(); !(c >= 'a' && c <= 'z' || c == '*') {
		return "", errSF
	}
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.pos++
	}
	return p.s[start:p.pos], nil
}

// bare reads a bare item (RFC 9651 §4.2.3.1).
func (p *sfParser) bare() (sfItem, error) {
	switch c := p.peek(); {
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == '"':
		return p.str()
	case c == ':':
		return p.bytes()
	case c == '?':
		return p.boolean()
	case c == '@':
		p.pos++
		it, err := p.number()
		if err != nil || it.kind != sfInteger {
			return sfItem{}, errSF
		}
		it.kind = sfDate
		return it, nil
	case c == '%':
		p.pos++
		it, err := p.str()
		it.kind = sfDisplay
		return it, err
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '*':
		return p.token(), nil
	}
	return sfItem{}, errSF
}

// number reads an Integer (at most 15 digits) or a Decimal.
func (p *sfParser) number() (sfItem, error) {
	start := p.pos
	if p.peek() == '-' {
		p.pos++
	}
	digits, dot := 0, -1
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '.' && dot < 0 {
			dot = digits
		} else if c < '0' || c > '9' {
			break
		} else {
			digits++
		}
		p.pos++
	}
	text := p.s[start:p.pos]
	switch {
	case digits == 0:
		return sfItem{}, errSF
	case dot < 0 && digits <= 15:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return sfItem{}, errSF
		}
		return sfItem{kind: sfInteger, text: text, num: n}, nil
	case dot > 0 && dot <= 12 && digits-dot >= 1 && digits-dot <= 3:
		return sfItem{kind: sfDecimal, text: text}, nil
	}
	return sfItem{}, errSF
}

// str reads a String: printable ASCII, with \" and \\ escapes.
func (p *sfParser) str() (sfItem, error) {
	if p.peek() != '"' {
		return sfItem{}, errSF
	}
	p.pos++
	var b []byte
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		switch {
		case c == '"':
			return sfItem{kind: sfString, text: string(b)}, nil
		case c == '\\':
			if p.pos == len(p.s) || (p.s[p.pos] != '"' && p.s[p.pos] != '\\') {
				return sfItem{}, errSF
			}
			b = append(b, p.s[p.pos])
			p.pos++
		case c < 0x20 || c > 0x7e:
			return sfItem{}, errSF
		default:
			b = append(b, c)
		}
	}
	return sfItem{}, errSF
}

// token reads a Token.
func (p *sfParser) token() sfItem {
	start := p.pos
	p.pos++
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c <= ' ' || c >= 0x7f || (c != ':' && c != '/' && !isTchar(c)) {
			break
		}
		p.pos++
	}
	return sfItem{kind: sfToken, text: p.s[start:p.pos]}
}

// isTchar reports whether c is an RFC 9110 tchar.
func isTchar(c byte) bool {
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// bytes reads a Byte Sequence, keeping its base64 text.
func (p *sfParser) bytes() (sfItem, error) {
	p.pos++
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ':' {
		c := p.s[p.pos]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return sfItem{}, errSF
		}
		p.pos++
	}
	if p.pos == len(p.s) {
		return sfItem{}, errSF
	}
	p.pos++
	return sfItem{kind: sfBytes, text: p.s[start : p.pos-1]}, nil
}

// boolean reads a Boolean.
func (p *sfParser) boolean() (sfItem, error) {
	p.pos++
	if c := p.peek(); c == '0' || c == '1' {
		p.pos++
		return sfItem{kind: sfBoolean, text: string(c)}, nil
	}
	return sfItem{}, errSF
}
