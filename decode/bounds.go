package decode

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"
	"unicode/utf8"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// What a reader keeps follows the rate and the window of the runs it reads,
// never the input's own claims: a length prefix, a line, a label, an answer
// or a timestamp of a hostile or corrupt file is checked against what can
// actually follow and against these bounds before anything is allocated
// for it. What goes past a bound is counted and said (Meta.Truncated,
// Meta.Notes), never silently dropped.
const (
	// maxResult is the most bytes one result may take in a results file:
	// a gob message, a JSON line, a CSV record. Vegeta's own results with
	// ratecheck's body cap take well under a kilobyte. Reading stops at a
	// result that claims more, and says so: a pipe has no size to check a
	// length against, and nothing is allocated for a length before its
	// bytes have arrived.
	maxResult = 4 << 20
	// maxLabels is how many distinct labels (surface, source, stream, and
	// a fleet attempt's client, request, attempt and delay) a reader keeps
	// in full; a label longer than maxLabelLen is not kept either. The
	// results of further labels keep their surface and stream under
	// source OtherSources, without a fleet tag, and are counted in
	// Meta.Notes. 2^17 holds a fleet of 16 000 clients, two requests and
	// four attempts each (every attempt's label differs: it holds its
	// delay).
	maxLabels = 1 << 17
	// maxSources is how many distinct sources (client addresses) a reader
	// keeps: each is a group of its own in the analysis. The results of
	// further sources are folded as those of labels past MaxLabels are.
	maxSources = 1 << 10
	// maxAnswers is how many distinct answers (kept bodies, error kinds,
	// Allow, Retry-After and RateLimit values) a reader keeps; results of
	// further answers keep only their status, and are counted in
	// Meta.Notes.
	maxAnswers = 1 << 14
	// maxReorder is the furthest back in send time a result may be written
	// behind the results before it in its file (Vegeta writes results as
	// they complete, so a result is behind by at most its latency). Results
	// further behind are stragglers: left out of the analysis and counted
	// in Meta.Notes, so that putting a file in send order holds at most
	// maxReorder of its results, whatever its timestamps say.
	maxReorder = 5 * time.Minute
)

// OtherSources is the source of results whose labels were past MaxLabels:
// it holds a space, so no label read from a file can name it.
const OtherSources = "other sources"

const (
	// maxLabelLen is the longest label kept in full (ratecheck's own are
	// under 200 bytes).
	maxLabelLen = 256
	// maxText is the most bytes of a header value or an error kind an
	// answer keeps, and of a sample's path.
	maxText = 256
	// maxDefs bounds the type definitions of one gob stream (Vegeta's
	// Result takes about 500 bytes of them).
	maxDefs = 1 << 20
	// maxFolded bounds the distinct surfaces and streams kept of results
	// past MaxLabels, per decoding goroutine.
	maxFolded = 256
	// orderRank: a result is behind when it is behind the orderRank-th
	// latest send read before it, so that one result dated a century
	// ahead does not make every other result a straggler.
	orderRank = 16
)

// cut returns s cut to at most n bytes, on a UTF-8 boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// newResult returns a result for Vegeta's decoder to decode into. Its
// Headers map is made already: encoding/gob makes a nil map with the size
// a message claims, however few bytes follow (a message of a few hundred
// bytes could claim millions of headers), and fills one that exists as
// its entries arrive.
func newResult() *vegeta.Result { return &vegeta.Result{Headers: http.Header{}} }

// tooBigError is a result that claims more than MaxResult bytes.
type tooBigError struct{ size uint64 }

func (e *tooBigError) Error() string {
	return fmt.Sprintf("a result of %d bytes, more than the %d a result may take", e.size, maxResult)
}

// errTooManyDefs is a gob stream that defines more types than results
// need.
var errTooManyDefs = fmt.Errorf("more than %d bytes of gob type definitions in a row: not a stream of results", maxDefs)

// errNoRecordEnd is input read past MaxResult bytes without a record
// ending: a line too long, or not results at all.
var errNoRecordEnd = fmt.Errorf("no record ends within %d bytes", maxResult)

// recordBound is an io.Reader that lets a text decoder (JSON, CSV) read at
// most MaxResult bytes, plus its read-ahead, before Next says a record
// was decoded: a line of a gigabyte, or /dev/zero, ends the read instead of
// filling the memory.
type recordBound struct {
	r   io.Reader
	n   int
	hit bool
}

// readAhead is how far a decoder may read past a record's end.
const readAhead = 64 << 10

func (b *recordBound) Read(p []byte) (int, error) {
	left := maxResult + readAhead - b.n
	if left <= 0 {
		b.hit = true
		return 0, errNoRecordEnd
	}
	if len(p) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.n += n
	return n, err
}

// next starts the count of the next record.
func (b *recordBound) next() { b.n = 0 }

// gobFrames is an io.Reader of a gob stream that hands on only whole
// messages whose lengths were checked (see readGobMessage), so that
// Vegeta's gob decoder, reading through it, never meets a length it would
// trust. It is what a sequential read decodes.
type gobFrames struct {
	br   *bufio.Reader
	left int64 // bytes the file has left (MaxInt64: unknown)
	buf  []byte
	off  int
	err  error
	defs int // bytes of type definitions since the last value
}

func newGobFrames(br *bufio.Reader, size int64) *gobFrames {
	if size <= 0 {
		size = math.MaxInt64
	}
	return &gobFrames{br: br, left: size}
}

func (g *gobFrames) Read(p []byte) (int, error) {
	if g.off == len(g.buf) {
		if g.err != nil {
			return 0, g.err
		}
		g.buf, g.off = g.buf[:0], 0
		var err error
		var def bool
		g.buf, def, err = readGobMessage(g.br, g.buf, g.left)
		g.left -= int64(len(g.buf))
		if def {
			g.defs += len(g.buf)
		} else {
			g.defs = 0
		}
		if err == nil && g.defs > maxDefs {
			err, g.buf = errTooManyDefs, g.buf[:0]
		}
		if err != nil {
			g.err = err
			if len(g.buf) == 0 {
				return 0, err
			}
		}
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	return n, nil
}

// order follows the send times of one file's results in file order: how
// far behind the orderRank-th latest send each result is (the depth of the
// reorder buffer that puts them in send order), and which are stragglers,
// behind by more than MaxReorder.
type order struct {
	top    []int64 // the orderRank latest sends, in ascending order
	latest int64   // the latest send
	n      int
	sorted bool   // every result so far in send order
	disp   int64  // the furthest a kept result was behind
	limit  uint64 // MaxReorder in ns (tests lower it)
	late   int    // stragglers
	worst  uint64 // the furthest a straggler was behind
}

func newOrder() *order { return &order{sorted: true, limit: uint64(maxReorder)} }

// mark is the send a result is judged against: the orderRank-th latest
// send before it (none, math.MinInt64, before orderRank results).
func (o *order) mark() int64 {
	if len(o.top) < orderRank {
		return math.MinInt64
	}
	return o.top[0]
}

// behind returns how far s is behind mark m (0 when not behind).
func behind(s, m int64) uint64 {
	if m <= s {
		return 0
	}
	return uint64(m) - uint64(s) // exact even across the sign
}

// keep takes the next result's send and reports whether it is kept, not a
// straggler.
func (o *order) keep(s int64) bool {
	d := behind(s, o.mark())
	if d > o.limit {
		o.late++
		o.worst = max(o.worst, d)
		return false
	}
	if o.n > 0 && s < o.latest {
		o.sorted = false
	}
	if o.n == 0 || s > o.latest {
		o.latest = s
	}
	o.n++
	o.disp = max(o.disp, int64(d))
	o.push(s)
	return true
}

// push adds s to the latest sends, kept in ascending order: a send
// above the lowest takes its place, moved up past every lower one. A
// file in send order (the usual case) moves each past all of them, a
// copy of orderRank-1 values, no slower than a heap's sift over bare
// int64s, and no heap is needed for so few.
func (o *order) push(s int64) {
	h := o.top
	if len(h) < orderRank {
		i := len(h)
		h = append(h, s)
		for ; i > 0 && h[i-1] > s; i-- {
			h[i] = h[i-1]
		}
		h[i] = s
		o.top = h
		return
	}
	if s <= h[0] {
		return
	}
	i := len(h) - 1
	for h[i] > s {
		i--
	}
	copy(h[:i], h[1:i+1])
	h[i] = s
}

// depth is the reorder buffer's depth the kept results need: 0 when they
// are in send order already, else how far a kept result was behind the
// mark before it, and at least 1 ns (see partReader.next).
func (o *order) depth() int64 {
	if o.sorted {
		return 0
	}
	return max(o.disp, 1)
}

// note says what was left out of a file, if anything.
func (o *order) note(file string) string {
	if o.late == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d results were sent more than %v before results written ahead of them (the furthest %v before): left out of the analysis, which puts a file in send order holding at most %v of it (files joined out of order? name them as separate paths)",
		file, o.late, time.Duration(o.limit), time.Duration(min(o.worst, math.MaxInt64)).Round(time.Millisecond), time.Duration(o.limit))
}
