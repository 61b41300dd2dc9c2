package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// TestHeadersRetryAfterOvertaken holds the headers check's Retry-After to
// what the target promised: one more admission once the time has passed,
// to whichever request is counted first. A limiter that forgets
// refusals admits one request at 0 s and 239 from 2 s on (window 60 s,
// limit 240), refuses one at 3 s with Retry-After: 57 (the first ages out
// at 60 s: honest), and at 60.5 s has room for exactly one more. p is
// sent at 60.5 s; where the address sent another request while p was on
// its way, that one may have been counted first and taken the place, so
// p's refusal contradicts nothing. Where nothing else was sent before
// p's answer, the refusal contradicts the promise.
func TestHeadersRetryAfterOvertaken(t *testing.T) {
	t.Parallel()
	const s, ms = int64(time.Second), int64(time.Millisecond)
	tests := []struct {
		name string
		q    int64 // when the other request is sent (0: never)
		fail bool
	}{
		{"another request sent while p was in flight took the place", 60*s + 500*ms + 1*ms, false},
		{"nothing else sent", 0, true},
		{"the other request sent after p's answer", 60*s + 600*ms, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := decode.NewInput()
			t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC).UnixNano()
			l := archive.Labels{Surface: method.REST, Source: "127.0.0.1", Stream: method.StreamFlood}
			ok := &decode.Answer{Body: []byte(`{"results":[]}`)}
			add := func(start, end int64, code uint16, a *decode.Answer) {
				in.Add(l, t0+start, t0+end, code, a)
			}
			add(0, ms, 200, ok)
			for i := range int64(239) {
				add(2*s+i*ms, 2*s+i*ms+ms, 200, ok)
			}
			add(3*s, 3*s+ms, 429, &decode.Answer{Body: refusals[method.REST].Body, RetryAfter: "57", Advert: "Retry-After: 57"})
			p := 60*s + 500*ms
			add(p, p+50*ms, 429, &decode.Answer{Body: refusals[method.REST].Body, RetryAfter: "60", Advert: "Retry-After: 60"})
			if tt.q != 0 {
				add(tt.q, tt.q+ms, 200, ok)
			}
			rep, err := Analyze(in, Config{Window: synthW, Limits: map[string]int{method.REST: 240}, Surfaces: []string{method.REST}})
			if err != nil {
				t.Fatal(err)
			}
			var verdict, detail string
			for _, sf := range rep.Verdict.Surfaces {
				for _, c := range sf.Checks {
					if c.Name == "headers" {
						verdict, detail = c.Verdict, c.Detail
					}
				}
			}
			contradicted := verdict == Fail && strings.Contains(detail, "Retry-After=57 on the 429 at +3s, but the request at +1m0.5s")
			if contradicted != tt.fail {
				t.Errorf("headers %s: %s; want the refusal at +1m0.5s contradicting Retry-After: %v", verdict, detail, tt.fail)
			}
		})
	}
}
