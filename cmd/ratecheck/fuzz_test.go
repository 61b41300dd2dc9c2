package main

import (
	"net"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
)

// FuzzListFlags: the list flags (--checks, --sources, --allowed-origins),
// --max-p99-increase and --shard parse or say what is wrong, never panic,
// and never accept an empty item, a source that is not an address, a
// negative share or a shard out of range. (Durations and instants are
// parsed by the standard library.)
func FuzzListFlags(f *testing.F) {
	for _, s := range []string{"limits,isolation,contract", "a,,b", " ", "limits", "nope", "10%", "-5", "1e309", "0/3", "3/3", "own", "127.0.0.2,::1"} {
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
		if sh, err := attack.ParseShard(s); err == nil && !(0 <= sh.I && sh.I < sh.N) {
			t.Fatalf("ParseShard(%q) = %v", s, sh)
		}
		p := &scenario.Profile{Sources: []string{"127.0.0.1"}, Streams: []scenario.Stream{{Sources: []string{"127.0.0.2"}}}}
		if _, err := replaceSources(p, s); err == nil {
			for _, src := range p.Sources {
				if net.ParseIP(src) == nil {
					t.Fatalf("--sources %q gave source %q", s, src)
				}
			}
			if len(p.Streams[0].Sources) > 0 {
				t.Fatalf("--sources %q left a stream's own sources", s)
			}
		}
	})
}
