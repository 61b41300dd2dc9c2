package decode

import (
	"bytes"
	"cmp"
	"encoding/gob"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	gocmp "github.com/google/go-cmp/cmp"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// results returns n results of both surfaces, some refused.
func results(n int) []vegeta.Result {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	out := make([]vegeta.Result, n)
	for i := range out {
		r := vegeta.Result{Attack: fmt.Sprintf("surface=rest source=127.0.0.%d stream=flood", 1+i%3), Seq: uint64(i), Code: 200,
			Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Latency: time.Duration(300+i%7) * time.Microsecond,
			Method: "GET", URL: "http://127.0.0.1:8080/api/public/search?q=x"}
		if i%4 == 0 {
			r.Code, r.Body = 429, []byte(`{"error":{"code":"rate_limited"}}`)
			r.Headers = map[string][]string{"Retry-After": {"3"}}
		}
		if i%1000 == 999 {
			r.Code, r.Error = 0, "read: connection reset by peer"
		}
		switch i % 97 { // what real files also hold, now and then
		case 1: // the Vegeta CLI's: no labels, a time zone
			r.Attack, r.Timestamp = "", r.Timestamp.In(time.FixedZone("CET", 3600))
		case 2:
			r.Code, r.Body = 429, []byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603}}`)
			r.Headers = map[string][]string{"Ratelimit": {"limit=240, remaining=0", "ignored"}, "Ratelimit-Policy": {"240;w=60"}, "X-Other": nil}
		case 3:
			r.Attack, r.Code, r.Body = "surface=rest source=127.0.0.9 stream=contract-405", 405, []byte("method not allowed")
			r.Headers = map[string][]string{"Allow": {"GET"}}
		case 4:
			r.Attack = "surface=mcp source=127.0.0.1 stream=fleet client=3 request=1 attempt=2 delay=1500000"
			r.URL = "http://127.0.0.1:8080/mcp"
		case 5:
			r.Timestamp, r.Latency, r.Method, r.URL = time.Time{}, 0, "", ""
		case 6:
			r.Timestamp = time.Date(1960, 1, 1, 0, 0, 0, 5, time.UTC) // before 1970
		case 7:
			r.Code, r.Body = 429, bytes.Repeat([]byte("x"), 3*maxKeptBody)
		}
		out[i] = r
	}
	return out
}

func encode(t *testing.T, enc func(*bytes.Buffer) vegeta.Encoder, rs []vegeta.Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := enc(&buf)
	for i := range rs {
		if err := e.Encode(&rs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// byStart sorts records by send time, as Read merges them.
func byStart(recs []Record) []Record {
	slices.SortStableFunc(recs, func(a, b Record) int { return cmp.Compare(a.Start, b.Start) })
	return recs
}

func gobOf(b *bytes.Buffer) vegeta.Encoder  { return vegeta.NewEncoder(b) }
func jsonOf(b *bytes.Buffer) vegeta.Encoder { return vegeta.NewJSONEncoder(b) }

// testOptions keep the bodies of streams named contract-* and judge a
// refusal by whether its body names rate_limited, as a stand-in for the
// analyzer's judge.
var testOptions = Options{
	KeepBody: func(stream string) bool { return strings.HasPrefix(stream, "contract") },
	Judge:    func(_ string, body []byte) bool { return bytes.Contains(body, []byte("rate_limited")) },
}

// want is what reading rs one by one, as Vegeta does, keeps, merged by
// send time, with the tables it indexes: every result but the stragglers
// (see order; results(n) holds a few sent in year 1 or 1960).
func want(rs []vegeta.Result) ([]Record, *Tables) {
	rd := &reader{tab: newTables(), opts: testOptions}
	it := rd.newInterner()
	o := newOrder()
	var out []Record
	for i := range rs {
		r := fromVegeta(&rs[i])
		if rec := it.record(&r, nil); o.keep(rec.Start) {
			out = append(out, rec)
		}
	}
	return byStart(out), rd.tab
}

// recordContents is what a record says, its labels and answer looked up.
type recordContents struct {
	archive.Labels
	Start, End int64
	Code       uint16
	Answer     *Answer
	Judged     [2]bool
}

func contents(tab *Tables, r *Record) recordContents {
	ok, known := r.Judged()
	return recordContents{*tab.Labels(r), r.Start, r.End, r.Code, tab.Answer(r), [2]bool{ok, known}}
}

// TestRead: gob files are read on every core in batches and must give
// exactly what the sequential decoder gives, in order, across batch
// boundaries, for files concatenated with cat, and for a file that ends
// mid-record; bad files get an error that names them.
func TestRead(t *testing.T) {
	rs := results(3*gobBatchResults + 17)
	gob := encode(t, gobOf, rs)
	two := append(append([]byte{}, gob...), encode(t, gobOf, rs[:10])...)
	tests := []struct {
		name      string
		data      []byte
		want      []vegeta.Result
		truncated string
		err       string
	}{
		{"gob", gob, rs, "", ""},
		{"one result", encode(t, gobOf, rs[:1]), rs[:1], "", ""},
		{"json", encode(t, jsonOf, rs[:100]), rs[:100], "", ""},
		{"gob files concatenated", two, append(append([]vegeta.Result{}, rs...), rs[:10]...), "", ""},
		{"gob ending mid-record", gob[:len(gob)-5], rs[:len(rs)-1], fmt.Sprintf("ends mid-record; read the %d complete records", len(rs)-1), ""},
		{"gob padded with zeros", append(append([]byte{}, gob...), make([]byte, 64)...), rs, fmt.Sprintf("ends mid-record; read the %d complete records", len(rs)), ""},
		{"gob with a corrupt length at its end", append(append([]byte{}, gob...), 0xfc, 0x3f, 0xff, 0xff, 0xff), rs, fmt.Sprintf("ends mid-record; read the %d complete records", len(rs)), ""},
		{"gob with a length past 2^63 at its end", append(append([]byte{}, gob...), 0xf8, 0x80, 0, 0, 0, 0, 0, 0, 0, 1), rs, fmt.Sprintf("ends mid-record; read the %d complete records", len(rs)), ""},
		{"gob with a corrupt field delta", append(append([]byte{}, gob...), badDelta(t, gob)...), nil, "", fmt.Sprintf("record %d", len(rs)+1)},
		{"empty", nil, nil, "", "not a Vegeta results file"},
		{"text", []byte("hello\nworld\n"), nil, "", "not a Vegeta results file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "results.bin")
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := Read([]string{path}, testOptions)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want one naming %s and saying %q", err, path, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, tab := want(tt.want)
			if len(in.Records) != len(want) {
				t.Errorf("%d records, want %d", len(in.Records), len(want))
			}
			for i := range min(len(in.Records), len(want)) {
				if diff := gocmp.Diff(contents(tab, &want[i]), contents(in.Tables(), &in.Records[i])); diff != "" {
					t.Fatalf("record %d (-want +got):\n%s", i, diff)
				}
			}
			if got := strings.Join(in.Truncated, "; "); !strings.Contains(got, tt.truncated) || (tt.truncated == "") != (got == "") {
				t.Errorf("truncated %q, want %q", got, tt.truncated)
			}
		})
	}
}

// badDelta returns a value message of gob's Result type whose first field
// delta is 2^64-1: Vegeta's decoder calls it corrupt; the fast one must
// step aside rather than index with it.
func badDelta(t *testing.T, gob []byte) []byte {
	t.Helper()
	for b := gob; len(b) > 0; {
		size, w, _ := gobUint(b)
		payload := b[w : w+int(size)]
		if id, iw, _ := gobUint(payload); id&1 == 0 {
			msg := append(append([]byte{}, payload[:iw]...), 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0)
			return append([]byte{byte(len(msg))}, msg...)
		}
		b = b[w+int(size):]
	}
	t.Fatal("no value message")
	return nil
}

// TestFastDecoder: the hand-written gob decoder reads every kind of result
// exactly as Vegeta's does, and steps aside for streams it does not know.
func TestFastDecoder(t *testing.T) {
	rs := results(200)
	data := encode(t, gobOf, rs)
	var defs []byte
	var vals [][]byte
	for b := data; len(b) > 0; {
		size, w, ok := gobUint(b)
		if !ok {
			t.Fatal("bad message length")
		}
		msg := b[:w+int(size)]
		if id, _, _ := gobUint(msg[w:]); id&1 == 1 {
			defs = append(defs, msg...)
		} else {
			vals = append(vals, msg[w:])
		}
		b = b[w+int(size):]
	}
	l := parseLayout(defs)
	if l == nil {
		t.Fatal("the layout of Vegeta's own Result was not recognized")
	}
	if len(vals) != len(rs) {
		t.Fatalf("%d value messages, want %d", len(vals), len(rs))
	}
	for i, msg := range vals {
		var got result
		if err := l.decodeResult(msg, &got); err != nil {
			t.Fatalf("result %d: %v", i, err)
		}
		if diff := gocmp.Diff(fromVegeta(&rs[i]), got); diff != "" {
			t.Fatalf("result %d (-vegeta +fast):\n%s", i, diff)
		}
		if l.decodeResult(msg[:len(msg)-1], &got) == nil {
			t.Fatalf("result %d cut short decoded without an error", i)
		}
	}
	// A definition claiming 2^26 fields in 5 bytes is refused at once.
	if parseLayout([]byte{7, 0xff, 0x81, 3, 2, 0xfc, 4, 0, 0, 0}) != nil {
		t.Error("a corrupt definition gave a layout")
	}
	// Nanoseconds out of range: time.Time reads them its own way, so the
	// fast decoder steps aside.
	for i, msg := range vals {
		var r result
		bad := bytes.Clone(msg)
		at := bytes.Index(bad, []byte{0x0f, 1}) // a version-1 timestamp: 15 bytes
		if at < 0 {
			continue
		}
		bad[at+10] = 0x40 // the first byte of the nanoseconds: 0x40xxxxxx > 1e9
		if l.decodeResult(bad, &r) == nil {
			t.Fatalf("result %d: nanoseconds out of range decoded", i)
		}
		break
	}
	// Another struct named Result, or one with a field more, is not ours.
	type Result struct {
		Attack string
		Extra  float64
	}
	for _, v := range []any{
		&Result{Attack: "a", Extra: 1},
		&struct{ Attack, URL string }{"a", "b"},
	} {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(v); err != nil {
			t.Fatal(err)
		}
		size, w, _ := gobUint(buf.Bytes())
		_ = size
		if l := parseLayout(buf.Bytes()[:w+int(size)]); l != nil {
			t.Errorf("%T: layout recognized, want nil", v)
		}
	}
}

// BenchmarkRead reads a 100 000-result gob file on every core, then with
// Vegeta's decoder alone.
func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	e := vegeta.NewEncoder(&buf)
	rs := results(100000)
	for i := range rs {
		if err := e.Encode(&rs[i]); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "results.bin")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, parallel := range []bool{true, false} {
		b.Run(map[bool]string{true: "parallel", false: "sequential"}[parallel], func(b *testing.B) {
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				if _, err := Read([]string{path}, Options{Sequential: !parallel}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReadKeepsFewAnswers: results whose every answer differs (a request id
// in each refusal's body, a RateLimit count in each header, an id in each
// URL of an unlabelled file) add a bounded number of labels and answers to
// the reader's tables, not one per result, and are still judged.
func TestReadKeepsFewAnswers(t *testing.T) {
	const n = 20000
	rs := make([]vegeta.Result, n)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range rs {
		rs[i] = vegeta.Result{Code: 429, Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Latency: time.Millisecond,
			URL:     fmt.Sprintf("http://127.0.0.1:8080/api/public/search?q=x&id=%d", i),
			Body:    fmt.Appendf(nil, `{"error":{"code":"rate_limited","request_id":"req-%d"}}`, i),
			Headers: map[string][]string{"Ratelimit": {fmt.Sprintf("limit=240, remaining=0, reset=%d", i)}}}
		if i%2 == 1 {
			rs[i].Body = fmt.Appendf(nil, `{"error":{"code":"slow_down","request_id":"req-%d"}}`, i)
		}
	}
	path := filepath.Join(t.TempDir(), "results.bin")
	writeResults(t, path, rs)
	in, err := Read([]string{path}, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if dl, da := in.Tables().Len(); dl > 1+4 || da > 1+maxHeaderAnswers+4 { // past the first maxHeaderAnswers in file order, answers drop their headers
		t.Errorf("%d results added %d labels and %d answers", n, dl-1, da-1)
	}
	bad, rateLimit := 0, ""
	for i := range in.Records {
		if ok, known := in.Records[i].Judged(); !known {
			t.Fatalf("record %d was not judged", i)
		} else if !ok {
			bad++
		}
		if _, _, rl := in.Tables().Header(&in.Records[i]); i == 0 {
			rateLimit = rl
		}
	}
	if bad != n/2 || rateLimit != "limit=240, remaining=0, reset=0" {
		t.Errorf("%d refusals judged bad (want %d), first RateLimit %q", bad, n/2, rateLimit)
	}
}

// writeResults writes rs as a gob results file.
func writeResults(t *testing.T, path string, rs []vegeta.Result) {
	t.Helper()
	if err := os.WriteFile(path, encode(t, gobOf, rs), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordString is everything a record says, its labels and answer looked
// up in tab.
func recordString(tab *Tables, r *Record) string {
	c := contents(tab, r)
	a := Answer{}
	if c.Answer != nil {
		a = *c.Answer
	}
	fleet := archive.FleetTag{}
	if c.Fleet != nil {
		fleet = *c.Fleet
	}
	return fmt.Sprintf("%s %s %s %+v %d %d %d %q %+v %v", c.Surface, c.Source, c.Stream, fleet, c.Start, c.End, c.Code, a.Body, a, c.Judged)
}

// TestSamples: a reader keeps the first few answers of each label, status
// and judgement, in file order, the same whether it decodes on every core
// or on one, and never more than a few of each.
func TestSamples(t *testing.T) {
	rs := results(3*gobBatchResults + 17)
	path := filepath.Join(t.TempDir(), "results.bin")
	writeResults(t, path, rs)
	par, err := Read([]string{path}, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	seqOpts := testOptions
	seqOpts.Sequential = true
	seq, err := Read([]string{path}, seqOpts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(seq.Samples, par.Samples); diff != "" {
		t.Fatalf("samples on every core differ from one core's (-seq +par):\n%s", diff)
	}
	per := map[sampleKey]int{}
	for _, s := range par.Samples {
		k := sampleKey{s.Surface, s.Source, s.Stream, s.Code, s.Refused}
		if per[k]++; per[k] > maxSamples {
			t.Fatalf("%d samples of %+v", per[k], k)
		}
		if len(s.Body) > MaxSample || strings.Contains(s.Path, "?") {
			t.Errorf("sample %+v: body over %d bytes or a query in its path", s, MaxSample)
		}
	}
	if len(per) < 5 || par.Samples[0].Path != "/api/public/search" {
		t.Errorf("%d kinds of samples, first %+v", len(per), par.Samples[0])
	}
}

// BenchmarkOpen reads a 100 000-result gob file into a spill and reads the
// spill back as an analysis does: once in file order, twice in send order.
// Its allocations per result show whether the decoder's batches and the
// spill's records are reused.
func BenchmarkOpen(b *testing.B) {
	var buf bytes.Buffer
	e := vegeta.NewEncoder(&buf)
	rs := results(100000)
	for i := range rs {
		if err := e.Encode(&rs[i]); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "results.bin")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open([]string{path}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		count := func(*Record) { n++ }
		if err := s.Each(count); err != nil {
			b.Fatal(err)
		}
		for range 2 {
			if err := s.InOrder(count); err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
		if n == 0 || n%3 != 0 {
			b.Fatalf("%d records read in three passes", n)
		}
	}
}

// TestReadKeepsAdvertised: every answer keeps the rate-limit fields it
// advertised, admissions too, in AdvertFields order, bounded.
func TestReadKeepsAdvertised(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	rs := []vegeta.Result{
		{Code: 200, Timestamp: t0, Latency: time.Millisecond, URL: "http://127.0.0.1:8080/api/public/search?q=x",
			Headers: map[string][]string{"X-Ratelimit-Remaining": {"239"}, "X-Ratelimit-Limit": {"240"}, "Content-Type": {"application/json"}}},
		{Code: 429, Timestamp: t0.Add(time.Millisecond), Latency: time.Millisecond, URL: "http://127.0.0.1:8080/api/public/search?q=x",
			Headers: map[string][]string{"Ratelimit": {`"default";r=0;t=30`}, "Ratelimit-Policy": {`"default";q=240;w=60`}, "Retry-After": {"30"}}},
		{Code: 200, Timestamp: t0.Add(2 * time.Millisecond), Latency: time.Millisecond, URL: "http://127.0.0.1:8080/api/public/search?q=x",
			Headers: map[string][]string{"Ratelimit": {strings.Repeat("x", 4*maxAdvert)}, "Retry-After": {"line\nbreak"}}},
		{Code: 200, Timestamp: t0.Add(3 * time.Millisecond), Latency: time.Millisecond, URL: "http://127.0.0.1:8080/api/public/search?q=x"},
	}
	path := filepath.Join(t.TempDir(), "results.bin")
	writeResults(t, path, rs)
	in, err := Read([]string{path}, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"X-Ratelimit-Limit: 240\nX-Ratelimit-Remaining: 239\n",
		"Ratelimit-Policy: \"default\";q=240;w=60\nRatelimit: \"default\";r=0;t=30\nRetry-After: 30\n",
		"Ratelimit: " + strings.Repeat("x", maxText) + "\nRetry-After: line break\n",
		"",
	}
	if len(in.Records) != len(want) {
		t.Fatalf("%d records", len(in.Records))
	}
	for i, w := range want {
		if got := in.Tables().Advertised(&in.Records[i]); got != w {
			t.Errorf("record %d advertised %q, want %q", i, got, w)
		}
	}
}

// TestHeadersKeptInFileOrder: past maxHeaderAnswers answers whose headers
// change with every answer, the headers are kept by the first such answers
// in file order, the same whether the file is decoded on every core or on
// one: which records keep them never depends on which worker decoded which
// batch.
func TestHeadersKeptInFileOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // several workers, whatever the machine
	const n = 3 * maxHeaderAnswers
	rs := make([]vegeta.Result, n)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range rs {
		rs[i] = vegeta.Result{Attack: "surface=rest source=127.0.0.1 stream=flood", Code: 429, Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Latency: time.Millisecond,
			URL:     "http://127.0.0.1:8080/api/public/search?q=x",
			Body:    []byte(`{"error":{"code":"rate_limited"}}`),
			Headers: map[string][]string{"Ratelimit": {fmt.Sprintf("limit=240, remaining=0, reset=%d", i)}, "Retry-After": {fmt.Sprint(i % 7)}}}
	}
	path := filepath.Join(t.TempDir(), "results.bin")
	writeResults(t, path, rs)
	seqOpts := testOptions
	seqOpts.Sequential = true
	var reads [3]*Input
	for k, opts := range []Options{testOptions, seqOpts, testOptions} {
		in, err := Read([]string{path}, opts)
		if err != nil {
			t.Fatal(err)
		}
		reads[k] = in
	}
	for i := range n {
		_, retryAfter, rateLimit := reads[0].Tables().Header(&reads[0].Records[i])
		want := ""
		if i < maxHeaderAnswers {
			want = fmt.Sprintf("limit=240, remaining=0, reset=%d", i)
		}
		if rateLimit != want || (want == "") != (retryAfter == "") {
			t.Fatalf("record %d: Retry-After %q, RateLimit %q; want RateLimit %q, and Retry-After with it", i, retryAfter, rateLimit, want)
		}
		for k, in := range reads[1:] {
			if a, b := recordString(reads[0].Tables(), &reads[0].Records[i]), recordString(in.Tables(), &in.Records[i]); a != b {
				t.Fatalf("record %d: read %d says %s, the first read %s", i, k+2, b, a)
			}
		}
	}
}
