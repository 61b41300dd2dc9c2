package clock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
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

// TestMillisJSON: a Millis writes the bytes the int64 and float64 fields
// it replaces wrote (a whole count without a fraction, a fraction as it
// is, zero left out under omitempty), reads what they read (integers,
// fractions, exponents) and what an int64 field refused (a fraction), and
// reads back to the value it wrote.
func TestMillisJSON(t *testing.T) {
	t.Parallel()
	type doc struct {
		W Millis `json:"window_ms"`
		B Millis `json:"behind_ms,omitempty"`
	}
	for _, tc := range []struct {
		in   Millis
		want string
	}{
		{0, `{"window_ms":0}`},
		{4000, `{"window_ms":4000,"behind_ms":4000}`},
		{86400000, `{"window_ms":86400000,"behind_ms":86400000}`},
		{-5, `{"window_ms":-5,"behind_ms":-5}`},
		{12.345, `{"window_ms":12.345,"behind_ms":12.345}`},
		{0.001, `{"window_ms":0.001,"behind_ms":0.001}`},
		{1e-7, `{"window_ms":1e-7,"behind_ms":1e-7}`},
		{Ms(1234567891 * time.Nanosecond), `{"window_ms":1234.567891,"behind_ms":1234.567891}`},
	} {
		got, err := json.Marshal(doc{tc.in, tc.in})
		if err != nil || string(got) != tc.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", float64(tc.in), got, err, tc.want)
		}
		var back doc
		if err := json.Unmarshal(got, &back); err != nil || back.W != tc.in || back.B != tc.in {
			t.Errorf("%s read back as %+v, %v; want %v", got, back, err, float64(tc.in))
		}
		// the bytes of the types it replaces
		var was []byte
		if w := float64(tc.in); w == math.Trunc(w) {
			was, _ = json.Marshal(int64(w))
		} else {
			was, _ = json.Marshal(w)
		}
		if now, _ := json.Marshal(tc.in); !bytes.Equal(now, was) {
			t.Errorf("%v writes %s, the field it replaces wrote %s", float64(tc.in), now, was)
		}
	}
	for in, want := range map[string]Millis{`4000`: 4000, `4000.0`: 4000, `4e3`: 4000, `12.345`: 12.345, `-5`: -5, `0`: 0} {
		var got Millis
		if err := json.Unmarshal([]byte(in), &got); err != nil || got != want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", in, float64(got), err, float64(want))
		}
	}
	for _, in := range []string{`"4000"`, `true`, `[4000]`} {
		var got Millis
		if err := json.Unmarshal([]byte(in), &got); err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", in, float64(got))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		m := Millis(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-3)))
		b, err := json.Marshal(m)
		var back Millis
		if err != nil || json.Unmarshal(b, &back) != nil || back != m {
			t.Fatalf("%v wrote %s, read back as %v (%v)", float64(m), b, float64(back), err)
		}
	}
}

// TestMillisDuration: a duration in milliseconds and back is the same
// duration where it is whole microseconds or milliseconds, and WholeMs
// truncates as time.Duration.Milliseconds does.
func TestMillisDuration(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, time.Millisecond, 4 * time.Second, time.Minute, 24 * time.Hour, 1500 * time.Microsecond, -3 * time.Millisecond} {
		if got := Ms(d).Duration(); got != d {
			t.Errorf("Ms(%v).Duration() = %v", d, got)
		}
	}
	if got := WholeMs(4999 * time.Microsecond); got != 4 {
		t.Errorf("WholeMs(4.999ms) = %v, want 4", float64(got))
	}
	if got := WholeMs(4 * time.Second); got != 4000 || got.Duration() != 4*time.Second {
		t.Errorf("WholeMs(4s) = %v (%v), want 4000", float64(got), got.Duration())
	}
}
