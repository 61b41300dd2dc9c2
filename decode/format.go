package decode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Format detection (detect: gob, JSON or CSV, told from the first result)
// and readSequential, the read of a file in any of them with Vegeta's own
// decoder; gobread.go holds the parallel read of gob.

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
		add(it.record(&res, nil))
		rd.keep(it.takeSamples())
	}
}
