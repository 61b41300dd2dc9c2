package human

import (
	"testing"
	"time"
)

func TestRound(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{333333333 * time.Nanosecond, "333ms"},
		{1990200 * time.Microsecond, "1.99s"},
		{44200 * time.Nanosecond, "44µs"},
		{500 * time.Nanosecond, "1µs"},
		{0, "0s"},
		{6 * time.Second, "6s"},
		{90*time.Minute + 1500*time.Millisecond, "1h30m2s"},
		{-1500 * time.Microsecond, "-1.5ms"},
	} {
		if got := Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%v) = %s, want %s", int64(tt.d), got, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n            int
		noun, plural string
		want         string
	}{
		{1, "request", "", "1 request"},
		{0, "request", "", "0 requests"},
		{2, "false throttle", "", "2 false throttles"},
		{1, "mismatch", "mismatches", "1 mismatch"},
		{3, "mismatch", "mismatches", "3 mismatches"},
	} {
		if got := Count(tt.n, tt.noun, tt.plural); got != tt.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}
