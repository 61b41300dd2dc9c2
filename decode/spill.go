package decode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/connectbyjbrh/ratecheck/internal/heap"
)

// Source is what an analysis reads: records read twice, first in any
// order (counts), then in send order (windows), the tables they index, and
// what the input says of itself. *Input is one, in memory; *Spill is one
// on disk, for inputs too big to hold.
type Source interface {
	// Each hands every record to fn, in any order. The record is valid
	// only during the call.
	Each(fn func(*Record)) error
	// InOrder hands every record to fn in send order; records sent at the
	// same instant come in input order (file, then place in the file).
	InOrder(fn func(*Record)) error
	// Tables returns the tables the records index.
	Tables() *Tables
	// Info describes the input.
	Info() *Meta
}

// Spill is an input read once and kept on disk in a compact form (27 bytes
// a record, in a temporary directory), so that analyzing it takes memory
// for a window of records, not for all of them. Close removes it.
type Spill struct {
	Meta
	tab   *Tables
	dir   string
	parts []spillPart
}

// spillPart is one input file's records, in file order.
type spillPart struct {
	path string
	n    int
	// disp is how far back in time a record's send reached behind the
	// sends before it in the file (see order; Vegeta writes results as
	// they complete, not as they were sent): the reorder buffer's depth,
	// at most MaxReorder.
	disp int64
}

const spillRecord = 27

// spillBuffer is the buffer of a part's writer and readers: large enough
// that the system calls cost nothing beside the decoding (about 10 000
// records a call), small enough not to count in the peak RSS.
const spillBuffer = 256 << 10

// Open reads run folders or results files, as Read does, into a Spill.
func Open(paths []string, opts Options) (*Spill, error) {
	dir, err := os.MkdirTemp("", "ratecheck-analyze-")
	if err != nil {
		return nil, fmt.Errorf("making a temporary directory for the analysis (set TMPDIR to choose another place): %w", err)
	}
	s := &Spill{dir: dir, tab: newTables()}
	rd := &reader{tab: s.tab, opts: opts}
	err = rd.readInputs(paths, &s.Meta, func(file string, read func(add func(Record)) (int64, error)) error {
		part := spillPart{path: filepath.Join(dir, fmt.Sprintf("%d.rec", len(s.parts)))}
		f, err := os.Create(part.path)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, spillBuffer)
		var buf [spillRecord]byte
		var werr error
		part.disp, err = read(func(r Record) {
			if werr != nil {
				return
			}
			part.n++
			putRecord(buf[:], &r)
			_, werr = w.Write(buf[:])
		})
		if werr == nil {
			werr = w.Flush()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil && err == nil {
			err = fmt.Errorf("writing the analysis's temporary copy of %s in %s (set TMPDIR to choose another place): %w", file, dir, werr)
		}
		s.parts = append(s.parts, part)
		return err
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close removes the spill's files.
func (s *Spill) Close() error { return os.RemoveAll(s.dir) }

// Info implements Source.
func (s *Spill) Info() *Meta { return &s.Meta }

// Tables implements Source.
func (s *Spill) Tables() *Tables { return s.tab }

// Each implements Source, in file order.
func (s *Spill) Each(fn func(*Record)) error {
	for _, p := range s.parts {
		pr, err := s.open(p)
		if err != nil {
			return err
		}
		var r Record // one for every record: handed to fn, it would escape
		for {
			ok, err := pr.readInto(&r)
			if err != nil || !ok {
				pr.f.Close()
				if err != nil {
					return err
				}
				break
			}
			fn(&r)
		}
	}
	return nil
}

// InOrder implements Source: each file is put in send order through a
// reorder buffer as deep as its records reached back, and the files are
// merged. The merge keeps each file's reader by the send of its current
// record (Key), then its file (Tie): a file is in it once, so file decides
// every tie, and a file's own ties come out of it in file order.
func (s *Spill) InOrder(fn func(*Record)) error {
	heads := make(heap.Heap[*partReader], 0, len(s.parts))
	for i, p := range s.parts {
		pr, err := s.open(p)
		if err != nil {
			return err
		}
		defer pr.f.Close()
		ok, err := pr.next()
		if err != nil {
			return err
		}
		if ok {
			heads.Push(heap.Item[*partReader]{Key: pr.cur.Start, Tie: int64(i), Val: pr})
		}
	}
	for heads.Len() > 0 {
		head := heads.Min()
		pr := head.Val
		fn(&pr.cur)
		ok, err := pr.next()
		switch {
		case err != nil:
			return err
		case ok:
			head.Key = pr.cur.Start
			heads.FixMin()
		default:
			heads.Pop()
		}
	}
	return nil
}

func (s *Spill) open(p spillPart) (*partReader, error) {
	f, err := os.Open(p.path)
	if err != nil {
		return nil, err
	}
	size := spillBuffer
	if len(s.parts) > 8 { // many files merge at once: smaller buffers
		size = 64 << 10
	}
	return &partReader{f: f, br: bufio.NewReaderSize(f, size), disp: p.disp, sends: newOrder()}, nil
}

// partReader reads one part, and in send order through next.
type partReader struct {
	f     *os.File
	br    *bufio.Reader
	disp  int64
	sends *order // the sends read so far, for their mark
	seq   int64  // the place in the file of the next record read
	eof   bool
	// pend is the reorder buffer: records read and not yet handed on, by
	// send (Key), then place in the file (Tie).
	pend heap.Heap[Record]
	cur  Record // the record next hands on
}

// read returns the next record in file order.
func (p *partReader) read() (Record, bool, error) {
	var r Record
	ok, err := p.readInto(&r)
	return r, ok, err
}

// readInto reads the next record in file order into r. It decodes the
// record where the buffered reader holds it (Peek, then Discard) rather
// than copying it out first: every pass reads every record.
func (p *partReader) readInto(r *Record) (bool, error) {
	b, err := p.br.Peek(spillRecord)
	if len(b) == spillRecord {
		*r = getRecord(b)
		_, _ = p.br.Discard(spillRecord) // what Peek returned is buffered
		return true, nil
	}
	switch {
	case len(b) == 0 && errors.Is(err, io.EOF):
		return false, nil
	case errors.Is(err, io.EOF): // a part of a record, as io.ReadFull says
		err = io.ErrUnexpectedEOF
	}
	return false, fmt.Errorf("reading the analysis's temporary copy %s: %w", p.f.Name(), err)
}

// next moves cur to the next record in send order. A record can go once
// the mark of the sends read (see order.mark, which only rises) is disp or
// more past it: every record read after it was at most disp behind a mark
// at least as late, so none can have been sent before it. The buffer holds
// the records of disp (at most MaxReorder) behind the mark, and the few
// ahead of it.
func (p *partReader) next() (bool, error) {
	if p.disp == 0 { // in send order already
		ok, err := p.readInto(&p.cur)
		return ok, err
	}
	for {
		if p.pend.Len() > 0 {
			if s := p.pend.Min().Key; p.eof || behind(s, p.sends.mark()) >= uint64(p.disp) && s < p.sends.mark() {
				p.cur = p.pend.Pop().Val
				return true, nil
			}
		}
		if p.eof {
			return false, nil
		}
		r, ok, err := p.read()
		if err != nil {
			return false, err
		}
		if !ok {
			p.eof = true
			continue
		}
		p.sends.push(r.Start)
		p.pend.Push(heap.Item[Record]{Key: r.Start, Tie: p.seq, Val: r})
		p.seq++
	}
}

func putRecord(b []byte, r *Record) {
	binary.LittleEndian.PutUint64(b[0:], uint64(r.Start))
	binary.LittleEndian.PutUint64(b[8:], uint64(r.End))
	binary.LittleEndian.PutUint16(b[16:], r.Code)
	binary.LittleEndian.PutUint32(b[18:], r.label)
	binary.LittleEndian.PutUint32(b[22:], r.answer)
	b[26] = r.flags
}

func getRecord(b []byte) Record {
	return Record{Start: int64(binary.LittleEndian.Uint64(b[0:])), End: int64(binary.LittleEndian.Uint64(b[8:])),
		Code: binary.LittleEndian.Uint16(b[16:]), label: binary.LittleEndian.Uint32(b[18:]), answer: binary.LittleEndian.Uint32(b[22:]), flags: b[26]}
}
