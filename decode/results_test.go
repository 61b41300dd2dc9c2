package decode

import (
	"path/filepath"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// TestFromResults: results held in memory, with the labels their label
// says, make the same input as the results file they would be written
// to: the same records, labels, answers and samples, in send order.
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
	labelled := make([]archive.Result, len(rs))
	for i := range rs {
		labelled[i] = archive.Result{Result: &rs[i], Labels: archive.ParseLabel(rs[i].Attack, rs[i].URL)}
	}
	got := FromResults(labelled, opts)
	if len(got.Records) != len(want.Records) {
		t.Fatalf("%d records, want %d", len(got.Records), len(want.Records))
	}
	for i := range want.Records {
		if g, w := recordString(got.Tables(), &got.Records[i]), recordString(want.Tables(), &want.Records[i]); g != w {
			t.Fatalf("record %d:\n got %s\nwant %s", i, g, w)
		}
	}
	if diff := gocmp.Diff(want.Meta.Samples, got.Meta.Samples); diff != "" {
		t.Errorf("samples (-file +memory):\n%s", diff)
	}
}

// TestFromResultsTakesLabels: the labels given with a result are the
// record's, whatever its Attack says: they are not parsed again. Results
// with equal labels share them, a fleet tag by its value.
func TestFromResultsTakesLabels(t *testing.T) {
	t.Parallel()
	tag := func(attempt int) *archive.FleetTag {
		return &archive.FleetTag{Client: 1, Request: 1, Attempt: attempt, Delay: -1}
	}
	given := []archive.Labels{
		{Surface: "mcp", Source: "10.0.0.1", Stream: "onset"},
		{Surface: "mcp", Source: "10.0.0.1", Stream: "onset"},
		{Surface: "rest", Source: "10.0.0.2", Stream: "fleet", Fleet: tag(1)},
		{Surface: "rest", Source: "10.0.0.2", Stream: "fleet", Fleet: tag(1)},
		{Surface: "rest", Source: "10.0.0.2", Stream: "fleet", Fleet: tag(2)},
	}
	rs := make([]archive.Result, len(given))
	for i, l := range given {
		rs[i] = archive.Result{Result: &vegeta.Result{Attack: "surface=other source=elsewhere stream=unsaid", Code: 200,
			URL: "http://h/api/public/search", Timestamp: results(1)[0].Timestamp.Add(time.Duration(i))}, Labels: l}
	}
	in := FromResults(rs, Options{})
	for i, l := range given {
		if diff := gocmp.Diff(l, *in.Tables().Labels(&in.Records[i])); diff != "" {
			t.Errorf("record %d's labels (-given +got):\n%s", i, diff)
		}
	}
	if a, b := in.Records[0].label, in.Records[1].label; a != b {
		t.Errorf("equal labels at %d and %d", a, b)
	}
	if a, b, c := in.Records[2].label, in.Records[3].label, in.Records[4].label; a != b || b == c {
		t.Errorf("fleet labels at %d, %d, %d: want the first two shared, the third apart", a, b, c)
	}
}

// TestRefusedWith: a surface read with another refusal status
// (Options.RefusedWith) has its answers of that status as refusals, and
// its 429s not; a surface it says nothing of keeps the 429. So read from
// memory, from a results file and from its spilled copy alike, and a
// refusal's body is judged whatever its status.
func TestRefusedWith(t *testing.T) {
	t.Parallel()
	t0 := results(1)[0].Timestamp
	cases := []struct {
		surface string
		code    uint16
		refused bool
	}{
		{"orders", 503, true},
		{"orders", 429, false},
		{"orders", 200, false},
		{"rest", 429, true},
		{"rest", 503, false},
	}
	var rs []vegeta.Result
	for i, c := range cases {
		rs = append(rs, vegeta.Result{Attack: "surface=" + c.surface + " source=127.0.0.1 stream=onset", Code: c.code,
			URL: "http://h/v1/orders", Body: []byte(`{"error":{"code":"slow_down"}}`), Timestamp: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	opts := Options{
		RefusedWith: func(surface string) uint16 { return map[string]uint16{"orders": 503}[surface] },
		Judge:       func(string, []byte) bool { return true },
	}
	labelled := make([]archive.Result, len(rs))
	for i := range rs {
		labelled[i] = archive.Result{Result: &rs[i], Labels: archive.ParseLabel(rs[i].Attack, rs[i].URL)}
	}
	path := filepath.Join(t.TempDir(), "results.bin")
	writeResults(t, path, rs)
	read, err := Read([]string{path}, opts)
	if err != nil {
		t.Fatal(err)
	}
	spill, err := Open([]string{path}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer spill.Close()
	var spilled []Record
	if err := spill.InOrder(func(r *Record) { spilled = append(spilled, *r) }); err != nil {
		t.Fatal(err)
	}
	for name, recs := range map[string][]Record{"memory": FromResults(labelled, opts).Records, "file": read.Records, "spill": spilled} {
		if len(recs) != len(cases) {
			t.Fatalf("%s: %d records, want %d", name, len(recs), len(cases))
		}
		for i, c := range cases {
			if got := recs[i].Refused(); got != c.refused {
				t.Errorf("%s: %s answering %d: refused %v, want %v", name, c.surface, c.code, got, c.refused)
			}
			if _, ok := recs[i].Judged(); ok != c.refused {
				t.Errorf("%s: %s answering %d: body judged %v, want %v (a refusal's, only)", name, c.surface, c.code, ok, c.refused)
			}
		}
	}
}
