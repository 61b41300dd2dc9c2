package analyze

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

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

// want is what reading rs one by one, as Vegeta does, keeps.
func want(rs []vegeta.Result) []Record {
	it := newInterner()
	out := make([]Record, len(rs))
	for i := range rs {
		out[i] = it.record(&rs[i])
	}
	return out
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
		want      []Record
		truncated string
		err       string
	}{
		{"gob", gob, want(rs), "", ""},
		{"one result", encode(t, gobOf, rs[:1]), want(rs[:1]), "", ""},
		{"json", encode(t, jsonOf, rs[:100]), want(rs[:100]), "", ""},
		{"gob files concatenated", two, byStart(want(append(append([]vegeta.Result{}, rs...), rs[:10]...))), "", ""},
		{"gob ending mid-record", gob[:len(gob)-5], want(rs[:len(rs)-1]), fmt.Sprintf("ends mid-record; read the %d complete records", len(rs)-1), ""},
		{"gob padded with zeros", append(append([]byte{}, gob...), make([]byte, 64)...), want(rs), fmt.Sprintf("ends mid-record; read the %d complete records", len(rs)), ""},
		{"gob with a corrupt length at its end", append(append([]byte{}, gob...), 0xfc, 0x3f, 0xff, 0xff, 0xff), want(rs), fmt.Sprintf("ends mid-record; read the %d complete records", len(rs)), ""},
		{"empty", nil, nil, "", "not a Vegeta results file"},
		{"text", []byte("hello\nworld\n"), nil, "", "not a Vegeta results file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "results.bin")
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := Read([]string{path})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want one naming %s and saying %q", err, path, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Records) != len(tt.want) {
				t.Errorf("%d records, want %d", len(in.Records), len(tt.want))
			}
			for i := range min(len(in.Records), len(tt.want)) {
				if reflect.DeepEqual(tt.want[i], in.Records[i]) {
					continue
				}
				if diff := gocmp.Diff(tt.want[i], in.Records[i]); diff != "" {
					t.Fatalf("record %d (-want +got):\n%s", i, diff)
				}
			}
			if got := strings.Join(in.Truncated, "; "); !strings.Contains(got, tt.truncated) || (tt.truncated == "") != (got == "") {
				t.Errorf("truncated %q, want %q", got, tt.truncated)
			}
		})
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
			defer func(p bool) { parallelGob = p }(parallelGob)
			parallelGob = parallel
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				if _, err := Read([]string{path}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
