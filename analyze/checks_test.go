package analyze

import (
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// TestCheckRecords: every check of method's list has a record here, and
// every record registered is of a check in the list.
func TestCheckRecords(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range method.Checks() {
		listed[c.Name] = true
		if checkKinds[c.Name] == nil {
			t.Errorf("check %s has no record (register it in its file)", c.Name)
		}
	}
	for name := range checkKinds {
		if !listed[name] {
			t.Errorf("record %s is of no check in method's list", name)
		}
	}
}

// TestAbsentAmongTimeouts: a server without the API whose short listen
// backlog drops most of a burst answers the few requests it takes with
// 501 text/html; that surface is not there, not unanswered (a 5xx is an
// answer), whatever share of the burst timed out. A surface whose only
// answers are 503s is the one that answered nothing but failures.
func TestAbsentAmongTimeouts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		code   uint16
		absent bool
		want   string
	}{
		{"501 text/html", 501, true, "the API is not there: 37 of 37 answers were 404, 405, 501 or not JSON"},
		{"503", 503, false, "none of the 134 requests got an answer other than a failure (97× context deadline exceeded; 37× 5xx)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := decode.NewInput()
			t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC).UnixNano()
			for i := range 134 {
				l := archive.Labels{Surface: method.MCP, Source: "127.0.0.2", Stream: method.StreamOnset}
				at := t0 + int64(i)*int64(time.Millisecond)
				if i%3 == 0 && i < 111 { // 37 answers
					in.Add(l, at, at+int64(time.Millisecond), tt.code, &decode.Answer{Body: []byte("<html>no</html>"), ContentType: "text/html"})
					continue
				}
				in.Add(l, at, at+int64(2*time.Second), 0, &decode.Answer{Err: `Post "http://127.0.0.1/mcp": context deadline exceeded`})
			}
			rep, err := Analyze(in, Config{Window: 6 * time.Second, Limits: map[string]int{method.REST: 240, method.MCP: 120}})
			if err != nil {
				t.Fatal(err)
			}
			for _, sd := range rep.Surfaces {
				if sd.Absent != tt.absent || sd.Premise != tt.want {
					t.Errorf("absent %v, premise %q; want %v, %q", sd.Absent, sd.Premise, tt.absent, tt.want)
				}
			}
		})
	}
}
