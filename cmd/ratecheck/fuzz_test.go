package main

import (
	"strings"
	"testing"
)

// FuzzListFlags: the list flags (--checks, --sources, --allowed-origins)
// and --max-p99-increase parse or say what is wrong, never panic, and
// never accept an empty item or a negative share.
func FuzzListFlags(f *testing.F) {
	for _, s := range []string{"limits,isolation,contract", "a,,b", " ", "limits", "nope", "10%", "-5", "1e309"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if items, err := parseList(s); err == nil {
			for _, it := range items {
				if strings.TrimSpace(it) == "" || strings.Contains(it, ",") {
					t.Fatalf("parseList(%q) gave item %q", s, it)
				}
			}
		}
		if _, checks, err := parseChecks(s); err == nil && len(checks) == 0 {
			t.Fatalf("parseChecks(%q) selected no check", s)
		}
		if p, err := parsePercent(s); err == nil && !(p >= 0) {
			t.Fatalf("parsePercent(%q) = %v", s, p)
		}
	})
}
