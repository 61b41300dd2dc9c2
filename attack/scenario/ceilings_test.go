package scenario

import (
	"errors"
	"testing"
	"time"
)

// TestCeilings: a run above its rate or its length is refused with the
// facts of what is above (the rate first), and one at a ceiling is not.
func TestCeilings(t *testing.T) {
	c := Ceilings{Rate: 100, Duration: time.Minute}
	tests := []struct {
		name    string
		peak    int
		planned time.Duration
		want    *CeilingError
		text    string
	}{
		{"within", 100, time.Minute, nil, ""},
		{"rate", 101, time.Minute, &CeilingError{Profile: "p.yaml", Window: 6 * time.Second, OverRate: true, Rate: 101, Ceilings: c},
			"p.yaml at window 6s sends up to 101 requests in one second, above the ceiling of 100"},
		{"both: the rate first", 200, time.Hour, &CeilingError{Profile: "p.yaml", Window: 6 * time.Second, OverRate: true, Rate: 200, Ceilings: c},
			"p.yaml at window 6s sends up to 200 requests in one second, above the ceiling of 100"},
		{"length", 1, 61500 * time.Millisecond, &CeilingError{Profile: "p.yaml", Window: 6 * time.Second, Duration: 61500 * time.Millisecond, Ceilings: c},
			"p.yaml at window 6s runs for 1m2s, above the ceiling of 1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Check("p.yaml", 6*time.Second, tt.peak, tt.planned)
			var ce *CeilingError
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.want == nil:
			case !errors.As(err, &ce) || *ce != *tt.want || err.Error() != tt.text:
				t.Fatalf("error %#v (%v), want %#v (%s)", err, err, tt.want, tt.text)
			}
		})
	}
	if err := DefaultCeilings.Check("p", time.Minute, 1000, 15*time.Minute); err != nil {
		t.Errorf("the default ceilings refuse a run at them: %v", err)
	}
}
