package decode

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
)

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

// maxSamples is how many answers of each label, status and judgement a
// reader keeps a sample of.
const maxSamples = 3

// sampleKey says which samples are alike.
type sampleKey struct {
	surface, source, stream string
	code                    uint16
	refused                 bool
}

// keep adds samples taken in file order, up to maxSamples of each key and
// 4096 in all.
func (rd *reader) keep(ss []Sample) {
	if rd.sampled == nil {
		rd.sampled = map[sampleKey]int{}
	}
	for _, s := range ss {
		k := sampleKey{s.Surface, s.Source, s.Stream, s.Code, s.Refused}
		if n := rd.sampled[k]; n < maxSamples && len(rd.samples) < 4096 {
			rd.sampled[k] = n + 1
			rd.samples = append(rd.samples, s)
		}
	}
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

// The formats of results files Vegeta writes.
const (
	formatNone = iota
	formatGob
	formatJSON
	formatCSV
)

// detect tells the format of the results file br starts, by decoding its
// first result from what it peeks at: up to the end of its first line, and
// never more than MaxResult bytes (/dev/zero has no line end).
func detect(br *bufio.Reader) int {
	if isGob(br) {
		return formatGob
	}
	var head []byte
	for n := 64 << 10; ; n *= 2 {
		var err error
		head, err = br.Peek(min(n, br.Size()))
		if bytes.IndexByte(head, '\n') >= 0 || err != nil || n >= br.Size() {
			break
		}
	}
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	}
	if len(head) == 0 {
		return formatNone
	}
	if vegeta.NewJSONDecoder(bytes.NewReader(head))(&vegeta.Result{}) == nil {
		return formatJSON
	}
	if vegeta.NewCSVDecoder(bytes.NewReader(head))(&vegeta.Result{}) == nil {
		return formatCSV
	}
	return formatNone
}

// readSequential reads a results file of any format Vegeta writes with
// Vegeta's decoder, as readGob does. A gob stream reaches the decoder
// through gobFrames, whole messages whose lengths were checked; a JSON or
// CSV one through recordBound, which ends a record longer than MaxResult.
func (rd *reader) readSequential(br *bufio.Reader, format int, path string, size int64, add func(Record)) (int, bool, error) {
	var dec vegeta.Decoder
	bound := &recordBound{r: br}
	switch format {
	case formatGob:
		dec = vegeta.NewDecoder(newGobFrames(br, size))
	case formatJSON:
		dec = vegeta.NewJSONDecoder(bound)
	case formatCSV:
		dec = vegeta.NewCSVDecoder(bound)
	default:
		return 0, false, fmt.Errorf("%s: not a Vegeta results file (gob, JSON or CSV)", path)
	}
	n := 0
	it := rd.newInterner()
	for {
		r := newResult()
		err := dec.Decode(r)
		if err == io.EOF {
			return n, false, nil
		}
		if err != nil {
			var big *tooBigError
			switch {
			case bound.hit:
				err = errNoRecordEnd
			case errors.As(err, &big):
			case n > 0 && (errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected EOF")):
				return n, true, nil
			}
			return n, false, fmt.Errorf("%s: record %d: %w", path, n+1, err)
		}
		bound.next()
		n++
		res := fromVegeta(r)
		add(it.record(&res))
		rd.keep(it.takeSamples())
	}
}

// result is what the analyzer reads of a Vegeta result. Its strings and
// body may alias a decoder's buffer: record copies what it keeps.
type result struct {
	Attack, URL, Error string
	Body               []byte
	Code               uint16
	// Start is the timestamp in Unix nanoseconds.
	Start, Latency int64
	// The first values of the Allow, Retry-After, RateLimit,
	// RateLimit-Policy and Content-Type response headers.
	Allow, RetryAfter, RateLimit, RateLimitPolicy, ContentType string
	// Advertised holds the first value of each AdvertFields header, in
	// that order.
	Advertised [len(advertFields)]string
}

// fromVegeta reads a result Vegeta's decoder made.
func fromVegeta(v *vegeta.Result) result {
	r := result{Attack: v.Attack, URL: v.URL, Error: v.Error, Body: v.Body, Code: v.Code,
		Start: v.Timestamp.UnixNano(), Latency: int64(v.Latency)}
	for k, vs := range v.Headers {
		if len(vs) > 0 {
			r.header(k, vs[0])
		}
	}
	return r
}

// header keeps the value of a response header the analyzer reports, by its
// canonical name, as http.Header.Get finds it.
func (r *result) header(key, value string) {
	if i := advertIndex(key); i >= 0 {
		r.Advertised[i] = value
	}
	switch key {
	case "Allow":
		r.Allow = value
	case "Retry-After":
		r.RetryAfter = value
	case "Ratelimit":
		r.RateLimit = value
	case "Ratelimit-Policy":
		r.RateLimitPolicy = value
	case "Content-Type":
		r.ContentType = value
	}
}

// record keeps what the analysis needs of a result. Labels are parsed
// once per distinct label and URL and shared, so a million results hold a
// handful of strings.
func (it *interner) record(r *result) Record {
	rec := Record{Start: r.Start, End: r.Start + max(r.Latency, 0), Code: r.Code}
	if rec.End < rec.Start { // overflow
		rec.End = math.MaxInt64
	}
	labelled := strings.Contains(r.Attack, "surface=")
	key := r.Attack
	if !labelled { // the surface comes from the URL
		it.key = append(append(append(it.key[:0], r.Attack...), 0), archive.SurfaceOf(r.URL)...)
		key = view(it.key)
	}
	id, ok := it.labels[key]
	if !ok {
		id = it.newLabel(r, key, labelled)
	}
	rec.label = id
	l := it.tab.labels.at(id)
	if r.ContentType != "" {
		rec.SetJSON(isJSONType(r.ContentType))
	}
	var a Answer
	if it.opts.KeepBody != nil && it.keepBody(id, l.Stream) {
		a.Body = r.Body[:min(len(r.Body), maxKeptBody)]
		a.ContentType = r.ContentType
	}
	if r.Code == 429 {
		if it.opts.Judge != nil {
			rec.flags |= judged
			if !it.judge(l.Surface, r.Body) {
				rec.flags |= judgedBad
			}
		}
		a.RetryAfter = r.RetryAfter
		switch { // RateLimit, then RateLimit-Policy, space-separated
		case r.RateLimitPolicy == "":
			a.RateLimit = strings.TrimSpace(r.RateLimit)
		case r.RateLimit == "":
			a.RateLimit = strings.TrimSpace(r.RateLimitPolicy)
		default:
			a.RateLimit = strings.TrimSpace(r.RateLimit + " " + r.RateLimitPolicy)
		}
	}
	if r.Error != "" {
		a.Err = archive.ErrKind(r.Error)
	}
	a.Allow = r.Allow
	it.advert = appendAdvert(it.advert[:0], &r.Advertised)
	a.Advert = view(it.advert)
	if len(a.Body) > 0 || a.Err != "" || a.Allow != "" || a.RetryAfter != "" || a.RateLimit != "" || a.Advert != "" {
		rec.answer = it.answer(a)
	}
	if r.Code != 0 {
		refusedBad := rec.flags&judgedBad != 0
		// Keyed by the label's index rather than its strings (labels with
		// the same surface, source and stream but another fleet tag or
		// attack name count apart here): hashing an index costs far less,
		// and the batch's candidates are only a superset of what keep,
		// which counts by sampleKey in file order, would take from them.
		k := seenKey{id, r.Code, refusedBad}
		if n := it.seen[k]; n < maxSamples {
			it.seen[k] = n + 1
			it.pending = append(it.pending, Sample{Labels: archive.Labels{Surface: l.Surface, Source: l.Source, Stream: l.Stream}, Code: r.Code,
				Refused: refusedBad, Path: strings.Clone(cut(pathOf(r.URL), maxText)), ContentType: strings.Clone(cut(r.ContentType, maxText)),
				Body: bytes.Clone(sampleOf(r.ContentType, r.Body))})
		}
	}
	return rec
}

// newLabel adds the labels of a result whose key the interner has not
// seen, and returns their index. Past MaxLabels distinct labels in the
// tables or MaxSources distinct sources, or for a key longer than
// maxLabelLen, the result is folded: it
// keeps its surface and stream (cut to maxLabelLen, and at most maxFolded
// of them, then "other") under source OtherSources, without a fleet tag,
// and is counted in reader.folded.
func (it *interner) newLabel(r *result, key string, labelled bool) uint32 {
	if len(key) <= maxLabelLen && it.tab.labels.len() < maxLabels {
		attack := strings.Clone(r.Attack)
		l := archive.ParseLabel(attack, r.URL)
		if it.newSource(l.Source) {
			return it.fold(r)
		}
		k := attack // the key of a labelled result is its label: share it
		if !labelled {
			k = strings.Clone(key)
		}
		if id, ok := it.tab.labels.addUnder(l, maxLabels); ok {
			it.labels[k] = id
			return id
		}
	}
	return it.fold(r)
}

// newSource reports whether source is past the first MaxSources distinct
// sources of the reader's tables.
func (it *interner) newSource(source string) bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	if _, ok := it.sources[source]; ok {
		return false
	}
	if len(it.sources) >= maxSources {
		return true
	}
	if it.sources == nil {
		it.sources = map[string]struct{}{}
	}
	it.sources[source] = struct{}{}
	return false
}

// fold returns the index of the folded labels of r (see newLabel).
func (it *interner) fold(r *result) uint32 {
	it.folded.Add(1)
	l := archive.ParseLabel(r.Attack, r.URL)
	l.Surface, l.Stream = cut(l.Surface, maxLabelLen), cut(l.Stream, maxLabelLen)
	fk := l.Surface + "\x00" + l.Stream
	if id, ok := it.folds[fk]; ok {
		return id
	}
	if len(it.folds) >= maxFolded {
		l.Surface, l.Stream, fk = "other", "other", "other\x00other"
		if id, ok := it.folds[fk]; ok {
			return id
		}
	}
	id := it.tab.labels.add(archive.Labels{Surface: strings.Clone(l.Surface), Source: OtherSources, Stream: strings.Clone(l.Stream)})
	it.folds[fk] = id
	return id
}

// sampleOf is the first MaxSample bytes of an answer body, or of the
// JSON-RPC response an event stream carries: what a report quotes.
func sampleOf(contentType string, body []byte) []byte {
	if data, err := mcpwire.ResponseJSON(contentType, body, nil); err == nil {
		body = data
	}
	return body[:min(len(body), MaxSample)]
}

// takeSamples returns the samples taken since the last call, in the order
// taken, and starts afresh: a batch's candidates, which the reader keeps
// or drops in file order.
func (it *interner) takeSamples() []Sample {
	ss := it.pending
	it.pending = nil
	clear(it.seen)
	return ss
}

// pathOf returns the path of a URL, without its query (which may carry a
// credential) or fragment.
func pathOf(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		raw = raw[i+3:]
		if j := strings.IndexByte(raw, '/'); j >= 0 {
			raw = raw[j:]
		} else {
			raw = "/"
		}
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	return raw
}

// judge judges a refusal's body (see Options.Judge), remembering the
// verdicts of the first bodies seen.
func (it *interner) judge(surface string, body []byte) bool {
	b := body[:min(len(body), maxKeptBody)]
	memo := it.judged[surface]
	if memo == nil {
		memo = &judgeMemo{m: map[string]judgeEntry{}}
		it.judged[surface] = memo
	}
	// Refusals mostly repeat the body before them: compare with the last
	// body found in or added to the memo before hashing it.
	if memo.hasLast && memo.last.body == view(b) {
		return memo.last.ok
	}
	if e, seen := memo.m[view(b)]; seen {
		memo.last, memo.hasLast = e, true
		return e.ok
	}
	ok := it.opts.Judge(surface, b)
	if len(memo.m) < 1024 && it.judgedN < 4096 {
		e := judgeEntry{body: string(b), ok: ok}
		memo.m[e.body] = e
		memo.last, memo.hasLast = e, true
		it.judgedN++
	}
	return ok
}

// judgeMemo is a surface's verdicts on the first refusal bodies judged,
// and the last of them found or added.
type judgeMemo struct {
	m       map[string]judgeEntry
	last    judgeEntry
	hasLast bool
}

// judgeEntry is a body judged (its key in the memo) and the verdict.
type judgeEntry struct {
	body string
	ok   bool
}

// interner shares the few distinct labels and answers of a file: each is
// parsed and copied once, into the reader's tables. One goroutine uses it.
type interner struct {
	*reader
	key     []byte                // scratch for a label's key
	advert  []byte                // scratch for an answer's Advert
	labels  map[string]uint32     // attack label (and surface) -> labels index
	folds   map[string]uint32     // surface and stream of folded labels -> labels index
	judgedN int                   // bodies judged memos hold, every surface's
	judged  map[string]*judgeMemo // per surface, refusal body -> Judge's verdict
	answers map[answerKey]uint32
	bodies  map[string][]byte
	layouts map[string]*resultLayout // by a stream's type definitions
	// Samples taken since takeSamples, and how many of each key.
	pending []Sample
	seen    map[seenKey]int
	// keep says, by label index, whether the label's bodies are kept
	// (Options.KeepBody): 0 not asked yet, 1 no, 2 yes.
	keep []uint8
}

// seenKey counts a batch's sample candidates: a label, status and judgement.
type seenKey struct {
	label   uint32
	code    uint16
	refused bool
}

// keepBody returns Options.KeepBody of stream, the stream of label id,
// asking once per label: it runs for every result.
func (it *interner) keepBody(id uint32, stream string) bool {
	if int(id) >= len(it.keep) {
		it.keep = slices.Grow(it.keep, int(id)+1-len(it.keep))[:int(id)+1]
	}
	if it.keep[id] == 0 {
		it.keep[id] = 1
		if it.opts.KeepBody(stream) {
			it.keep[id] = 2
		}
	}
	return it.keep[id] == 2
}

type answerKey struct{ body, allow, retryAfter, rateLimit, err, contentType, advert string }

// answer returns the index of a's copy in the answers table (a's fields
// may alias the decoded result, which it does not keep). Bodies are shared
// on their own too.
//
// Response headers that change with every answer (a remaining count, a
// reset time) would make every answer distinct: past 4096 distinct ones,
// new answers drop them (the report names only the first few anyway).
// Headers and error kinds are cut to maxText bytes. Past MaxAnswers
// distinct answers in the tables, a new one is not kept (0: the record
// keeps only its status) and is counted in reader.dropped.
func (it *interner) answer(a Answer) uint32 {
	a.Allow, a.RetryAfter, a.RateLimit, a.Err = cut(a.Allow, maxText), cut(a.RetryAfter, maxText), cut(a.RateLimit, maxText), cut(a.Err, maxText)
	a.ContentType = cut(a.ContentType, maxText)
	k := answerKey{view(a.Body), a.Allow, a.RetryAfter, a.RateLimit, a.Err, a.ContentType, a.Advert}
	if id, ok := it.answers[k]; ok {
		return id
	}
	if len(it.answers) >= 4096 && (a.RetryAfter != "" || a.RateLimit != "" || a.Advert != "") {
		a.RetryAfter, a.RateLimit, a.Advert = "", "", ""
		k.retryAfter, k.rateLimit, k.advert = "", "", ""
		if id, ok := it.answers[k]; ok {
			return id
		}
	}
	if it.tab.answers.len() >= maxAnswers {
		it.dropped.Add(1)
		return 0
	}
	body, ok := it.bodies[view(a.Body)]
	if !ok {
		body = bytes.Clone(a.Body)
		if len(it.bodies) < 1024 {
			it.bodies[string(body)] = body
		}
	}
	v := Answer{Body: body, Allow: strings.Clone(a.Allow), RetryAfter: strings.Clone(a.RetryAfter),
		RateLimit: strings.Clone(a.RateLimit), Err: strings.Clone(a.Err), ContentType: strings.Clone(a.ContentType), Advert: strings.Clone(a.Advert)}
	id, ok := it.tab.answers.addUnder(v, maxAnswers)
	if !ok { // another interner filled the table meanwhile
		it.dropped.Add(1)
		return 0
	}
	// Kept even past 4096: without the headers, answers differ only by
	// contract probes' bodies, error kinds and Allow, which are few.
	it.answers[answerKey{string(v.Body), v.Allow, v.RetryAfter, v.RateLimit, v.Err, v.ContentType, v.Advert}] = id
	return id
}

// newInterner returns an empty interner of the reader's tables.
func (rd *reader) newInterner() *interner {
	return &interner{reader: rd, labels: map[string]uint32{}, folds: map[string]uint32{}, answers: map[answerKey]uint32{}, bodies: map[string][]byte{},
		layouts: map[string]*resultLayout{}, judged: map[string]*judgeMemo{}, seen: map[seenKey]int{}}
}
