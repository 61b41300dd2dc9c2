package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Span is a duration that may be written in units of the window: "1.1w" is
// 1.1 windows, "500ms" an absolute duration. The zero value is zero.
type Span struct {
	// D is an absolute duration, added to W windows.
	D time.Duration
	// W is a multiple of the window.
	W float64
}

// ParseSpan reads "1.1w", "0.03w" or a Go duration such as "500ms".
func ParseSpan(s string) (Span, error) {
	s = strings.TrimSpace(s)
	if num, ok := strings.CutSuffix(s, "w"); ok {
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || !(f >= 0) || math.IsInf(f, 1) { // NaN and Inf too
			return Span{}, fmt.Errorf("%q: want a non-negative number of windows such as 1.1w", s)
		}
		return Span{W: f}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return Span{}, fmt.Errorf("%q: want a duration such as 500ms or 2s, or windows such as 1.1w", s)
	}
	return Span{D: d}, nil
}

// In returns the span as a duration for a window of length w. A span in
// windows saturates at the longest duration instead of overflowing, and one
// above zero is at least 1ns: it never rounds to nothing.
func (s Span) In(w time.Duration) time.Duration {
	d := s.D
	if s.W != 0 && w > 0 {
		wd := s.W * float64(w)
		switch {
		case wd >= math.MaxInt64-float64(max(d, 0)): // float64(MaxInt64) is 2^63
			return math.MaxInt64
		case wd < 1:
			wd = 1
		}
		d += time.Duration(wd)
	}
	return d
}

// IsZero reports whether the span is zero.
func (s Span) IsZero() bool { return s.D == 0 && s.W == 0 }

// String returns the span as written.
func (s Span) String() string {
	switch {
	case s.W != 0 && s.D != 0:
		return strconv.FormatFloat(s.W, 'g', -1, 64) + "w+" + s.D.String()
	case s.W != 0:
		return strconv.FormatFloat(s.W, 'g', -1, 64) + "w"
	}
	return s.D.String()
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Span) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSpan(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return &lineError{Line: n.Line, Msg: fmt.Sprintf("bad duration %v", errOr(err, "want a scalar"))}
	}
	*s = v
	return nil
}

// Rate is a request rate: "100/s", "6000/m", or "216/w" (per window).
type Rate struct {
	// N requests per Per.
	N float64
	// Per is the rate's unit of time.
	Per Span
}

// ParseRate reads "N/s", "N/m", "N/w", "N/500ms" or a bare "N" (per second).
func ParseRate(s string) (Rate, error) {
	num, unit, found := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || !(n >= 0) || math.IsInf(n, 1) { // NaN and Inf too
		return Rate{}, fmt.Errorf("%q: want a rate such as 100/s, 6000/m or 216/w", s)
	}
	per := Span{D: time.Second}
	if found {
		switch unit {
		case "s":
		case "m":
			per = Span{D: time.Minute}
		case "w":
			per = Span{W: 1}
		default:
			if per, err = ParseSpan(unit); err != nil || per.IsZero() {
				return Rate{}, fmt.Errorf("%q: want a rate such as 100/s, 6000/m or 216/w", s)
			}
		}
	}
	return Rate{N: n, Per: per}, nil
}

// PerSecond returns the rate in requests per second for a window of length w.
func (r Rate) PerSecond(w time.Duration) float64 {
	return r.N / r.Per.In(w).Seconds()
}

// String returns the rate as written.
func (r Rate) String() string {
	per := r.Per.String()
	switch r.Per {
	case Span{D: time.Second}:
		per = "s"
	case Span{D: time.Minute}:
		per = "m"
	case Span{W: 1}:
		per = "w"
	}
	return strconv.FormatFloat(r.N, 'g', -1, 64) + "/" + per
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseRate(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return &lineError{Line: n.Line, Msg: fmt.Sprintf("bad rate %v", errOr(err, "want a scalar"))}
	}
	*r = v
	return nil
}

func errOr(err error, msg string) string {
	if err != nil {
		return err.Error()
	}
	return msg
}

// lineError is an error at a line of a profile.
type lineError struct {
	Line int
	Msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }
