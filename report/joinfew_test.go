package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/analyze"
)

// TestCountsLineBounded: a surface of a million sources prints a line of
// a few, not of every one (issue 15: a 4.8 MB line).
func TestCountsLineBounded(t *testing.T) {
	var d analyze.SurfaceDetail
	for i := range 1_000_000 {
		d.Sources = append(d.Sources, fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255))
	}
	line := countsLine(d)
	if len(line) > 400 || !strings.Contains(line, "and 999992 more") {
		t.Errorf("a line of %d bytes: %.300q", len(line), line)
	}
	d.Sources = d.Sources[:3]
	if line := countsLine(d); !strings.Contains(line, "from 10.0.0.0, 10.0.0.1, 10.0.0.2:") {
		t.Errorf("three sources: %q", line)
	}
}
