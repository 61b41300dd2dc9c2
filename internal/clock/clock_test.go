package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSleep: a wait ends with its context's error when the context ends
// first, with none when its timer fires, and at once for no wait.
func TestSleep(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled, no wait: %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Microsecond); err != nil {
		t.Errorf("timer: %v", err)
	}
	if err := Sleep(context.Background(), -time.Second); err != nil {
		t.Errorf("negative wait: %v", err)
	}
}

func TestMs(t *testing.T) {
	t.Parallel()
	if got := Ms(1500 * time.Microsecond); got != 1.5 {
		t.Errorf("Ms(1.5ms) = %v", got)
	}
}
