package decode

import (
	"path/filepath"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestFromResults: results held in memory make the same input as the
// results file they would be written to: the same records, labels,
// answers and samples, in send order.
func TestFromResults(t *testing.T) {
	t.Parallel()
	var rs []vegeta.Result
	for _, r := range results(500) {
		if r.Timestamp.Year() >= 2000 { // what a reader of a file drops as a straggler aside
			rs = append(rs, r)
		}
	}
	path := filepath.Join(t.TempDir(), "results.bin")
	writeResults(t, path, rs)
	opts := Options{KeepBody: func(string) bool { return true }}
	want, err := Read([]string{path}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ptrs := make([]*vegeta.Result, len(rs))
	for i := range rs {
		ptrs[i] = &rs[i]
	}
	got := FromResults(ptrs, opts)
	if len(got.Records) != len(want.Records) {
		t.Fatalf("%d records, want %d", len(got.Records), len(want.Records))
	}
	for i := range want.Records {
		if g, w := recordString(got.Tables(), &got.Records[i]), recordString(want.Tables(), &want.Records[i]); g != w {
			t.Fatalf("record %d:\n got %s\nwant %s", i, g, w)
		}
	}
	if len(got.Meta.Samples) != len(want.Meta.Samples) {
		t.Errorf("%d samples, want %d", len(got.Meta.Samples), len(want.Meta.Samples))
	}
}
