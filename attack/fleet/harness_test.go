package fleet

import (
	"testing"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// TestHarnessLabels: a client program's request is archived under the
// label the harness has always written (the fleet tag, then the answer it
// gave and the request's fingerprint), carries those labels typed, and is
// a scripted fault exactly when the harness scripted one.
func TestHarnessLabels(t *testing.T) {
	h := NewHarness(HarnessConfig{Surface: "rest", Clients: 2})
	h.base = "http://127.0.0.1:1"
	for _, tc := range []struct {
		a        refserver.Arrival
		label    string
		scripted bool
	}{
		{refserver.Arrival{Client: 1, Request: 1, Attempt: 1, Answer: "barrier", Fingerprint: "00aa11bb22cc33dd", Path: "/api/public/search", Status: 429},
			"surface=rest source=127.0.0.1 stream=fleet client=1 request=1 attempt=1 delay=-1 answer=barrier fp=00aa11bb22cc33dd", false},
		{refserver.Arrival{Client: 2, Request: 3, Attempt: 1, Answer: "fault", Fingerprint: "0123456789abcdef", Path: "/api/public/search", Status: 503},
			"surface=rest source=127.0.0.1 stream=fleet client=2 request=3 attempt=1 delay=-1 answer=fault fp=0123456789abcdef", true},
		{refserver.Arrival{Client: 2, Request: 4, Attempt: 1, Answer: "answer", Fingerprint: "0123456789abcdef", Path: "/mcp", Repeat: true, Status: 400},
			"surface=mcp source=127.0.0.1 stream=fleet client=2 request=4 attempt=1 delay=-1 repeat=answer answer=answer fp=0123456789abcdef", false},
	} {
		h.record(tc.a)
		r := <-h.Results()
		if r.Attack != tc.label {
			t.Errorf("label %q, want %q", r.Attack, tc.label)
		}
		if got := archive.ParseLabel(r.Attack, r.URL); r.Labels.String() != r.Attack || *got.Fleet != *r.Labels.Fleet || got.Surface != r.Labels.Surface {
			t.Errorf("labels %+v (tag %+v) are not those of their label %q", r.Labels, *r.Labels.Fleet, r.Attack)
		}
		if got := (&Programs{}).ScriptedFault(r); got != tc.scripted {
			t.Errorf("ScriptedFault(%q) = %v, want %v", r.Attack, got, tc.scripted)
		}
	}
}
