package analyze

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
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
	seq   int    // the batch's place in the file
	first int    // the index of its first result in the file
	n     int    // results in it
	size  int    // bytes of its values
	raw   []byte // type definitions, then the values
	recs  []Record
	err   error
	errAt int // the index of the result the error is about
}

// A batch is cut at gobBatchResults results or gobBatchBytes bytes (Vegeta
// keeps whole bodies), whichever comes first.
const (
	gobBatchResults = 4096
	gobBatchBytes   = 8 << 20
)

// isGob reports whether br starts with a gob stream of Vegeta results: the
// first result decodes.
func isGob(br *bufio.Reader) bool {
	head, _ := br.Peek(64 << 10)
	var r vegeta.Result
	return len(head) > 0 && vegeta.NewDecoder(bytes.NewReader(head)).Decode(&r) == nil
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

// readGobMessage reads one whole message of at most left bytes: its bytes
// (length prefix included) and whether it defines a type. io.EOF at a
// clean end; io.ErrUnexpectedEOF in the middle of a message, or where a
// length is zero or runs past the file's end (a crash's padding or a
// corrupt tail), so that nothing is allocated on a bad length's word.
func readGobMessage(br *bufio.Reader, left int64) ([]byte, bool, error) {
	head, err := br.Peek(9)
	if len(head) == 0 {
		if err == nil {
			err = io.EOF
		}
		return nil, false, err
	}
	size, w, ok := gobUint(head)
	if !ok || size == 0 || int64(size) > left-int64(w) {
		return nil, false, io.ErrUnexpectedEOF
	}
	msg := make([]byte, w+int(size))
	if _, err := io.ReadFull(br, msg); err != nil {
		return nil, false, io.ErrUnexpectedEOF
	}
	id, _, ok := gobUint(msg[w:])
	return msg, ok && id&1 == 1, nil
}

// readGob reads a gob results file of size bytes on every core, handing
// each result's record to add in file order, and to grow how many bytes
// the first batch's results took. It returns how many were read and
// whether the file ended mid-record.
func readGob(br *bufio.Reader, path string, size int64, add func(Record), grow func(n int, took int64)) (int, bool, error) {
	workers := max(runtime.GOMAXPROCS(0), 1)
	todo := make(chan *gobBatch, workers)
	done := make(chan *gobBatch, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := newInterner()
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
		var defs []byte   // type definitions seen so far
		var values []byte // value messages of the batch being cut
		afterValues := false
		left := size
		if left <= 0 {
			left = math.MaxInt64
		}
		seq, first, n := 0, 0, 0
		flush := func() {
			if n == 0 {
				return
			}
			raw := make([]byte, 0, len(defs)+len(values))
			raw = append(append(raw, defs...), values...)
			todo <- &gobBatch{seq: seq, first: first, n: n, size: len(values), raw: raw}
			seq, first, n, values = seq+1, first+n, 0, values[:0]
		}
		for {
			msg, def, err := readGobMessage(br, left)
			left -= int64(len(msg))
			if err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					truncated = true
				} else if err != io.EOF {
					cutErr = fmt.Errorf("%s: record %d: %w", path, first+n+1, err)
				}
				flush()
				return
			}
			if def {
				// Definitions after values start a new stream (files
				// concatenated with cat): they serve what follows them.
				flush()
				if afterValues {
					defs, afterValues = nil, false
				}
				defs = append(defs, msg...)
				continue
			}
			afterValues = true
			values = append(values, msg...)
			if n++; n == gobBatchResults || len(values) >= gobBatchBytes {
				flush()
			}
		}
	}()
	// Collect the batches in order.
	pending := map[int]*gobBatch{}
	next, total := 0, 0
	var firstErr *gobBatch
	for b := range done {
		pending[b.seq] = b
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if firstErr != nil {
				continue
			}
			if b.seq == 0 {
				grow(b.n, int64(b.size))
			}
			for _, r := range b.recs {
				add(r)
			}
			total += len(b.recs)
			if b.err != nil {
				firstErr = b
			}
		}
	}
	if firstErr != nil {
		return total, false, fmt.Errorf("%s: record %d: %w", path, firstErr.errAt+1, firstErr.err)
	}
	if cutErr != nil {
		return total, false, cutErr
	}
	return total, truncated, nil
}

// decode decodes the batch into records with Vegeta's decoder.
func (b *gobBatch) decode(it *interner) {
	dec := vegeta.NewDecoder(bytes.NewReader(b.raw))
	b.recs = make([]Record, 0, b.n)
	for i := range b.n {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			b.err, b.errAt = err, b.first+i
			return
		}
		b.recs = append(b.recs, it.record(&r))
	}
	b.raw = nil
}
