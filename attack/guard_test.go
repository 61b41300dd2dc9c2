package attack

import (
	"errors"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestFailureGuard: the guard trips only once a full window of results
// holds more than the allowed share of failures, and 429s are not failures.
func TestFailureGuard(t *testing.T) {
	codes := func(n int, code uint16) []uint16 {
		out := make([]uint16, n)
		for i := range out {
			out[i] = code
		}
		return out
	}
	tests := []struct {
		name   string
		max    float64
		codes  []uint16
		tripAt int // index of the result that trips it; -1: never
	}{
		{"healthy", 0.5, codes(300, 200), -1},
		{"refusals are answers", 0.5, codes(300, 429), -1},
		{"a dead target", 0.5, codes(300, 0), 9},
		{"turns to 503", 0.5, append(codes(50, 200), codes(100, 503)...), 55}, // the 6th failure of 10
		{"20% faults pass", 0.5, func() []uint16 {
			var c []uint16
			for i := range 300 {
				c = append(c, map[bool]uint16{true: 503, false: 200}[i%5 == 0])
			}
			return c
		}(), -1},
		{"off", 0, codes(300, 0), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := FailureGuard{Window: 10, Max: tt.max}
			at := -1
			for i, c := range tt.codes {
				if err := g.Add(&vegeta.Result{Code: c}); err != nil {
					var fe *FailingError
					if !errors.As(err, &fe) || fe.Of != 10 {
						t.Fatalf("error %v", err)
					}
					at = i
					break
				}
			}
			if at != tt.tripAt {
				t.Errorf("tripped at %d, want %d", at, tt.tripAt)
			}
		})
	}
}
