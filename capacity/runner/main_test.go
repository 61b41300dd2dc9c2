package runner

import (
	"flag"
	"os"
	"testing"

	"github.com/connectbyjbrh/ratecheck/internal/parallel"
)

// TestMain runs the package's tests up to eight at once: its knee and
// freeze tests spend most of their time waiting out their steps on the
// real clock, and one after another held one of go test's slots for the
// sum of their waits (20 to 40 s of a suite run) while the command's
// tests waited for their build. Each is judged on any host, busy or not:
// the runner's host-delay rule says when the host, not the target, is
// what a step measured.
func TestMain(m *testing.M) {
	flag.Parse()
	parallel.Raise(8)
	os.Exit(m.Run())
}
