// Package clock holds what several packages share of how the tool treats
// time: a wait that ends early when its context ends, and durations as
// the milliseconds the JSON forms write (Millis).
package clock

import (
	"context"
	"time"
)

// Sleep waits d on a real timer, or until ctx ends, and then returns
// ctx's error. A d of zero or less returns at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Millis is a duration as every JSON the tool writes or reads holds it:
// a number of milliseconds, each `*_ms` field. It is a float64 and
// encoding/json treats it as one: it writes the shortest decimal that
// reads back to the same value, so a whole count of milliseconds is
// written without a fraction (4000, the bytes of the int64 fields some
// forms had before) and a fraction as it is (12.345); it reads integers
// and fractions alike. A duration's own nanoseconds are kept (Ms) except
// where a field has always held whole milliseconds (WholeMs).
type Millis float64

// Ms is d in milliseconds.
func Ms(d time.Duration) Millis { return Millis(float64(d) / 1e6) }

// WholeMs is d in whole milliseconds, truncated toward zero as
// time.Duration.Milliseconds truncates: the value of the fields that have
// always held a whole count (a window, a stream's start, a clock step).
func WholeMs(d time.Duration) Millis { return Millis(d.Milliseconds()) }

// Duration is m as a time.Duration, truncated toward zero to the
// nanosecond, as converting the product to time.Duration truncates.
func (m Millis) Duration() time.Duration {
	return time.Duration(float64(m) * float64(time.Millisecond))
}
