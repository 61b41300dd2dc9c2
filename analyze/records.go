// Package analyze judges Vegeta results against a documented rate limit:
// the uncertainty-interval model of each (surface, source) group, the
// limiter family that fits, the checks of a verdict and a latency summary.
// It judges results, never how they were made: it does not import the
// attack engine or the reference target.
package analyze

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Surfaces of the contract.
const (
	REST = "rest"
	MCP  = "mcp"
)

// Record is what the analyzer keeps of one result: 32 bytes and no
// pointers, so that a million results fit in 32 MB that the garbage
// collector never has to scan. What many records share (labels, answers)
// lives once in the package's tables, and a record holds its indexes.
type Record struct {
	// Start is the send start (Unix ns), End the arrival of the response.
	Start, End int64
	Code       uint16
	label      uint32 // index in labelTab
	answer     uint32 // index in answerTab; 0: none kept
	flags      uint8  // shapeKnown, shapeBad
}

// A refusal read from a file has its body judged when it is read (see
// shapeOK), so that a body that differs on every refusal (a request id in
// it) is not kept for each.
const (
	shapeKnown uint8 = 1 << iota // the refusal's shape was judged when read
	shapeBad                     // and it lacked the surface's documented error
)

// Labels say where a record belongs: what its Vegeta attack label (or its
// URL) names.
type Labels struct {
	Surface, Source, Stream string
	// Fleet is set on a fleet client's attempt (labels client=, attempt=).
	Fleet *FleetTag
}

// NewRecord makes a record with its own copy of labels and answer (a nil
// answer: none), for results that do not come from a file.
func NewRecord(l Labels, start, end int64, code uint16, a *Answer) Record {
	r := Record{Start: start, End: end, Code: code, label: labelTab.add(l)}
	if a != nil {
		r.answer = answerTab.add(*a)
	}
	return r
}

// Surface, Source, Stream and Fleet return the record's labels.
func (r *Record) Surface() string  { return labelTab.at(r.label).Surface }
func (r *Record) Source() string   { return labelTab.at(r.label).Source }
func (r *Record) Stream() string   { return labelTab.at(r.label).Stream }
func (r *Record) Fleet() *FleetTag { return labelTab.at(r.label).Fleet }

// Answer returns the rest of the record's answer; nil when none was kept.
func (r *Record) Answer() *Answer {
	if r.answer == 0 {
		return nil
	}
	return answerTab.at(r.answer)
}

// SetAnswer replaces the record's answer (nil: none).
func (r *Record) SetAnswer(a *Answer) {
	r.answer = 0
	if a != nil {
		r.answer = answerTab.add(*a)
	}
}

// table is an append-only list shared by every reader and decoder. Its
// entries never move, so an index stays valid and reading one needs no
// lock: a record's index reaches a reader after the entry was written.
type table[T any] struct {
	mu     sync.Mutex
	n      uint32
	chunks [1 << 16]*[1 << 12]T
}

// add appends v and returns its index.
func (t *table[T]) add(v T) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.n
	if int(i>>12) == len(t.chunks) {
		panic("analyze: more than 2^28 distinct labels or answers")
	}
	c := t.chunks[i>>12]
	if c == nil {
		c = new([1 << 12]T)
		t.chunks[i>>12] = c
	}
	c[i&(1<<12-1)] = v
	t.n++
	return i
}

// at returns the entry at index i.
func (t *table[T]) at(i uint32) *T { return &t.chunks[i>>12][i&(1<<12-1)] }

// The tables of labels and answers. Index 0 of each is blank, so that a
// zero Record reads as unlabelled with no answer.
var (
	labelTab  table[Labels]
	answerTab table[Answer]
	_         = labelTab.add(Labels{})
	_         = answerTab.add(Answer{})
)

// Answer is what a record keeps of its response besides the status. Read
// from a file, it keeps only what the analysis reports, so that a few
// distinct answers serve a million results.
type Answer struct {
	// Body is kept (capped) for contract probes; from a file, a refusal's
	// is judged on reading (see Record.shapeOK) rather than kept.
	Body []byte
	// Allow, RetryAfter and RateLimit are response headers reported beside
	// what was observed; from a file, Retry-After and RateLimit only of
	// refusals, and only while they are few.
	Allow, RetryAfter, RateLimit string
	// Err is the transport error of a result without an answer (code 0);
	// from a file, only its kind (see errKind).
	Err string
}

// Body returns the kept response body, if any.
func (r *Record) Body() []byte {
	if a := r.Answer(); a != nil {
		return a.Body
	}
	return nil
}

// shapeOK reports whether a refusal carries the surface's documented
// error, when that was judged on reading (known).
func (r *Record) shapeOK() (ok, known bool) {
	return r.flags&shapeBad == 0, r.flags&shapeKnown != 0
}

// Err returns the transport error, if any.
func (r *Record) Err() string {
	if a := r.Answer(); a != nil {
		return a.Err
	}
	return ""
}

// Header returns the answer's Allow, Retry-After and RateLimit headers.
func (r *Record) Header() (allow, retryAfter, rateLimit string) {
	if a := r.Answer(); a != nil {
		return a.Allow, a.RetryAfter, a.RateLimit
	}
	return "", "", ""
}

// Latency returns the record's latency.
func (r *Record) Latency() time.Duration { return time.Duration(r.End - r.Start) }

// Input is the results of one or more runs, merged by send time, in
// memory.
type Input struct {
	Records []Record
	Meta
}

// RunInfo is the part of an archive's run.json the analyzer uses.
type RunInfo struct {
	Target   string    `json:"target"`
	WindowMS int64     `json:"window_ms"`
	Start    time.Time `json:"start"`
	Policy   struct {
		Surface string `json:"surface"`
		Limit   int    `json:"limit"`
	} `json:"policy"`
	Profile string `json:"profile"`
	// Shard is "i/n" for shard i of an attack split over n machines;
	// StartAt the instant the shards agreed to start at.
	Shard   string     `json:"shard"`
	StartAt *time.Time `json:"start_at"`
	Dir     string     `json:"-"`
}

const keepBody = 1024

// Read reads run folders (holding results.bin and run.json) or results
// files in any format Vegeta writes (gob, JSON, CSV), and merges them by
// send time, in memory. Open does the same on disk.
func Read(paths []string) (*Input, error) {
	in := &Input{}
	err := readInputs(paths, &in.Meta, func(_ string, read func(add func(Record)) error) error {
		return read(func(r Record) { in.Records = append(in.Records, r) })
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

// readInputs reads each path, a run folder or a results file, into meta
// (run.json, the file, whether it was truncated), and hands its results
// file to each, whose read hands every record to add in file order.
func readInputs(paths []string, meta *Meta, each func(file string, read func(add func(Record)) error) error) error {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		file := p
		var run *RunInfo
		if fi.IsDir() {
			file = filepath.Join(p, "results.bin")
			if b, err := os.ReadFile(filepath.Join(p, "run.json")); err == nil {
				run = &RunInfo{Dir: p}
				if err := json.Unmarshal(b, run); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(p, "run.json"), err)
				}
			}
		}
		err = each(file, func(add func(Record)) error {
			n, truncated, err := readFile(file, add)
			switch {
			case err != nil:
				return err
			case n == 0:
				return fmt.Errorf("%s: no results", file)
			case truncated:
				meta.Truncated = append(meta.Truncated, fmt.Sprintf("%s: ends mid-record; read the %d complete records before it", file, n))
			}
			return nil
		})
		if err != nil {
			return err
		}
		meta.Files = append(meta.Files, file)
		if run != nil {
			meta.Runs = append(meta.Runs, *run)
		}
	}
	return nil
}

// readFile hands every record of a results file to add, in file order,
// and returns how many there were and whether the file ended mid-record.
func readFile(path string, add func(Record)) (int, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	br := bufio.NewReaderSize(f, 1<<20)
	read := readSequential
	if parallelGob && isGob(br) {
		read = readGob
	}
	return read(br, path, size, add)
}

// readSequential reads a results file in any format Vegeta writes with
// Vegeta's decoder, as readGob does (whose signature it shares).
func readSequential(br *bufio.Reader, path string, _ int64, add func(Record)) (int, bool, error) {
	dec := vegeta.DecoderFor(br)
	if dec == nil {
		return 0, false, fmt.Errorf("%s: not a Vegeta results file (gob, JSON or CSV)", path)
	}
	n := 0
	it := newInterner()
	for {
		var r vegeta.Result
		err := dec.Decode(&r)
		if err == io.EOF {
			return n, false, nil
		}
		if err != nil {
			if n > 0 && (errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected EOF")) {
				return n, true, nil
			}
			return n, false, fmt.Errorf("%s: record %d: %w", path, n+1, err)
		}
		n++
		res := fromVegeta(&r)
		add(it.record(&res))
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
	// The first values of the Allow, Retry-After, RateLimit and
	// RateLimit-Policy response headers.
	Allow, RetryAfter, RateLimit, RateLimitPolicy string
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
	switch key {
	case "Allow":
		r.Allow = value
	case "Retry-After":
		r.RetryAfter = value
	case "Ratelimit":
		r.RateLimit = value
	case "Ratelimit-Policy":
		r.RateLimitPolicy = value
	}
}

// record keeps what the analyzer needs of a result. Labels are parsed
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
		it.key = append(append(append(it.key[:0], r.Attack...), 0), surfaceOf(r.URL)...)
		key = view(it.key)
	}
	id, ok := it.labels[key]
	if !ok {
		var l Labels
		for _, f := range strings.Fields(r.Attack) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "surface":
				l.Surface = strings.Clone(v)
			case "source":
				l.Source = strings.Clone(v)
			case "stream":
				l.Stream = strings.Clone(v)
			}
		}
		if l.Surface == "" {
			l.Surface = surfaceOf(r.URL)
		}
		if l.Source == "" {
			l.Source = "default"
		}
		l.Fleet = parseFleetTag(r.Attack)
		id = labelTab.add(l)
		it.labels[strings.Clone(key)] = id
	}
	rec.label = id
	l := labelTab.at(id)
	var a Answer
	if isContractStream(l.Stream) {
		a.Body = r.Body[:min(len(r.Body), keepBody)]
	}
	if r.Code == 429 {
		rec.flags = shapeKnown
		if !it.shape(l.Surface, r.Body) {
			rec.flags |= shapeBad
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
		a.Err = errKind(r.Error)
	}
	a.Allow = r.Allow
	if len(a.Body) > 0 || a.Err != "" || a.Allow != "" || a.RetryAfter != "" || a.RateLimit != "" {
		rec.answer = it.answer(a)
	}
	return rec
}

// shape judges a refusal's body (see shapeOK), remembering the verdicts of
// the first bodies seen.
func (it *interner) shape(surface string, body []byte) bool {
	b := body[:min(len(body), keepBody)]
	memo := it.shapes[surface == MCP]
	if ok, seen := memo[view(b)]; seen {
		return ok
	}
	ok := shapeOK(surface, b)
	if len(memo) < 1024 {
		memo[string(b)] = ok
	}
	return ok
}

// parallelGob says whether gob files are decoded on every core (the
// benchmark turns it off to compare).
var parallelGob = true

// interner shares the few distinct labels and answers of a file: each is
// parsed and copied once, into the package's tables.
type interner struct {
	key     []byte                   // scratch for a label's key
	labels  map[string]uint32        // attack label (and surface) -> labelTab index
	shapes  map[bool]map[string]bool // refusal body -> shapeOK, for REST (false) and MCP (true)
	answers map[answerKey]uint32
	bodies  map[string][]byte
	layouts map[string]*resultLayout // by a stream's type definitions
}

type answerKey struct{ body, allow, retryAfter, rateLimit, err string }

// answer returns the index of a's copy in answerTab (a's fields may alias
// the decoded result, which it does not keep). Bodies are shared on their
// own too, for targets whose headers (a remaining count, a reset time) make
// every answer differ.
//
// Response headers that change with every answer (a remaining count, a
// reset time) would make every answer distinct: past 4096 distinct ones,
// new answers drop them (the report names only the first few anyway).
func (it *interner) answer(a Answer) uint32 {
	k := answerKey{view(a.Body), a.Allow, a.RetryAfter, a.RateLimit, a.Err}
	if id, ok := it.answers[k]; ok {
		return id
	}
	if len(it.answers) >= 4096 && (a.RetryAfter != "" || a.RateLimit != "") {
		a.RetryAfter, a.RateLimit = "", ""
		k.retryAfter, k.rateLimit = "", ""
		if id, ok := it.answers[k]; ok {
			return id
		}
	}
	body, ok := it.bodies[view(a.Body)]
	if !ok {
		body = bytes.Clone(a.Body)
		if len(it.bodies) < 1024 {
			it.bodies[string(body)] = body
		}
	}
	v := Answer{Body: body, Allow: strings.Clone(a.Allow), RetryAfter: strings.Clone(a.RetryAfter),
		RateLimit: strings.Clone(a.RateLimit), Err: strings.Clone(a.Err)}
	id := answerTab.add(v)
	// Kept even past 4096: without the headers, answers differ only by
	// contract probes' bodies, error kinds and Allow, which are few.
	it.answers[answerKey{string(v.Body), v.Allow, v.RetryAfter, v.RateLimit, v.Err}] = id
	return id
}

// newInterner returns an empty interner.
func newInterner() *interner {
	return &interner{labels: map[string]uint32{}, answers: map[answerKey]uint32{}, bodies: map[string][]byte{}, layouts: map[string]*resultLayout{},
		shapes: map[bool]map[string]bool{false: {}, true: {}}}
}

// surfaceOf infers the surface of a result from its URL, for results files
// written without ratecheck's labels (the Vegeta CLI's, say).
// It reads the path without parsing the whole URL: it runs for every such
// result.
func surfaceOf(raw string) string {
	path := raw
	if i := strings.Index(path, "://"); i >= 0 {
		path = path[i+3:]
		if j := strings.IndexByte(path, '/'); j >= 0 {
			path = path[j:]
		} else {
			path = "/"
		}
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	switch {
	case strings.HasPrefix(path, "/api/public/"):
		return REST
	case path == "/mcp":
		return MCP
	}
	return "other"
}
