package decode

import (
	"encoding/binary"
	"errors"
	"time"
	"unsafe"
)

// Vegeta's gob decoder goes through reflection and allocates every field of
// every result, which costs more than all the analysis after it. The gob
// wire format is documented and stable (encoding/gob's package doc), so a
// stream whose type definitions describe Vegeta's Result as Vegeta writes
// it is decoded here field by field, with no allocation per result: the
// strings of a result point into the batch's bytes, and the interner copies
// the few it keeps. Anything else (another layout, a field this does not
// know, a malformed message) goes to Vegeta's decoder, which is always
// right and says what is wrong.

// gob's predefined type ids (encoding/gob/type.go).
const (
	gobInt    = 2
	gobUintID = 3
	gobBytes  = 5
	gobString = 6
)

// Fields of Vegeta's Result the fast decoder knows.
const (
	fSkipUint   = iota // an unsigned number not kept (Seq, BytesOut, BytesIn)
	fSkipString        // a string not kept (Method)
	fAttack
	fCode
	fTimestamp
	fLatency
	fError
	fBody
	fURL
	fHeaders
)

// resultLayout is how one stream lays out Vegeta's Result: the type id of
// its values and, per wire field number, which field it is.
type resultLayout struct {
	id     int64
	fields []uint8
}

// wireDef is the part of a gob type definition (encoding/gob's wireType)
// the layout check needs.
type wireDef struct {
	kind      int // 1 array, 2 slice, 3 struct, 4 map, 5 GobEncoder, 6 BinaryMarshaler, 7 TextMarshaler
	name      string
	elem, key int64
	fields    []wireField
}

type wireField struct {
	name string
	id   int64
}

// errGob is any departure from what the fast decoder expects; the batch is
// then decoded again by Vegeta's decoder.
var errGob = errors.New("not a stream the fast decoder reads")

// gobCursor reads gob's primitive encodings from b.
type gobCursor struct {
	b   []byte
	pos int
	err error
}

func (c *gobCursor) uint() uint64 {
	if c.err != nil {
		return 0
	}
	x, w, ok := gobUint(c.b[c.pos:])
	if !ok {
		c.err = errGob
		return 0
	}
	c.pos += w
	return x
}

func (c *gobCursor) int() int64 {
	x := c.uint()
	if x&1 != 0 {
		return ^int64(x >> 1)
	}
	return int64(x >> 1)
}

// bytes returns the next length-prefixed byte string, aliasing b.
func (c *gobCursor) bytes() []byte {
	n := c.uint()
	if c.err != nil || n > uint64(len(c.b)-c.pos) {
		c.err = errGob
		return nil
	}
	s := c.b[c.pos : c.pos+int(n) : c.pos+int(n)]
	c.pos += int(n)
	return s
}

// string returns the next string without copying it.
func (c *gobCursor) string() string { return view(c.bytes()) }

// view returns b as a string without copying: the caller must not let it
// outlive b's contents, and b must not change while it is in use.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// structFields calls fn with each field number of the struct at the cursor
// until its terminator; fn reads the field's value.
func (c *gobCursor) structFields(fn func(field int)) {
	field := -1
	for c.err == nil {
		d := c.uint()
		if d == 0 || c.err != nil {
			return
		}
		if d > uint64(len(c.b)) { // no struct has that many fields: corrupt
			c.err = errGob
			return
		}
		field += int(d)
		fn(field)
	}
}

// parseLayout reads the type definitions of a stream (whole messages) and
// returns the layout of Vegeta's Result in it, or nil when they do not
// describe it exactly as the fast decoder reads it.
func parseLayout(defs []byte) *resultLayout {
	types := parseDefs(defs)
	if types == nil {
		return nil
	}
	want := map[string]struct {
		field uint8
		ok    func(int64) bool
	}{
		"Attack": {fAttack, is(gobString)},
		"Seq":    {fSkipUint, is(gobUintID)},
		"Code":   {fCode, is(gobUintID)},
		"Timestamp": {fTimestamp, func(id int64) bool {
			d := types[id]
			return d != nil && d.kind == 5 && d.name == "Time" // a GobEncoder, as time.Time is
		}},
		"Latency":  {fLatency, is(gobInt)},
		"BytesOut": {fSkipUint, is(gobUintID)},
		"BytesIn":  {fSkipUint, is(gobUintID)},
		"Error":    {fError, is(gobString)},
		"Body":     {fBody, is(gobBytes)},
		"Method":   {fSkipString, is(gobString)},
		"URL":      {fURL, is(gobString)},
		"Headers": {fHeaders, func(id int64) bool {
			m := types[id]
			if m == nil || m.kind != 4 || m.key != gobString {
				return false
			}
			s := types[m.elem]
			return s != nil && s.kind == 2 && s.elem == gobString
		}},
	}
	var layout *resultLayout
	for id, d := range types {
		if d.kind != 3 || d.name != "Result" {
			continue
		}
		if layout != nil {
			return nil // two of them: not a stream of Vegeta results alone
		}
		layout = &resultLayout{id: id}
		for _, f := range d.fields {
			w, ok := want[f.name]
			if !ok || !w.ok(f.id) {
				return nil
			}
			layout.fields = append(layout.fields, w.field)
		}
	}
	return layout
}

// parseDefs reads a stream's type definitions by their ids, or nil when
// they are not well-formed.
func parseDefs(defs []byte) map[int64]*wireDef {
	types := map[int64]*wireDef{}
	c := &gobCursor{b: defs}
	for c.pos < len(defs) && c.err == nil {
		size := c.uint()
		if c.err != nil || size > uint64(len(defs)-c.pos) {
			return nil
		}
		end := c.pos + int(size)
		id := -c.int()
		d := c.wireType()
		if c.err != nil || c.pos != end {
			return nil
		}
		types[id] = d
	}
	if c.err != nil {
		return nil
	}
	return types
}

// wireType reads one gob wireType (of which one field is set).
func (c *gobCursor) wireType() *wireDef {
	d := &wireDef{}
	c.structFields(func(kind int) {
		d.kind = kind + 1
		c.structFields(func(f int) {
			switch {
			case f == 0: // CommonType
				c.structFields(func(g int) {
					if g == 0 {
						d.name = c.string()
					} else {
						c.int()
					}
				})
			case d.kind == 3 && f == 1: // structType.Field
				d.fields = c.fieldTypes()
			case (d.kind == 1 || d.kind == 2) && f == 1:
				d.elem = c.int()
			case d.kind == 4 && f == 1:
				d.key = c.int()
			case d.kind == 4 && f == 2:
				d.elem = c.int()
			default:
				c.int() // arrayType.Len
			}
		})
	})
	return d
}

// fieldTypes reads a structType's fields: their names and type ids.
func (c *gobCursor) fieldTypes() []wireField {
	n := c.uint()
	if n > uint64(len(c.b)-c.pos) { // each field takes bytes
		c.err = errGob
		return nil
	}
	var fields []wireField
	for range n {
		var wf wireField
		c.structFields(func(g int) {
			if g == 0 {
				wf.name = c.string()
			} else {
				wf.id = c.int()
			}
		})
		fields = append(fields, wf)
	}
	return fields
}

func is(want int64) func(int64) bool { return func(id int64) bool { return id == want } }

// zeroUnixNano is what a result without a timestamp reads as.
var zeroUnixNano = time.Time{}.UnixNano()

// decodeResult decodes one value message (its length prefix stripped) into
// r, whose strings then alias msg.
func (l *resultLayout) decodeResult(msg []byte, r *result) error {
	*r = result{Start: zeroUnixNano}
	c := &gobCursor{b: msg}
	if c.int() != l.id {
		return errGob
	}
	c.structFields(func(f int) {
		if f >= len(l.fields) {
			c.err = errGob
			return
		}
		switch l.fields[f] {
		case fAttack:
			r.Attack = c.string()
		case fCode:
			code := c.uint()
			if code > 0xffff {
				c.err = errGob
			}
			r.Code = uint16(code)
		case fTimestamp:
			r.Start = timeUnixNano(c.bytes(), c)
		case fLatency:
			r.Latency = c.int()
		case fError:
			r.Error = c.string()
		case fBody:
			r.Body = c.bytes()
		case fURL:
			r.URL = c.string()
		case fHeaders:
			n := c.uint()
			if n > uint64(len(msg)) {
				c.err = errGob
				return
			}
			for range n {
				k := c.string()
				n := c.uint()
				if c.err != nil || n > uint64(len(msg)) {
					c.err = errGob
					return
				}
				var first string
				for i := range n {
					if v := c.string(); i == 0 {
						first = v
					}
				}
				r.header(k, first)
			}
		case fSkipUint:
			c.uint()
		case fSkipString:
			c.bytes()
		}
	})
	if c.err != nil || c.pos != len(msg) {
		return errGob
	}
	return nil
}

// timeUnixNano reads time.Time's binary encoding (version 1 or 2: seconds
// since year 1, nanoseconds, zone offset) as Unix nanoseconds, as
// time.Time.UnixNano would.
func timeUnixNano(b []byte, c *gobCursor) int64 {
	if len(b) < 15 || (b[0] != 1 && b[0] != 2) || (b[0] == 1 && len(b) != 15) || (b[0] == 2 && len(b) != 16) {
		c.err = errGob
		return 0
	}
	sec := int64(binary.BigEndian.Uint64(b[1:9]))
	nsec := int64(int32(binary.BigEndian.Uint32(b[9:13])))
	if nsec < 0 || nsec >= 1e9 { // time would read it differently: let it
		c.err = errGob
		return 0
	}
	const internalToUnix = -62135596800 // seconds from year 1 to 1970
	return (sec+internalToUnix)*1e9 + nsec
}
