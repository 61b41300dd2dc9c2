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
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Surfaces of the contract.
const (
	REST = "rest"
	MCP  = "mcp"
)

// Record is what the analyzer keeps of one result: 88 bytes, so that a
// million results fit in 88 MB.
type Record struct {
	Surface, Source, Stream string
	// Start is the send start (Unix ns), End the arrival of the response.
	Start, End int64
	Code       uint16
	// A is the rest of the answer (nil: none kept), shared by every record
	// whose answer reads the same, so a flood of refusals holds one.
	A *Answer
	// Fleet is set on a fleet client's attempt (labels client=, attempt=).
	Fleet *FleetTag
}

// Answer is what a record keeps of its response besides the status.
type Answer struct {
	// Body is kept (capped) only for refusals and contract probes.
	Body []byte
	// Allow, RetryAfter and RateLimit are response headers reported beside
	// what was observed.
	Allow, RetryAfter, RateLimit string
	// Err is the transport error of a result without an answer (code 0).
	Err string
}

// Body returns the kept response body, if any.
func (r *Record) Body() []byte {
	if r.A == nil {
		return nil
	}
	return r.A.Body
}

// Err returns the transport error, if any.
func (r *Record) Err() string {
	if r.A == nil {
		return ""
	}
	return r.A.Err
}

// Header returns the answer's Allow, Retry-After and RateLimit headers.
func (r *Record) Header() (allow, retryAfter, rateLimit string) {
	if r.A == nil {
		return "", "", ""
	}
	return r.A.Allow, r.A.RetryAfter, r.A.RateLimit
}

// Latency returns the record's latency.
func (r *Record) Latency() time.Duration { return time.Duration(r.End - r.Start) }

// Input is the results of one or more runs, merged by send time.
type Input struct {
	Records []Record
	// Runs holds run.json of each run folder read, when present.
	Runs []RunInfo
	// Files are the results files read.
	Files []string
	// Truncated says, per file that ended mid-record, how many complete
	// records were read before the break.
	Truncated []string
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
	Dir string `json:"-"`
}

const keepBody = 1024

// Read reads run folders (holding results.bin and run.json) or results
// files in any format Vegeta writes (gob, JSON, CSV), and merges them by
// send time.
func Read(paths []string) (*Input, error) {
	in := &Input{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		file := p
		if fi.IsDir() {
			file = filepath.Join(p, "results.bin")
			if b, err := os.ReadFile(filepath.Join(p, "run.json")); err == nil {
				var ri RunInfo
				if err := json.Unmarshal(b, &ri); err != nil {
					return nil, fmt.Errorf("%s: %w", filepath.Join(p, "run.json"), err)
				}
				ri.Dir = p
				in.Runs = append(in.Runs, ri)
			}
		}
		if err := in.readFile(file); err != nil {
			return nil, err
		}
	}
	byStart := func(a, b Record) int { return cmp.Compare(a.Start, b.Start) }
	if !slices.IsSortedFunc(in.Records, byStart) {
		slices.SortStableFunc(in.Records, byStart)
	}
	return in, nil
}

func (in *Input) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	in.Files = append(in.Files, path)
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	add := func(r Record) { in.Records = append(in.Records, r) }
	// grow makes room at once for the file's likely count, from the bytes
	// its first n results took, rather than doubling (and copying) a few
	// hundred megabytes as it goes.
	grow := func(n int, took int64) {
		if took > 0 {
			in.Records = slices.Grow(in.Records, int(size*int64(n)/took)*21/20)
		}
	}
	br := bufio.NewReaderSize(f, 1<<20)
	read := readSequential
	if parallelGob && isGob(br) {
		read = readGob
	}
	n, truncated, err := read(br, path, size, add, grow)
	switch {
	case err != nil:
		return err
	case n == 0:
		return fmt.Errorf("%s: no results", path)
	case truncated:
		in.Truncated = append(in.Truncated, fmt.Sprintf("%s: ends mid-record; read the %d complete records before it", path, n))
	}
	return nil
}

// readSequential reads a results file in any format Vegeta writes with
// Vegeta's decoder, as readGob does (whose signature it shares).
func readSequential(br *bufio.Reader, path string, _ int64, add func(Record), grow func(n int, took int64)) (int, bool, error) {
	cr := &countingReader{r: br}
	dec := vegeta.DecoderFor(cr)
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
		if n++; n == presizeAfter {
			grow(n, cr.n)
		}
		add(it.record(&r))
	}
}

// record keeps what the analyzer needs of a result. Labels are parsed
// once per distinct label and URL and shared, so a million results hold a
// handful of strings.
func (it *interner) record(r *vegeta.Result) Record {
	labels := it.labels
	rec := Record{Start: r.Timestamp.UnixNano(), Code: r.Code}
	rec.End = rec.Start + int64(r.Latency)
	key := r.Attack
	if !strings.Contains(key, "surface=") {
		key += "\x00" + r.URL
	}
	l, ok := labels[key]
	if !ok {
		for _, f := range strings.Fields(r.Attack) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "surface":
				l[0] = v
			case "source":
				l[1] = v
			case "stream":
				l[2] = v
			}
		}
		if l[0] == "" {
			l[0] = surfaceOf(r.URL)
		}
		if l[1] == "" {
			l[1] = "default"
		}
		l = [3]string{strings.Clone(l[0]), strings.Clone(l[1]), strings.Clone(l[2])}
		if len(labels) < 1<<16 {
			labels[strings.Clone(key)] = l
		}
	}
	rec.Surface, rec.Source, rec.Stream = l[0], l[1], l[2]
	if strings.Contains(r.Attack, "client=") {
		rec.Fleet = parseFleetTag(r.Attack)
	}
	var a Answer
	if isContractStream(rec.Stream) || (r.Code == 429 && len(r.Body) > 0) {
		a.Body = r.Body[:min(len(r.Body), keepBody)]
	}
	a.Err = r.Error
	if r.Headers != nil {
		a.Allow = r.Headers.Get("Allow")
		a.RetryAfter = r.Headers.Get("Retry-After")
		a.RateLimit = strings.TrimSpace(r.Headers.Get("RateLimit") + " " + r.Headers.Get("RateLimit-Policy"))
	}
	if len(a.Body) > 0 || a.Err != "" || a.Allow != "" || a.RetryAfter != "" || a.RateLimit != "" {
		rec.A = it.answer(a)
	}
	return rec
}

// parallelGob says whether gob files are decoded on every core (the
// benchmark turns it off to compare).
var parallelGob = true

// presizeAfter is how many results are read before the file's size and
// the bytes they took tell how many records to make room for.
const presizeAfter = 8192

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// interner shares the few distinct labels and answers of a file, so that a
// flood does not keep a copy of each per result.
type interner struct {
	labels  map[string][3]string
	answers map[answerKey]*Answer
	bodies  map[string][]byte
}

type answerKey struct{ body, allow, retryAfter, rateLimit, err string }

// answer returns the shared copy of a (whose fields may alias the decoded
// result, which it does not keep). Bodies are shared on their own too, for
// targets whose headers (a remaining count, a reset time) make every
// answer differ.
func (it *interner) answer(a Answer) *Answer {
	k := answerKey{string(a.Body), a.Allow, a.RetryAfter, a.RateLimit, a.Err}
	if v, ok := it.answers[k]; ok {
		return v
	}
	body, ok := it.bodies[string(a.Body)]
	if !ok {
		body = bytes.Clone(a.Body)
		if len(it.bodies) < 1024 {
			it.bodies[string(body)] = body
		}
	}
	v := &Answer{Body: body, Allow: strings.Clone(a.Allow), RetryAfter: strings.Clone(a.RetryAfter),
		RateLimit: strings.Clone(a.RateLimit), Err: strings.Clone(a.Err)}
	if len(it.answers) < 4096 {
		it.answers[answerKey{string(v.Body), v.Allow, v.RetryAfter, v.RateLimit, v.Err}] = v
	}
	return v
}

// newInterner returns an empty interner.
func newInterner() *interner {
	return &interner{labels: map[string][3]string{}, answers: map[answerKey]*Answer{}, bodies: map[string][]byte{}}
}

// surfaceOf infers the surface of a result from its URL, for results files
// written without ratecheck's labels (the Vegeta CLI's, say).
func surfaceOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "other"
	}
	switch {
	case strings.HasPrefix(u.Path, "/api/public/"):
		return REST
	case u.Path == "/mcp":
		return MCP
	}
	return "other"
}
