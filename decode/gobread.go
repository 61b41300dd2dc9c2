package decode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Decoding gob is most of the cost of reading a results file, and one gob
// stream decodes on one core. Its messages are length-prefixed, though, so
// readGob cuts the stream into batches of whole messages, each led by the
// stream's type definitions, and decodes the batches on every core with
// Vegeta's own decoder, keeping their order.

// gobBatch is a run of value messages with the type definitions before them.
type gobBatch struct {
	seq     int    // the batch's place in the file
	first   int    // the index of its first result in the file
	n       int    // results in it
	defs    []byte // the stream's type definitions (shared, read only)
	vals    []byte // the value messages (a buffer of the pool)
	recs    []Record
	samples []Sample // the batch's sample candidates, in order
	// answers whose volatile headers the collector decides on, in order,
	// and the buffer their strings are in (see pendingHead)
	heads   []pendingHead
	headBuf []byte
	err     error
	errAt   int // the index of the result the error is about
}

// A batch is cut at gobBatchResults results or gobBatchBytes bytes (Vegeta
// keeps whole bodies), whichever comes first.
const (
	gobBatchResults = 1024
	gobBatchBytes   = 1 << 18
)

// isGob reports whether br starts with a gob stream of Vegeta results: the
// first result decodes. The decoder reads whole messages of what br holds
// (see gobFrames): gob's own would allocate what a length claims. It peeks
// at more while the first result runs past what it peeked at, up to br's
// size (a result of a large body).
func isGob(br *bufio.Reader) bool {
	for n := 64 << 10; ; n *= 2 {
		head, err := br.Peek(min(n, br.Size()))
		if len(head) == 0 {
			return false
		}
		frames := newGobFrames(bufio.NewReader(bytes.NewReader(head)), int64(len(head)))
		derr := vegeta.NewDecoder(frames).Decode(newResult())
		if derr == nil {
			return true
		}
		if !errors.Is(derr, io.ErrUnexpectedEOF) || err != nil || len(head) >= br.Size() {
			return false
		}
	}
}

// gobUint decodes a gob unsigned integer at the start of b: its value and
// width.
func gobUint(b []byte) (uint64, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	if b[0] < 0x80 {
		return uint64(b[0]), 1, true
	}
	w := -int(int8(b[0]))
	if w > 8 || len(b) < 1+w {
		return 0, 0, false
	}
	var x uint64
	for _, c := range b[1 : 1+w] {
		x = x<<8 | uint64(c)
	}
	return x, 1 + w, true
}

// readGobMessage appends one whole message of at most left bytes to buf
// (length prefix included) and says whether it defines a type. io.EOF at a
// clean end; io.ErrUnexpectedEOF in the middle of a message, or where a
// length is zero or runs past the file's end (a crash's padding or a
// corrupt tail); a *tooBigError where a length is above MaxResult. The
// message is read as its bytes arrive, in pieces, so that a length is never
// trusted with an allocation: a pipe has no size to check it against.
func readGobMessage(br *bufio.Reader, buf []byte, left int64) ([]byte, bool, error) {
	head, err := br.Peek(9)
	if len(head) == 0 {
		if err == nil {
			err = io.EOF
		}
		return buf, false, err
	}
	size, w, ok := gobUint(head)
	switch {
	case !ok || size == 0 || left < int64(w) || size > uint64(left-int64(w)):
		return buf, false, io.ErrUnexpectedEOF
	case size > maxResult:
		return buf, false, &tooBigError{size}
	}
	at, need := len(buf), w+int(size)
	for len(buf)-at < need {
		n := min(need-(len(buf)-at), 64<<10)
		buf = slices.Grow(buf, n)
		got, err := io.ReadFull(br, buf[len(buf):len(buf)+n])
		buf = buf[:len(buf)+got]
		if err != nil {
			return buf[:at], false, io.ErrUnexpectedEOF
		}
	}
	id, _, ok := gobUint(buf[at+w:])
	return buf, ok && id&1 == 1, nil
}

// readGob reads a gob results file of size bytes on every core, handing
// each result's record to add in file order. It returns how many were read and
// whether the file ended mid-record. A few batch buffers go round, so that
// reading a big file does not touch fresh memory for every batch.
func (rd *reader) readGob(br *bufio.Reader, path string, size int64, add func(Record)) (int, bool, error) {
	workers := max(runtime.GOMAXPROCS(0), 1)
	todo := make(chan *gobBatch, workers)
	done := make(chan *gobBatch, workers)
	// A fixed set of batches goes round: the cutter waits for one to come
	// back rather than make another, so that the buffers are reused and
	// the memory held is bounded (a fresh batch for every one cut would
	// make the garbage collector's goal, and the peak RSS, follow the
	// pipeline's depth). It cannot deadlock: every batch out of free is
	// being filled, decoded or waiting for the collector, which always
	// ends up with the next in order and returns it.
	free := make(chan *gobBatch, 2*workers+2)
	for range cap(free) {
		free <- &gobBatch{}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := rd.newInterner()
			it.deferHeads = true
			for b := range todo {
				b.decode(it)
				done <- b
			}
		}()
	}
	// Cut the stream into batches.
	var cutErr error
	truncated := false
	go func() {
		defer func() {
			close(todo)
			wg.Wait()
			close(done)
		}()
		truncated, cutErr = cutGob(br, path, size, free, todo)
	}()
	total, err := rd.collectGob(done, free, path, add)
	switch {
	case err != nil:
		return total, false, err
	case cutErr != nil:
		return total, false, cutErr
	}
	return total, truncated, nil
}

// cutGob cuts a gob stream into batches of messages, each with the type
// definitions that serve it, taking empty batches from free and handing
// full ones to todo in order. It reports a stream that ended in the middle
// of a message (truncated), and an error that stopped it.
func cutGob(br *bufio.Reader, path string, size int64, free <-chan *gobBatch, todo chan<- *gobBatch) (truncated bool, err error) {
	var defs []byte // type definitions of the stream being read
	afterValues := false
	left := size
	if left <= 0 {
		left = math.MaxInt64
	}
	seq, first := 0, 0
	b := <-free
	flush := func() {
		if b.n == 0 {
			return
		}
		b.seq, b.first, b.defs = seq, first, defs
		todo <- b
		seq, first = seq+1, first+b.n
		b = <-free
		*b = gobBatch{vals: b.vals[:0], recs: b.recs[:0], samples: b.samples[:0], heads: b.heads[:0], headBuf: b.headBuf[:0]}
	}
	for {
		at := len(b.vals)
		vals, def, err := readGobMessage(br, b.vals, left)
		b.vals = vals
		left -= int64(len(b.vals) - at)
		if err != nil {
			flush()
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return true, nil
			} else if err != io.EOF {
				return false, fmt.Errorf("%s: record %d: %w", path, first+b.n+1, err)
			}
			return false, nil
		}
		if def {
			// Definitions after values start a new stream (files
			// concatenated with cat): they serve what follows them.
			msg := bytes.Clone(b.vals[at:])
			b.vals = b.vals[:at]
			flush()
			if afterValues {
				defs, afterValues = nil, false
			}
			if len(defs)+len(msg) > maxDefs {
				return false, fmt.Errorf("%s: record %d: %w", path, first+1, errTooManyDefs)
			}
			defs = append(defs[:len(defs):len(defs)], msg...) // a batch may hold the old slice
			continue
		}
		afterValues = true
		if b.n++; b.n == gobBatchResults || len(b.vals) >= gobBatchBytes {
			flush()
		}
	}
}

// collectGob takes the decoded batches from done, hands their records to
// add in the stream's order and returns each batch to free. It returns how
// many records it handed over and the first decoding error (after which it
// hands over nothing more, but still drains done).
func (rd *reader) collectGob(done <-chan *gobBatch, free chan<- *gobBatch, path string, add func(Record)) (int, error) {
	pending := map[int]*gobBatch{}
	next, total := 0, 0
	var firstErr error
	heads := rd.newInterner() // the answers with volatile headers, in file order
	for b := range done {
		pending[b.seq] = b
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if firstErr == nil {
				for _, h := range b.heads {
					b.recs[h.rec].answer = heads.answer(h.a)
				}
				for _, r := range b.recs {
					add(r)
				}
				rd.keep(b.samples)
				total += len(b.recs)
				if b.err != nil {
					firstErr = fmt.Errorf("%s: record %d: %w", path, b.errAt+1, b.err)
				}
			}
			free <- b // never blocks: free has room for every batch
		}
	}
	return total, firstErr
}

// decode decodes the batch into records: by the fast decoder when the
// stream's layout is Vegeta's Result as the fast decoder knows it, else (or
// if a message surprises it) with Vegeta's decoder.
func (b *gobBatch) decode(it *interner) {
	defer func() {
		b.samples = it.takeSamples()
		b.heads, b.headBuf = it.takeHeads(b.heads, b.headBuf)
	}()
	if l := it.layout(b.defs); l != nil && b.decodeFast(l, it) {
		return
	}
	it.takeSamples() // a fast decode that stepped aside took some: drop them
	it.heads, it.headBuf, it.made = it.heads[:0], it.headBuf[:0], 0
	dec := vegeta.NewDecoder(io.MultiReader(bytes.NewReader(b.defs), bytes.NewReader(b.vals)))
	b.recs = b.recs[:0]
	for i := range b.n {
		r := newResult()
		if err := dec.Decode(r); err != nil {
			b.err, b.errAt = err, b.first+i
			return
		}
		res := fromVegeta(r)
		b.recs = append(b.recs, it.record(&res, nil))
	}
}

// decodeFast decodes the batch's values with layout l, and reports false
// (keeping nothing) at the first message it cannot read.
func (b *gobBatch) decodeFast(l *resultLayout, it *interner) bool {
	b.recs = slices.Grow(b.recs[:0], b.n)
	vals := b.vals
	var r result
	for len(vals) > 0 {
		size, w, ok := gobUint(vals)
		if !ok || size > uint64(len(vals)-w) {
			return false
		}
		msg := vals[w : w+int(size)]
		vals = vals[w+int(size):]
		if l.decodeResult(msg, &r) != nil {
			return false
		}
		b.recs = append(b.recs, it.record(&r, nil))
	}
	return len(b.recs) == b.n
}

// layout returns the Result layout of a stream's type definitions (nil:
// not one the fast decoder reads), parsing each distinct one once.
func (it *interner) layout(defs []byte) *resultLayout {
	if l, ok := it.layouts[view(defs)]; ok {
		return l
	}
	l := parseLayout(defs)
	it.layouts[string(defs)] = l
	return l
}
