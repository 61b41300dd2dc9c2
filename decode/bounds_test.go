package decode

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// pipe is a reader with no size and no Seek, as a pipe is; it counts what
// was read from it.
type pipe struct {
	r io.Reader
	n int64
}

func (p *pipe) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	return n, err
}

// zeros is /dev/zero.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// endless repeats one byte forever.
type endless byte

func (e endless) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(e)
	}
	return len(b), nil
}

// readPipe reads r as a results file of unknown size, as Read does a path.
func readPipe(r io.Reader) (*Input, *pipe, error) {
	in := NewInput()
	rd := &reader{tab: in.tab, opts: testOptions}
	p := &pipe{r: r}
	n, truncated, err := rd.readStream(p, 0, "/dev/stdin", func(r Record) { in.Records = append(in.Records, r) })
	if err == nil && truncated {
		in.Truncated = append(in.Truncated, fmt.Sprintf("read the %d complete records", n))
	}
	return in, p, err
}

// TestPipedInput: a results file read from a pipe (no size to check a
// length against) or from a device with no end is read within MaxResult
// bytes past its last good record, whatever a length prefix or a line
// claims: an error that names the file, or the records before the break,
// never a panic or an allocation of what the input claims. Each case reads
// a bounded number of bytes (counted, not timed).
func TestPipedInput(t *testing.T) {
	t.Parallel()
	rs := results(200)
	gob := encode(t, gobOf, rs)
	json := encode(t, jsonOf, rs[:50])
	tail := func(b []byte, more ...byte) func() io.Reader {
		return func() io.Reader { return bytes.NewReader(append(append([]byte{}, b...), more...)) }
	}
	of := func(rs ...func() io.Reader) func() io.Reader {
		return func() io.Reader {
			var r []io.Reader
			for _, f := range rs {
				r = append(r, f())
			}
			return io.MultiReader(r...)
		}
	}
	just := func(r io.Reader) func() io.Reader { return func() io.Reader { return r } }
	bound := int64(len(gob) + 2*maxResult + 2<<20) // a record's worth past the end, and the buffers
	tests := []struct {
		name    string
		r       func() io.Reader
		records int
		err     string
		trunc   bool
	}{
		{"gob", tail(gob), len(rs), "", false},
		{"gob then a length of 2^62 (issue 15)", tail(gob, 0xf8, 0x40, 0, 0, 0, 0, 0, 0, 0, 0x03, 0), len(rs), "more than the 4194304 a result may take", false},
		{"gob then a length of 3 GB", tail(gob, 0xfc, 0xc0, 0, 0, 0, 1, 2, 3), len(rs), "more than the 4194304 a result may take", false},
		{"gob then a length past 2^63", tail(gob, 0xf8, 0x80, 0, 0, 0, 0, 0, 0, 0, 1), len(rs), "", true},
		{"gob then a length of 4 MB and no more", tail(gob, 0xfc, 0x00, 0x3f, 0xff, 0xff, 1, 2, 3), len(rs), "", true},
		{"gob then zeros forever", of(tail(gob), just(zeros{})), len(rs), "", true},
		{"gob then a length of 4 MB of zeros forever", of(tail(gob, 0xfc, 0x00, 0x3f, 0xff, 0xff), just(zeros{})), len(rs), "record 201", false},
		{"zeros forever (/dev/zero)", just(zeros{}), 0, "not a Vegeta results file", false},
		{"a line with no end", just(endless('a')), 0, "not a Vegeta results file", false},
		{"json then a line with no end", of(tail(json), just(endless('{'))), 50, "no record ends within", false},
		{"json then a 50 MB line", of(tail(json), func() io.Reader { return io.LimitReader(endless('x'), 50<<20) }, func() io.Reader { return strings.NewReader("\n") }), 50, "no record ends within", false},
		{"type definitions forever", of(tail(gob), defsForever(t, gob)), len(rs), "type definitions|duplicate type", false},
	}
	for _, tt := range tests {
		for _, seq := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sequential=%v", tt.name, seq), func(t *testing.T) {
				t.Parallel()
				in := NewInput()
				opts := testOptions
				opts.Sequential = seq
				rd := &reader{tab: in.tab, opts: opts}
				p := &pipe{r: tt.r()}
				n, truncated, err := rd.readStream(p, 0, "/dev/stdin", func(r Record) { in.Records = append(in.Records, r) })
				if p.n > bound {
					t.Errorf("read %d bytes, more than %d", p.n, bound)
				}
				if tt.err != "" {
					if err == nil || !slices.ContainsFunc(strings.Split(tt.err, "|"), func(s string) bool { return strings.Contains(err.Error(), s) }) || !strings.Contains(err.Error(), "/dev/stdin") {
						t.Fatalf("error %v, want one naming /dev/stdin and saying %q", err, tt.err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if n != tt.records || len(in.Records) != tt.records || truncated != tt.trunc {
					t.Errorf("%d records (%d handed on), truncated %v; want %d, %v", n, len(in.Records), truncated, tt.records, tt.trunc)
				}
			})
		}
	}
}

// defsForever returns gob streams that define the same type forever (the
// first definition of gob, again and again), a new one each call.
func defsForever(t *testing.T, gob []byte) func() io.Reader {
	t.Helper()
	size, w, _ := gobUint(gob)
	def := gob[:w+int(size)]
	if id, _, _ := gobUint(def[w:]); id&1 != 1 {
		t.Fatal("the stream does not start with a definition")
	}
	return func() io.Reader { return &repeat{b: def} }
}

type repeat struct {
	b   []byte
	off int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.off:])
		n += c
		r.off = (r.off + c) % len(r.b)
	}
	return n, nil
}

// TestReadFileLinkedToDevice: a run folder whose results.bin or run.json is
// a link to /dev/zero is refused with an error naming it.
func TestReadFileLinkedToDevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	rs := results(10)
	for _, link := range []string{archive.ResultsFile, archive.RunFile} {
		t.Run(link, func(t *testing.T) {
			dir := t.TempDir()
			writeResults(t, filepath.Join(dir, archive.ResultsFile), rs)
			os.Remove(filepath.Join(dir, link))
			if err := os.Symlink("/dev/zero", filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
			for _, read := range []func() error{
				func() error { _, err := Read([]string{dir}, testOptions); return err },
				func() error {
					s, err := Open([]string{dir}, testOptions)
					if err == nil {
						s.Close()
					}
					return err
				},
			} {
				if err := read(); err == nil || !strings.Contains(err.Error(), link) {
					t.Errorf("error %v, want one naming %s", err, link)
				}
			}
		})
	}
}

// TestLabelsBounded: a file of more distinct sources than MaxSources (a
// source per result), of more distinct labels than MaxLabels (a fleet
// attempt per result), or of labels longer than a label can be, keeps at
// most that many in full; the rest are counted under OtherSources with
// their surface and stream, and said in Meta.Notes.
func TestLabelsBounded(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("s", 2*maxLabelLen)
	tests := []struct {
		name            string
		n               int
		attack          func(i int) string
		labels, sources int // at most
		other           int // results folded, at least
	}{
		{"a source per result", maxSources + 3000, func(i int) string {
			return fmt.Sprintf("surface=rest source=10.%d.%d.%d stream=flood", i>>16, i>>8&255, i&255)
		}, maxSources + maxFolded, maxSources, 3000},
		{"labels too long", 3000, func(i int) string {
			if i%3 == 0 {
				return "surface=rest source=" + long + " stream=flood"
			}
			return "surface=rest source=127.0.0.1 stream=flood"
		}, 1 + maxFolded, 1, 1000},
		{"a fleet attempt per result", maxLabels + 9000, func(i int) string {
			return archive.Labels{Surface: "rest", Source: "127.0.0.1", Stream: "flood", Fleet: &archive.FleetTag{Client: i, Request: 1, Attempt: 1 + i%4, Delay: time.Duration(i)}}.String()
		}, maxLabels + maxFolded, 1, 9000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if testing.Short() && tt.n > 10000 {
				t.Skip("writes many results")
			}
			rs := make([]vegeta.Result, tt.n)
			for i := range rs {
				rs[i] = vegeta.Result{Code: 200, Timestamp: t0.Add(time.Duration(i) * time.Microsecond), Latency: time.Millisecond,
					Attack: tt.attack(i), URL: "http://127.0.0.1/api/public/search"}
			}
			path := filepath.Join(t.TempDir(), "results.bin")
			writeResults(t, path, rs)
			for _, seq := range []bool{false, true} {
				opts := testOptions
				opts.Sequential = seq
				in, err := Read([]string{path}, opts)
				if err != nil {
					t.Fatal(err)
				}
				labels, _ := in.Tables().Len()
				other, sources := 0, map[string]bool{}
				for i := range in.Records {
					l := in.Tables().Labels(&in.Records[i])
					if l.Source == OtherSources {
						other++
						if l.Surface != "rest" || l.Stream != "flood" || l.Fleet != nil {
							t.Fatalf("a folded result lost its surface or stream, or kept a fleet tag: %+v", l)
						}
					} else {
						sources[l.Source] = true
					}
				}
				if labels-1 > tt.labels || len(sources) > tt.sources || len(in.Records) != tt.n || other < tt.other {
					t.Errorf("sequential=%v: %d labels kept (at most %d), %d sources (at most %d), %d records of %d, %d under %q (at least %d)",
						seq, labels-1, tt.labels, len(sources), tt.sources, len(in.Records), tt.n, other, OtherSources, tt.other)
				}
				if notes := strings.Join(in.Notes, "\n"); !strings.Contains(notes, fmt.Sprintf("%d results had labels past", other)) {
					t.Errorf("sequential=%v: notes %q do not count the %d folded results", seq, notes, other)
				}
			}
		})
	}
}

// TestAnswersBounded: a file whose every answer differs in a header the
// reader keeps (Allow, an error kind) keeps at most MaxAnswers answers; the
// rest keep their status alone, counted in Meta.Notes. Long values are cut.
func TestAnswersBounded(t *testing.T) {
	n := maxAnswers + 500
	rs := make([]vegeta.Result, n)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range rs {
		rs[i] = vegeta.Result{Code: 405, Timestamp: t0.Add(time.Duration(i) * time.Microsecond), Latency: time.Millisecond,
			Attack:  "surface=rest source=127.0.0.1 stream=flood",
			URL:     "http://127.0.0.1/api/public/search",
			Headers: map[string][]string{"Allow": {fmt.Sprintf("GET-%d%s", i, strings.Repeat("x", 2*maxText))}}}
	}
	path := filepath.Join(t.TempDir(), "results.bin")
	writeResults(t, path, rs)
	in, err := Read([]string{path}, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	_, answers := in.Tables().Len()
	kept := 0
	for i := range in.Records {
		if a := in.Tables().Answer(&in.Records[i]); a != nil {
			kept++
			if len(a.Allow) > maxText {
				t.Fatalf("an Allow of %d bytes kept", len(a.Allow))
			}
		}
	}
	if answers > maxAnswers || kept > maxAnswers || kept < maxAnswers-1 {
		t.Errorf("%d answers in the tables, %d records keep one; want at most %d", answers, kept, maxAnswers)
	}
	if notes := strings.Join(in.Notes, "\n"); !strings.Contains(notes, fmt.Sprintf("%d results had answers past", n-kept)) {
		t.Errorf("notes %q do not count the %d results without their answer", notes, n-kept)
	}
}

// TestReorderBounded: one result dated a century ahead does not make the
// reorder buffer hold every result after it, and results written far
// behind the results before them (files joined out of order) are left out
// as stragglers and said; what is kept comes out in send order, in memory
// and on disk alike. The buffer's depth is counted, not timed.
func TestReorderBounded(t *testing.T) {
	const n = 20000
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	rs := make([]vegeta.Result, n)
	for i := range rs {
		// written as completed: each a few ms behind the one before at most
		ts := t0.Add(time.Duration(i)*time.Millisecond - time.Duration(i%5)*2*time.Millisecond)
		rs[i] = vegeta.Result{Code: 200, Timestamp: ts, Latency: time.Millisecond,
			Attack: "surface=rest source=127.0.0.1 stream=flood", URL: "http://127.0.0.1/api/public/search"}
	}
	rs[100].Timestamp = t0.AddDate(100, 0, 0) // a century ahead
	const late = 7
	for i := range late { // sent an hour before the results written before them
		rs[5000+i].Timestamp = t0.Add(-time.Hour)
	}
	path := filepath.Join(t.TempDir(), "results.bin")
	writeResults(t, path, rs)

	in, err := Read([]string{path}, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Records) != n-late {
		t.Errorf("%d records kept, want %d (%d stragglers left out)", len(in.Records), n-late, late)
	}
	if notes := strings.Join(in.Notes, "\n"); !strings.Contains(notes, fmt.Sprintf("%d results were sent more than", late)) {
		t.Errorf("notes %q do not count the %d stragglers", notes, late)
	}

	sp, err := Open([]string{path}, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if d := time.Duration(sp.parts[0].disp); d > 10*time.Millisecond {
		t.Errorf("reorder depth %v, want a few ms", d)
	}
	pr, err := sp.open(sp.parts[0])
	if err != nil {
		t.Fatal(err)
	}
	defer pr.f.Close()
	deepest, got, last := 0, 0, int64(-1<<63)
	for {
		ok, err := pr.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		deepest = max(deepest, len(pr.pend))
		if pr.cur.Start < last {
			t.Fatalf("record %d out of send order", got)
		}
		last = pr.cur.Start
		got++
	}
	if got != n-late || deepest > 2*orderRank+10 {
		t.Errorf("%d records in send order, the buffer held up to %d (want a handful)", got, deepest)
	}
}

// TestFirstResultLarge: a file whose first result is larger than the first
// look at it (a body of 3 MB, under MaxResult) is still told to be gob,
// JSON or CSV, from a file or a pipe.
func TestFirstResultLarge(t *testing.T) {
	rs := results(5)
	rs[0].Body = bytes.Repeat([]byte("b"), 3<<20)
	for name, enc := range map[string]func(*bytes.Buffer) vegeta.Encoder{"gob": gobOf, "json": jsonOf, "csv": func(b *bytes.Buffer) vegeta.Encoder { return vegeta.NewCSVEncoder(b) }} {
		data := encode(t, enc, rs)
		for _, seq := range []bool{false, true} {
			in := NewInput()
			opts := testOptions
			opts.Sequential = seq
			rd := &reader{tab: in.tab, opts: opts}
			n, truncated, err := rd.readStream(&pipe{r: bytes.NewReader(data)}, 0, "/dev/stdin", func(r Record) { in.Records = append(in.Records, r) })
			if err != nil || n != len(rs) || truncated {
				t.Errorf("%s, sequential=%v: %d records, truncated %v, error %v; want %d", name, seq, n, truncated, err, len(rs))
			}
		}
	}
}

// TestOrderMark: the mark after each push is the orderRank-th latest send
// pushed so far (math.MinInt64 before orderRank), as sorting every send
// says, for sends in order, in reverse, with ties, and at random.
func TestOrderMark(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	for _, tc := range []struct {
		name string
		send func(i int) int64
	}{
		{"in order", func(i int) int64 { return int64(i) * 1000 }},
		{"reversed", func(i int) int64 { return -int64(i) }},
		{"ties", func(i int) int64 { return int64(i / 7) }},
		{"nearly in order", func(i int) int64 { return int64(i)*1000 + rng.Int64N(40_000) }},
		{"at random", func(int) int64 { return rng.Int64() - math.MaxInt64/2 }},
	} {
		o := newOrder()
		var all []int64
		for i := range 500 {
			s := tc.send(i)
			o.push(s)
			all = append(all, s)
			sorted := slices.Sorted(slices.Values(all))
			want := int64(math.MinInt64)
			if len(sorted) >= orderRank {
				want = sorted[len(sorted)-orderRank]
			}
			if got := o.mark(); got != want {
				t.Fatalf("%s: after %d sends the mark is %d, want %d", tc.name, i+1, got, want)
			}
		}
	}
}

// BenchmarkOrderPush: the mark's upkeep on every record of a file in
// send order, nearly so (Vegeta writes results as they complete), and at
// random.
func BenchmarkOrderPush(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	sends := map[string][]int64{"in order": make([]int64, 4096), "nearly": make([]int64, 4096), "random": make([]int64, 4096)}
	for i := range 4096 {
		sends["in order"][i] = int64(i) * 1000
		sends["nearly"][i] = int64(i)*1000 + rng.Int64N(40_000)
		sends["random"][i] = rng.Int64()
	}
	for _, name := range []string{"in order", "nearly", "random"} {
		b.Run(name, func(b *testing.B) {
			o, s := newOrder(), sends[name]
			for i := 0; b.Loop(); i++ {
				o.push(s[i&4095] + int64(i>>12)*4_096_000)
			}
		})
	}
}
