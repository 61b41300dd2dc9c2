package scenario

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxNameLen is the longest profile or stream name.
const MaxNameLen = 64

var nameChars = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckName reports whether name may name a profile or a stream. A profile's
// name becomes a folder under --out, a label in YAML and words on a
// terminal, so it is 1 to [MaxNameLen] ASCII letters, digits, '.', '_' and
// '-', starting with a letter or digit: never a path separator, "..", a
// hidden file, a newline or an escape sequence. The error quotes name with
// its control characters escaped (and cut to a readable length), so it is
// safe to print.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the name is empty")
	case len(name) > MaxNameLen || !nameChars.MatchString(name):
		return fmt.Errorf("name %s: want 1 to %d letters, digits, '.', '_' or '-', starting with a letter or digit", quoteCut(name), MaxNameLen)
	}
	return nil
}

// quoteCut quotes s with strconv.QuoteToASCII, which escapes every control,
// bidi and other non-ASCII character, after cutting it to 80 bytes.
func quoteCut(s string) string {
	if len(s) <= 80 {
		return strconv.QuoteToASCII(s)
	}
	cut := 80
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.QuoteToASCII(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// safeName turns a file name into a valid profile name: every character
// CheckName refuses becomes '-', and the result is cut to MaxNameLen. It is
// the default name of a profile that sets none.
func safeName(base string) string {
	b := []byte(base)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), "._-")
	if len(s) > MaxNameLen {
		s = s[:MaxNameLen]
	}
	if s == "" {
		return "profile"
	}
	return s
}

// Limits on the numbers of a profile, checked at the profile's own window
// (policy.window) by [ParseProfile]. Beyond them a profile is a typo, not a
// test of a rate limit, and the arithmetic of its schedule would overflow.
// The run's ceilings ([Ceilings]) are far lower by default
// and are checked again at the run's window.
const (
	// maxRate is the highest rate any pacer field may name, in requests
	// per second.
	maxRate = 1e6
	// maxSpan is the longest span (start, duration, period, until, ...).
	maxSpan = 366 * 24 * time.Hour
	// minSpan is the shortest span that is not zero: a shorter one would
	// round to nothing (a probe_every of 0 sends no probes).
	minSpan = time.Microsecond
	// maxCount bounds count and burst.
	maxCount = 1_000_000_000
)

// checkSpan says what is wrong with a span of a profile whose window is w.
func checkSpan(field string, s Span, w time.Duration) error {
	if s.IsZero() {
		return nil
	}
	ns := float64(s.D)
	if s.W != 0 {
		ns = s.W * float64(w)
	}
	switch {
	case !(ns <= float64(maxSpan)):
		return fmt.Errorf("%s %v is longer than %d days (at the profile's window %v)", field, s, maxSpan/(24*time.Hour), w)
	case ns < float64(minSpan):
		return fmt.Errorf("%s %v is shorter than %v (at the profile's window %v): it would round to nothing", field, s, minSpan, w)
	}
	return nil
}

// checkRate says what is wrong with a rate of a profile whose window is w.
func checkRate(field string, r Rate, w time.Duration) error {
	if r.N == 0 {
		return nil
	}
	if ps := r.N / (r.Per.W*float64(w) + float64(r.Per.D)) * 1e9; !(ps <= maxRate) {
		return fmt.Errorf("%s %v is %.3g requests per second (at the profile's window %v), above the most a profile may name, %g/s", field, r, ps, w, float64(maxRate))
	}
	return nil
}

// checkNumbers checks every span, rate and count of a pacer against the
// limits above; field names its fields for the line of the error.
func (ps *PacerSpec) checkNumbers(w time.Duration, bad func(field, format string, args ...any) error) error {
	spans := []struct {
		field string
		s     Span
	}{{"duration", ps.Duration}, {"period", ps.Period}, {"over", ps.Over}, {"probe_from", ps.ProbeFrom}, {"probe_every", ps.ProbeEvery}, {"until", ps.Until}}
	for i, st := range ps.Steps {
		spans = append(spans, struct {
			field string
			s     Span
		}{fmt.Sprintf("steps.%d.duration", i), st.Duration})
	}
	for _, f := range spans {
		if err := checkSpan(f.field, f.s, w); err != nil {
			return bad(f.field, "%v", err)
		}
	}
	rates := []struct {
		field string
		r     Rate
	}{{"rate", ps.Rate}, {"from", ps.From}, {"to", ps.To}, {"amplitude", ps.Amplitude}}
	for i, st := range ps.Steps {
		rates = append(rates, struct {
			field string
			r     Rate
		}{fmt.Sprintf("steps.%d.rate", i), st.Rate})
	}
	for _, f := range rates {
		if err := checkRate(f.field, f.r, w); err != nil {
			return bad(f.field, "%v", err)
		}
	}
	if ps.Count > maxCount {
		return bad("count", "count %d is above %d", ps.Count, maxCount)
	}
	if ps.Burst > maxCount {
		return bad("burst", "burst %d is above %d", ps.Burst, maxCount)
	}
	return nil
}
