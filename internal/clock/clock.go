// Package clock holds what several packages share of how the tool treats
// time: a wait that ends early when its context ends, and durations as
// the float milliseconds the JSON forms write.
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

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / 1e6 }
