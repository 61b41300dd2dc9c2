package parallel

import (
	"flag"
	"testing"
)

// TestRaise: unless the command line gave -test.parallel, Raise sets it;
// given, it is left as it was.
func TestRaise(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	defer flag.Set("test.parallel", before)
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	Raise(13)
	want := "13"
	if given {
		want = before
	}
	if got := f.Value.String(); got != want {
		t.Errorf("-test.parallel %s after Raise(13) (given on the command line: %v), want %s", got, given, want)
	}
}
