package attack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
)

// FuzzParseProfile: any bytes as a profile are accepted or refused with a
// *ProfileError naming the file, never a panic; an accepted profile has a
// safe name, and its ceilings (PeakRate, Duration) answer at once, never
// negative, at its own window and compressed.
func FuzzParseProfile(f *testing.F) {
	paths, _ := filepath.Glob("../profiles/*.yaml")
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	paths = append(paths, bad...)
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("policy: {surface: rest}\nstreams:\n  - surface: rest\n    requests: [{path: /x}]\n    pacr: {type: constant}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := scenario.ParseProfile("fuzz.yaml", data)
		if err != nil {
			var pe *scenario.ProfileError
			if !errors.As(err, &pe) || pe.File != "fuzz.yaml" || !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %v (%T) does not name the file", err, err)
			}
			return
		}
		if p == nil || len(p.Streams) == 0 {
			t.Fatalf("accepted a profile with no streams: %q", data)
		}
		if err := scenario.CheckName(p.Name); err != nil {
			t.Fatalf("accepted a profile named %q: %v", p.Name, err)
		}
		for _, w := range []time.Duration{p.Policy.Window.D, time.Second} {
			pl := Plan{Profile: p, Window: w}
			if peak, d := pl.PeakRate(), pl.Duration(); peak < 0 || d < 0 {
				t.Fatalf("at window %v: PeakRate %d, Duration %v", w, peak, d)
			}
		}
	})
}

// FuzzParseSpanRate: spans and rates parse or say what they want, and
// what they accept is never negative.
func FuzzParseSpanRate(f *testing.F) {
	for _, s := range []string{"1.1w", "0.03w", "500ms", "100/s", "6000/m", "216/w", "5/500ms", "7", "-1w", "NaN/s", "1e400w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if sp, err := scenario.ParseSpan(s); err == nil && (sp.D < 0 || sp.W < 0 || sp.W != sp.W) {
			t.Fatalf("ParseSpan(%q) = %+v", s, sp)
		}
		if r, err := scenario.ParseRate(s); err == nil && (r.N < 0 || r.N != r.N || r.Per.D < 0 || r.Per.W < 0) {
			t.Fatalf("ParseRate(%q) = %+v", s, r)
		}
	})
}
