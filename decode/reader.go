package decode

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// The public face of reading (Options, Input, Meta, Read) and the reader
// behind it: run folders and results files opened, and each stream handed
// to a decoder (format.go, gobread.go) with bounded buffers.

// Options say what a reader keeps of each result beyond its times, status
// and labels. The zero value keeps no body and judges nothing.
type Options struct {
	// KeepBody reports whether the bodies of a stream's results are kept
	// (capped at MaxKeptBody): the failure-table probes', which the
	// contract check reads.
	KeepBody func(stream string) bool
	// Judge, when set, judges a refusal's body (a 429's) as it is read,
	// and the record keeps the verdict instead of the body (see
	// Record.Judged): a target whose every refusal differs costs nothing.
	Judge func(surface string, body []byte) bool
	// RefusedWith, when set, is the status a surface's refusals come with
	// (0: 429): an answer of that status is its refusal, and a 429 of a
	// surface refused with another status is not (see Record.Refused).
	RefusedWith func(surface string) uint16
	// Sequential decodes gob files on one core with Vegeta's decoder alone
	// (benchmarks compare it with the default, every core).
	Sequential bool
}

// Input is the results of one or more runs, merged by send time, in
// memory, with the tables their records index.
type Input struct {
	Records []Record
	Meta
	tab *Tables
}

// NewInput returns an empty input with tables of its own, for records made
// in memory (see Add).
func NewInput() *Input { return &Input{tab: newTables()} }

// Tables returns the tables the input's records index.
func (in *Input) Tables() *Tables { return in.tab }

// Add appends a record made in memory, with its own copy of l and a (nil:
// no answer). Records must be added in send order.
func (in *Input) Add(l archive.Labels, start, end int64, code uint16, a *Answer) *Record {
	in.Records = append(in.Records, in.tab.NewRecord(l, start, end, code, a))
	return &in.Records[len(in.Records)-1]
}

// Each implements Source.
func (in *Input) Each(fn func(*Record)) error { return in.InOrder(fn) }

// InOrder implements Source: the records are kept in send order.
func (in *Input) InOrder(fn func(*Record)) error {
	for i := range in.Records {
		fn(&in.Records[i])
	}
	return nil
}

// Info implements Source.
func (in *Input) Info() *Meta { return &in.Meta }

// Meta is what an input says of itself besides its records.
type Meta struct {
	// Runs holds run.json of each run folder read, when present.
	Runs []archive.RunInfo
	// Files are the results files read.
	Files []string
	// Truncated says, per file that ended mid-record, how many complete
	// records were read before the break.
	Truncated []string
	// Notes say what a reader left out or folded to keep its memory
	// bounded (see MaxLabels, MaxSources, MaxAnswers, MaxReorder), per file.
	Notes []string
	// Samples are the first few answers (maxSamples) of each label, status
	// and judgement, in file order.
	Samples []Sample
}

// Read reads run folders (holding results.bin and run.json) or results
// files in any format Vegeta writes (gob, JSON, CSV), and merges them by
// send time, in memory. Open does the same on disk.
func Read(paths []string, opts Options) (*Input, error) {
	in := NewInput()
	rd := &reader{tab: in.tab, opts: opts}
	err := rd.readInputs(paths, &in.Meta, func(_ string, read func(add func(Record)) (int64, error)) error {
		_, err := read(func(r Record) { in.Records = append(in.Records, r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	byStart := func(a, b Record) int { return cmp.Compare(a.Start, b.Start) }
	if !slices.IsSortedFunc(in.Records, byStart) {
		slices.SortStableFunc(in.Records, byStart)
	}
	return in, nil
}

// reader reads results files into records of one set of tables.
type reader struct {
	tab  *Tables
	opts Options
	// The samples taken so far, and how many of each key (used from the
	// goroutine that hands records over, in file order).
	samples []Sample
	sampled map[sampleKey]int
	// How many results had their labels folded into OtherSources, and how
	// many lost their answer past MaxAnswers (from every goroutine).
	folded, dropped atomic.Int64
	mu              sync.Mutex
	sources         map[string]struct{} // the sources kept, at most MaxSources
}

// readInputs reads each path, a run folder or a results file, into meta
// (run.json, the file, whether it was truncated), and hands its results
// file to each, whose read hands every record to add in file order.
//
// read returns how far behind, in send time, a kept record was written
// (see order): the depth of the reorder buffer that puts the file in send
// order. Stragglers, further behind than MaxReorder, are not handed to add,
// and are counted in meta.Notes.
func (rd *reader) readInputs(paths []string, meta *Meta, each func(file string, read func(add func(Record)) (int64, error)) error) error {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		file := p
		var run *archive.RunInfo
		switch {
		case fi.IsDir():
			file = filepath.Join(p, archive.ResultsFile)
			if run, err = archive.ReadRunInfo(p); err != nil {
				return err
			}
		case filepath.Base(p) == archive.ResultsFile:
			// a run folder's results.bin named alone: its run.json is beside it
			if run, err = archive.ReadRunInfo(filepath.Dir(p)); err != nil {
				return err
			}
		}
		err = each(file, func(add func(Record)) (int64, error) {
			o := newOrder()
			folded, dropped := rd.folded.Load(), rd.dropped.Load()
			n, truncated, err := rd.readFile(file, func(r Record) {
				if o.keep(r.Start) {
					add(r)
				}
			})
			switch {
			case err != nil:
				return 0, err
			case n == 0:
				return 0, fmt.Errorf("%s: no results", file)
			case truncated:
				meta.Truncated = append(meta.Truncated, fmt.Sprintf("%s: ends mid-record; read the %d complete records before it", file, n))
			}
			if note := o.note(file); note != "" {
				meta.Notes = append(meta.Notes, note)
			}
			if k := rd.folded.Load() - folded; k > 0 {
				meta.Notes = append(meta.Notes, fmt.Sprintf("%s: %d results had labels past the %d distinct labels, %d distinct sources or %d bytes a reader keeps: counted under source %q, without their fleet tags", file, k, maxLabels, maxSources, maxLabelLen, OtherSources))
			}
			if k := rd.dropped.Load() - dropped; k > 0 {
				meta.Notes = append(meta.Notes, fmt.Sprintf("%s: %d results had answers past the %d distinct answers a reader keeps: only their status was kept", file, k, maxAnswers))
			}
			return o.depth(), nil
		})
		if err != nil {
			return err
		}
		meta.Samples = append(meta.Samples, rd.samples...)
		rd.samples, rd.sampled = nil, nil
		meta.Files = append(meta.Files, file)
		if run != nil {
			meta.Runs = append(meta.Runs, *run)
		}
	}
	return nil
}

// readFile hands every record of a results file to add, in file order,
// and returns how many there were and whether the file ended mid-record.
// The file may be a pipe or a device (/dev/stdin, a link to /dev/zero):
// nothing read from it is trusted with more than MaxResult bytes.
func (rd *reader) readFile(path string, add func(Record)) (int, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var size int64 // 0: unknown (a pipe, a device)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return rd.readStream(f, size, path, add)
}

// readStream reads the results file path from r, which holds size bytes
// (0: unknown), as readFile does.
func (rd *reader) readStream(r io.Reader, size int64, path string, add func(Record)) (int, bool, error) {
	big := bufio.NewReaderSize(smallReads{r}, maxResult+readAhead) // room to peek at a whole result
	format := detect(big)
	// Only detect peeks at a whole result: gob messages are read in
	// pieces, and the text decoders keep buffers of their own. What big
	// holds goes on to a small reader, so that big's buffer does not
	// stay live through the read and raise the garbage collector's goal.
	head, _ := big.Peek(big.Buffered())
	br := bufio.NewReaderSize(&handOff{head: bytes.Clone(head), big: big, r: smallReads{r}}, smallRead)
	if format == formatGob && !rd.opts.Sequential {
		return rd.readGob(br, path, size, add)
	}
	return rd.readSequential(br, format, path, size, add)
}

// smallReads caps each read from r at smallRead bytes. bufio fills its
// whole buffer on every read it makes, and the buffer readStream needs
// (MaxResult, to peek at a whole result) would then be touched, and held
// in RSS, in full; capped, only its first smallRead bytes are, unless a
// result that large is peeked at.
type smallReads struct{ r io.Reader }

const smallRead = 256 << 10

func (s smallReads) Read(p []byte) (int, error) {
	if len(p) > smallRead {
		p = p[:smallRead]
	}
	return s.r.Read(p)
}

// handOff reads head, the bytes a bufio.Reader big held, then the error big
// held after them (if any), then r, which big was reading: it is big
// read on, without big's buffer.
type handOff struct {
	head []byte
	big  *bufio.Reader
	r    io.Reader
}

func (h *handOff) Read(p []byte) (int, error) {
	if len(h.head) > 0 {
		n := copy(p, h.head)
		h.head = h.head[n:]
		return n, nil
	}
	if h.big != nil {
		h.head = nil
		// Nothing is buffered: a read of nothing returns big's error.
		_, err := h.big.Read(nil)
		h.big = nil
		if err != nil {
			return 0, err
		}
	}
	return h.r.Read(p)
}
