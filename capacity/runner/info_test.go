package runner

import (
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// TestOptionsOfACorruptRunJSON: an objective read back from run.json that
// does not parse is reported as run.json's, not as a bad --slo flag the
// user never gave.
func TestOptionsOfACorruptRunJSON(t *testing.T) {
	t.Parallel()
	_, err := optionsOf(&archive.CapacityInfo{SLO: "p99<100ms"})
	if err == nil {
		t.Fatal("a corrupt slo parsed")
	}
	if msg := err.Error(); !strings.HasPrefix(msg, `run.json's capacity section: slo "p99<100ms": want a quantile`) || strings.Contains(msg, "--") {
		t.Errorf("error %q, want it to name run.json's slo and no flag", msg)
	}
}
