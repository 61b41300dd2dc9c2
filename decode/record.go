package decode

import (
	"strings"
	"sync"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// Record is what a reader keeps of one result: 32 bytes and no pointers, so
// that a million results fit in 32 MB that the garbage collector never has
// to scan. What many records share (labels, answers) lives once in the
// Tables of the reader that made them, and a record holds their indexes:
// look them up with that reader's Tables.
type Record struct {
	// Start is the send start (Unix ns), End the arrival of the response.
	Start, End int64
	Code       uint16
	label      uint32 // index in Tables.labels
	answer     uint32 // index in Tables.answers; 0: none kept
	flags      uint8  // judged, judgedBad, typed, typedJSON, ownStatus, refusal
}

// A refusal read from a file has its body judged when it is read (see
// Options.Judge), so that a body that differs on every refusal (a request
// id in it) is not kept for each.
const (
	judged    uint8 = 1 << iota // the refusal's body was judged when read
	judgedBad                   // and the judge said no
	typed                       // the answer had a Content-Type
	typedJSON                   // and it was JSON (or an event stream)
	ownStatus                   // its surface refuses with another status than 429 (Options.RefusedWith)
	refusal                     // and the answer had that status
)

// Latency returns the record's latency.
func (r *Record) Latency() time.Duration { return time.Duration(r.End - r.Start) }

// Admitted reports whether the result was an admission: only a 2xx is.
func (r *Record) Admitted() bool { return r.Code >= 200 && r.Code <= 299 }

// Refused reports whether the result was a refusal: a 429, or an answer
// of the status its surface refuses with when it was read with another
// (Options.RefusedWith; then a 429 is not).
func (r *Record) Refused() bool {
	if r.flags&ownStatus != 0 {
		return r.flags&refusal != 0
	}
	return r.Code == 429
}

// LabelID returns the index of the record's labels in its Tables: records
// with the same labels have the same index.
func (r *Record) LabelID() uint32 { return r.label }

// Judged returns the verdict of Options.Judge on the record's body, and
// whether it was judged when read (only refusals read from a file are).
func (r *Record) Judged() (ok, known bool) {
	return r.flags&judgedBad == 0, r.flags&judged != 0
}

// JSON reports whether the answer's Content-Type was JSON (application/json
// or a +json type) or an event stream (an MCP answer in SSE form), and
// whether the answer had a Content-Type at all.
func (r *Record) JSON() (json, known bool) {
	return r.flags&typedJSON != 0, r.flags&typed != 0
}

// SetJSON records the answer's Content-Type kind (for records made in
// memory; a reader sets it from the answer's header).
func (r *Record) SetJSON(json bool) {
	r.flags |= typed
	if json {
		r.flags |= typedJSON
	} else {
		r.flags &^= typedJSON
	}
}

// isJSONType reports whether a Content-Type is JSON or an event stream.
func isJSONType(contentType string) bool {
	ct, _, _ := strings.Cut(strings.ToLower(contentType), ";")
	ct = strings.TrimSpace(ct)
	return ct == "application/json" || strings.HasSuffix(ct, "+json") || ct == "text/event-stream"
}

// Answer is what a record keeps of its response besides the status. Read
// from a file, it keeps only what the analysis reports, so that a few
// distinct answers serve a million results.
type Answer struct {
	// Body is kept (capped at MaxKeptBody) for the streams Options.KeepBody
	// names; from a file, a refusal's is judged on reading rather than
	// kept.
	Body []byte
	// Allow, RetryAfter and RateLimit are response headers reported beside
	// what was observed; from a file, Retry-After and RateLimit only of
	// refusals, and only while they are few.
	Allow, RetryAfter, RateLimit string
	// Err is the transport error of a result without an answer (code 0);
	// from a file, only its kind (see ErrKind).
	Err string
	// ContentType is the answer's Content-Type, kept with its Body (so
	// that an event stream is read as one, and a body that is not JSON
	// is named by its type).
	ContentType string
	// Advert is the rate-limit fields the answer advertised (see
	// advertFields), one "Name: value" line each in that order, each
	// value cut to maxText bytes and all to MaxAdvert; from a file, of
	// every answer while distinct answers are few (see Advertised).
	Advert string
}

// Sample is what came back for one result: the first few results of each
// label, status and judgement of a file are sampled (Meta.Samples), so
// that a report can say what a target answered instead of the contract's
// answer without keeping every body.
type Sample struct {
	archive.Labels
	Code uint16
	// Refused is set on a refusal Options.Judge refused.
	Refused bool
	// Path is the request's path (without its query, which may carry a
	// credential); ContentType the answer's; Body its first MaxSample
	// bytes.
	Path, ContentType string
	Body              []byte
}

// MaxSample caps the bytes of body a sample keeps.
const MaxSample = 64

// maxKeptBody caps the bytes of a body a record keeps.
const maxKeptBody = 1024

// Tables hold the labels and answers the records of one reader index.
// Entries never move, so an index stays valid and reading one needs no
// lock: a record's index reaches a reader after the entry was written.
// Tables are safe for concurrent use; make them with NewTables.
type Tables struct {
	labels  table[archive.Labels]
	answers table[Answer]
}

// newTables returns empty tables. Index 0 of each is blank, so that a zero
// Record reads as unlabelled with no answer.
func newTables() *Tables {
	t := &Tables{}
	t.labels.add(archive.Labels{})
	t.answers.add(Answer{})
	return t
}

// Labels returns the labels of r.
func (t *Tables) Labels(r *Record) *archive.Labels { return t.labels.at(r.label) }

// Answer returns the rest of r's answer; nil when none was kept.
func (t *Tables) Answer(r *Record) *Answer {
	if r.answer == 0 {
		return nil
	}
	return t.answers.at(r.answer)
}

// ContentType returns the Content-Type kept with r's body, if any.
func (t *Tables) ContentType(r *Record) string {
	if a := t.Answer(r); a != nil {
		return a.ContentType
	}
	return ""
}

// Body returns the body r kept, if any.
func (t *Tables) Body(r *Record) []byte {
	if a := t.Answer(r); a != nil {
		return a.Body
	}
	return nil
}

// Err returns r's transport error, if any.
func (t *Tables) Err(r *Record) string {
	if a := t.Answer(r); a != nil {
		return a.Err
	}
	return ""
}

// Header returns the Allow, Retry-After and RateLimit headers r kept.
func (t *Tables) Header(r *Record) (allow, retryAfter, rateLimit string) {
	if a := t.Answer(r); a != nil {
		return a.Allow, a.RetryAfter, a.RateLimit
	}
	return "", "", ""
}

// Advertised returns the rate-limit fields r's answer advertised, as
// Answer.Advert holds them (empty: none, or not kept).
func (t *Tables) Advertised(r *Record) string {
	if a := t.Answer(r); a != nil {
		return a.Advert
	}
	return ""
}

// NewRecord makes a record with its own copy of l and a (nil: no answer),
// for results that do not come from a file.
func (t *Tables) NewRecord(l archive.Labels, start, end int64, code uint16, a *Answer) Record {
	r := Record{Start: start, End: end, Code: code, label: t.labels.add(l)}
	if a != nil {
		r.answer = t.answers.add(*a)
	}
	return r
}

// SetAnswer replaces r's answer (nil: none).
func (t *Tables) SetAnswer(r *Record, a *Answer) {
	r.answer = 0
	if a != nil {
		r.answer = t.answers.add(*a)
	}
}

// Len returns how many distinct labels and answers the tables hold.
func (t *Tables) Len() (labels, answers int) {
	t.labels.mu.Lock()
	defer t.labels.mu.Unlock()
	t.answers.mu.Lock()
	defer t.answers.mu.Unlock()
	return int(t.labels.n), int(t.answers.n)
}

// table is an append-only list. Its chunks are allocated as it grows.
type table[T any] struct {
	mu     sync.Mutex
	n      uint32
	chunks [1 << 16]*[1 << 12]T
}

// maxTable is how many entries a table holds.
const maxTable = 1 << 28

// add appends v and returns its index. A table that is full returns the
// index of its last entry: readers cap what they add well below it.
func (t *table[T]) add(v T) uint32 {
	if i, ok := t.addUnder(v, maxTable); ok {
		return i
	}
	return maxTable - 1
}

// addUnder appends v only while the table holds fewer than limit entries,
// and returns its index and whether it did: the check and the append are
// one step, so interners working in parallel cannot overshoot limit.
func (t *table[T]) addUnder(v T, limit int) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.n
	if int(i) >= limit {
		return 0, false
	}
	c := t.chunks[i>>12]
	if c == nil {
		c = new([1 << 12]T)
		t.chunks[i>>12] = c
	}
	c[i&(1<<12-1)] = v
	t.n++
	return i, true
}

// len returns how many entries the table holds.
func (t *table[T]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int(t.n)
}

// at returns the entry at index i.
func (t *table[T]) at(i uint32) *T { return &t.chunks[i>>12][i&(1<<12-1)] }
