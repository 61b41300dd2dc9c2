package runner

import "testing"

func TestStreamNames(t *testing.T) {
	for _, c := range []struct {
		step, k int
		name    string
	}{{0, 0, "step-00"}, {7, 0, "step-07"}, {7, 2, "step-07.2"}, {123, 1, "step-123.1"}} {
		if got := streamName(c.step, c.k); got != c.name {
			t.Errorf("streamName(%d, %d) = %q, want %q", c.step, c.k, got, c.name)
		}
	}
}
