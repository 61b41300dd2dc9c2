package archive

import (
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestLabels: what Labels.String writes, ParseLabel reads back, and a
// label without a surface takes the URL's.
func TestLabels(t *testing.T) {
	tag := FleetTag{Client: 7, Request: 2, Attempt: 3, Delay: 1500 * time.Microsecond}
	for _, tc := range []struct {
		label, url string
		want       Labels
	}{
		{Labels{Surface: "rest", Source: "127.0.0.1", Stream: "onset"}.String(), "", Labels{Surface: "rest", Source: "127.0.0.1", Stream: "onset"}},
		{Labels{Surface: "mcp", Stream: "probe"}.String(), "", Labels{Surface: "mcp", Source: DefaultSource, Stream: "probe"}},
		{Labels{Surface: "rest", Source: "127.0.0.2", Stream: "fleet", Fleet: &tag}.String(), "", Labels{Surface: "rest", Source: "127.0.0.2", Stream: "fleet", Fleet: &tag}},
		{"", "http://127.0.0.1:8080/mcp", Labels{Surface: "mcp", Source: DefaultSource}},
		{"", "http://h/api/public/search?q=x", Labels{Surface: "rest", Source: DefaultSource}},
		{"", "http://h/other", Labels{Surface: "other", Source: DefaultSource}},
		{"surface=rest source=127.0.0.1 stream=onset client=1", "", Labels{Surface: "rest", Source: "127.0.0.1", Stream: "onset"}}, // no attempt: not a fleet tag
	} {
		if diff := gocmp.Diff(tc.want, ParseLabel(tc.label, tc.url)); diff != "" {
			t.Errorf("ParseLabel(%q, %q) (-want +got):\n%s", tc.label, tc.url, diff)
		}
	}
}

// TestLabelsString: the label of each kind of result the engine sends, as
// the archive has always written it, and read back by ParseLabel into the
// labels it was written from: what the engine knew of a result when it
// sent is what a reader of its file knows.
func TestLabelsString(t *testing.T) {
	for _, tc := range []struct {
		l    Labels
		want string
	}{
		{Labels{Surface: "rest", Source: "127.0.0.1", Stream: "onset"}, "surface=rest source=127.0.0.1 stream=onset"},
		{Labels{Surface: "mcp", Source: DefaultSource, Stream: "probe"}, "surface=mcp source=default stream=probe"},
		{Labels{Surface: "rest", Source: "10.0.0.2", Stream: "fleet", Fleet: &FleetTag{Client: 3, Request: 1, Attempt: 2, Delay: 41 * time.Millisecond}},
			"surface=rest source=10.0.0.2 stream=fleet client=3 request=1 attempt=2 delay=41000000"},
		{Labels{Surface: "rest", Source: "127.0.0.1", Stream: "fleet", Fleet: &FleetTag{Client: 4, Request: 5, Attempt: 1, Delay: -1, Repeat: true, Answer: "fault", Fingerprint: "0123456789abcdef"}},
			"surface=rest source=127.0.0.1 stream=fleet client=4 request=5 attempt=1 delay=-1 repeat=answer answer=fault fp=0123456789abcdef"},
		{Labels{Surface: "mcp", Source: "127.0.0.1", Stream: "fleet", Fleet: &FleetTag{Client: 2, Request: 2, Attempt: 1, Delay: -1, Answer: "pass", Fingerprint: "0000111122223333"}},
			"surface=mcp source=127.0.0.1 stream=fleet client=2 request=2 attempt=1 delay=-1 answer=pass fp=0000111122223333"},
	} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
		if diff := gocmp.Diff(tc.l, ParseLabel(tc.l.String(), "")); diff != "" {
			t.Errorf("ParseLabel(%q) (-want +got):\n%s", tc.want, diff)
		}
	}
}
