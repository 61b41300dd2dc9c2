package decode

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// FuzzRead: any bytes as a results file are read or refused with an error
// naming the file, never a panic; in memory (Read) and on disk (Open) the
// same records come out in the same order.
func FuzzRead(f *testing.F) {
	rs := results(3) // small seeds: minimizing a new input reads it thousands of times
	for _, enc := range []func(*bytes.Buffer) vegeta.Encoder{gobOf, jsonOf, func(b *bytes.Buffer) vegeta.Encoder { return vegeta.NewCSVEncoder(b) }} {
		var buf bytes.Buffer
		e := enc(&buf)
		for i := range rs {
			if err := e.Encode(&rs[i]); err != nil {
				f.Fatal(err)
			}
		}
		f.Add(buf.Bytes())
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "results.bin")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := Read([]string{path}, testOptions)
		if err != nil {
			if !bytes.Contains([]byte(err.Error()), []byte(path)) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if len(in.Records) == 0 {
			t.Fatal("no error and no records")
		}
		sp, err := Open([]string{path}, testOptions)
		if err != nil {
			t.Fatalf("Read took it, Open refused it: %v", err)
		}
		defer sp.Close()
		var fromDisk, fromMemory []string
		show := func(tab *Tables, r *Record) string { return recordString(tab, r) }
		if err := sp.InOrder(func(r *Record) { fromDisk = append(fromDisk, show(sp.Tables(), r)) }); err != nil {
			t.Fatal(err)
		}
		for i := range in.Records {
			fromMemory = append(fromMemory, show(in.Tables(), &in.Records[i]))
		}
		if !slices.Equal(fromDisk, fromMemory) {
			t.Fatalf("Open streams %d records, Read %d, or in another order", len(fromDisk), len(fromMemory))
		}
	})
}

// FuzzFastDecoder: whatever value message follows Vegeta's type
// definitions, the fast decoder either steps aside or reads exactly what
// Vegeta's decoder reads.
func FuzzFastDecoder(f *testing.F) {
	rs := results(100)
	var buf bytes.Buffer
	e := vegeta.NewEncoder(&buf)
	for i := range rs {
		if err := e.Encode(&rs[i]); err != nil {
			f.Fatal(err)
		}
	}
	var defs []byte
	for b := buf.Bytes(); len(b) > 0; {
		size, w, _ := gobUint(b)
		msg := b[:w+int(size)]
		if id, _, _ := gobUint(msg[w:]); id&1 == 1 {
			defs = append(defs, msg...)
		} else {
			f.Add(msg[w:])
		}
		b = b[w+int(size):]
	}
	l := parseLayout(defs)
	if l == nil {
		f.Fatal("layout not recognized")
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		var fast result
		if l.decodeResult(msg, &fast) != nil {
			return
		}
		// Frame msg after the definitions and let Vegeta decode it.
		var stream []byte
		stream = append(stream, defs...)
		stream = append(stream, gobUintBytes(uint64(len(msg)))...)
		stream = append(stream, msg...)
		var v vegeta.Result
		if err := vegeta.NewDecoder(bytes.NewReader(stream)).Decode(&v); err != nil {
			t.Fatalf("the fast decoder read a message Vegeta refuses (%v): %x", err, msg)
		}
		want := fromVegeta(&v)
		if len(want.Body) == 0 && len(fast.Body) == 0 {
			want.Body, fast.Body = nil, nil // empty or absent: the same to record
		}
		if !equalResults(want, fast) {
			t.Fatalf("fast %+v, Vegeta %+v, message %x", fast, want, msg)
		}
	})
}

func equalResults(a, b result) bool {
	return a.Attack == b.Attack && a.URL == b.URL && a.Error == b.Error && bytes.Equal(a.Body, b.Body) && a.Code == b.Code &&
		a.Start == b.Start && a.Latency == b.Latency && a.Allow == b.Allow && a.RetryAfter == b.RetryAfter &&
		a.RateLimit == b.RateLimit && a.RateLimitPolicy == b.RateLimitPolicy && a.Advertised == b.Advertised
}

// gobUintBytes encodes x as gob encodes an unsigned integer.
func gobUintBytes(x uint64) []byte {
	if x < 0x80 {
		return []byte{byte(x)}
	}
	var b []byte
	for v := x; v > 0; v >>= 8 {
		b = append([]byte{byte(v)}, b...)
	}
	return append([]byte{byte(-len(b))}, b...)
}

// FuzzReadPiped: any bytes read from a pipe (no size, no Seek: `… |
// ratecheck analyze /dev/stdin`) are read or refused with an error naming
// the input, never a panic, and never allocate what a length claims: the
// bytes allocated are bounded whatever the input says. Read as a file of
// known size instead, the same bytes give the same records whenever both
// read them.
func FuzzReadPiped(f *testing.F) {
	rs := results(3)
	for _, enc := range []func(*bytes.Buffer) vegeta.Encoder{gobOf, jsonOf, func(b *bytes.Buffer) vegeta.Encoder { return vegeta.NewCSVEncoder(b) }} {
		var buf bytes.Buffer
		e := enc(&buf)
		for i := range rs {
			if err := e.Encode(&rs[i]); err != nil {
				f.Fatal(err)
			}
		}
		f.Add(buf.Bytes())
		f.Add(append(bytes.Clone(buf.Bytes()), 0xf8, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x03, 0))
		f.Add(append(bytes.Clone(buf.Bytes()), 0xfc, 0x3f, 0xff, 0xff, 0xf0))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		piped, p, perr := readPipe(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20+64*uint64(len(data)) {
			t.Fatalf("%d bytes in allocated %d", len(data), a)
		}
		if p.n > int64(len(data)) {
			t.Fatalf("read %d bytes of %d", p.n, len(data))
		}
		if perr != nil {
			if !strings.Contains(perr.Error(), "/dev/stdin") {
				t.Fatalf("error %q does not name the input", perr)
			}
			return
		}
		file := NewInput()
		rd := &reader{tab: file.tab, opts: testOptions}
		if _, _, err := rd.readStream(bytes.NewReader(data), int64(len(data)), "/dev/stdin", func(r Record) { file.Records = append(file.Records, r) }); err != nil {
			return // a length past MaxResult and past the end: the file calls it truncated, the pipe cannot know
		}
		if len(file.Records) != len(piped.Records) {
			t.Fatalf("piped %d records, as a file %d", len(piped.Records), len(file.Records))
		}
		for i := range file.Records {
			if a, b := recordString(file.Tables(), &file.Records[i]), recordString(piped.Tables(), &piped.Records[i]); a != b {
				t.Fatalf("record %d piped %s, as a file %s", i, b, a)
			}
		}
	})
}
