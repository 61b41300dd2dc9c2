package archive

import (
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestLabels: what Label and FleetLabel write, ParseLabel reads back, and a
// label without a surface takes the URL's.
func TestLabels(t *testing.T) {
	tag := FleetTag{Client: 7, Request: 2, Attempt: 3, Delay: 1500 * time.Microsecond}
	for _, tc := range []struct {
		label, url string
		want       Labels
	}{
		{Label("rest", "127.0.0.1", "onset"), "", Labels{Surface: "rest", Source: "127.0.0.1", Stream: "onset"}},
		{Label("mcp", "", "probe"), "", Labels{Surface: "mcp", Source: DefaultSource, Stream: "probe"}},
		{FleetLabel("rest", "127.0.0.2", "fleet", tag), "", Labels{Surface: "rest", Source: "127.0.0.2", Stream: "fleet", Fleet: &tag}},
		{"", "http://127.0.0.1:8080/mcp", Labels{Surface: "mcp", Source: DefaultSource}},
		{"", "http://h/api/public/search?q=x", Labels{Surface: "rest", Source: DefaultSource}},
		{"", "http://h/other", Labels{Surface: "other", Source: DefaultSource}},
		{"surface=rest source=127.0.0.1 stream=onset client=1", "", Labels{Surface: "rest", Source: "127.0.0.1", Stream: "onset"}}, // no attempt: not a fleet tag
	} {
		if diff := gocmp.Diff(tc.want, ParseLabel(tc.label, tc.url)); diff != "" {
			t.Errorf("ParseLabel(%q, %q) (-want +got):\n%s", tc.label, tc.url, diff)
		}
	}
	if got := LabelValue("surface=rest source=127.0.0.1 stream=onset", "stream"); got != "onset" {
		t.Errorf("LabelValue = %q", got)
	}
}
