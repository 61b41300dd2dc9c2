package client

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParsePool: lists, ranges and prefixes, IPv4 and IPv6 mixed, give
// their addresses in the stated order (items as written, each ascending, a
// prefix without its network, anycast or broadcast address), in canonical
// form, without ever listing a large prefix.
func TestParsePool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		list  string
		len   int
		first []string // Take(len(first))
		at    map[int]string
		text  string
	}{
		{"", 0, nil, nil, ""},
		{"10.1.0.5", 1, []string{"10.1.0.5"}, nil, "10.1.0.5"},
		{" 10.1.0.5 , 10.1.0.7", 2, []string{"10.1.0.5", "10.1.0.7"}, nil, "10.1.0.5,10.1.0.7"},
		{"198.18.0.10-198.18.0.250", 241, []string{"198.18.0.10", "198.18.0.11"}, map[int]string{240: "198.18.0.250"}, "198.18.0.10-198.18.0.250"},
		{"198.18.0.0/16", 65534, []string{"198.18.0.1", "198.18.0.2"}, map[int]string{254: "198.18.0.255", 255: "198.18.1.0", 65533: "198.18.255.254"}, "198.18.0.0/16"},
		{"198.18.0.0/31", 2, []string{"198.18.0.0", "198.18.0.1"}, nil, "198.18.0.0/31"},
		{"198.18.0.4/32", 1, []string{"198.18.0.4"}, nil, "198.18.0.4/32"},
		{"2001:db8:2::/112", 65535, []string{"2001:db8:2::1", "2001:db8:2::2"}, map[int]string{65534: "2001:db8:2::ffff"}, "2001:db8:2::/112"},
		{"2001:DB8:2::10-2001:db8:2:0::12", 3, []string{"2001:db8:2::10", "2001:db8:2::11", "2001:db8:2::12"}, nil, "2001:db8:2::10-2001:db8:2::12"},
		{"2001:db8:2::/64", math.MaxInt, []string{"2001:db8:2::1"}, map[int]string{math.MaxInt - 1: "2001:db8:2:0:7fff:ffff:ffff:ffff"}, "2001:db8:2::/64"},
		{"2001:db8:2::ffff:fffe-2001:db8:2::1:0:1", 4, []string{"2001:db8:2::ffff:fffe", "2001:db8:2::ffff:ffff", "2001:db8:2::1:0:0", "2001:db8:2::1:0:1"}, nil, ""},
		{"10.1.0.5,198.18.0.0/30,2001:db8:2::/126", 6, []string{"10.1.0.5", "198.18.0.1", "198.18.0.2", "2001:db8:2::1", "2001:db8:2::2", "2001:db8:2::3"}, nil, "10.1.0.5,198.18.0.0/30,2001:db8:2::/126"},
		{"2001:db8:2::/64,2001:db8:3::/64", math.MaxInt, []string{"2001:db8:2::1"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePool(tt.list)
			if err != nil {
				t.Fatal(err)
			}
			if p.Len() != tt.len {
				t.Errorf("Len() = %d, want %d", p.Len(), tt.len)
			}
			if diff := cmp.Diff(tt.first, p.Take(len(tt.first)), cmp.Comparer(func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") })); diff != "" {
				t.Errorf("Take (-want +got):\n%s", diff)
			}
			for i, want := range tt.at {
				if got := p.At(i).String(); got != want {
					t.Errorf("At(%d) = %s, want %s", i, got, want)
				}
			}
			for i, a := range p.Take(len(tt.first)) {
				if got := p.At(i).String(); got != a {
					t.Errorf("At(%d) = %s, Take says %s", i, got, a)
				}
			}
			if tt.text != "" && p.String() != tt.text {
				t.Errorf("String() = %q, want %q", p.String(), tt.text)
			}
		})
	}
}

// TestParsePoolRefuses: every item that is not a source is refused with
// an error naming it and why.
func TestParsePoolRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ list, want string }{
		{"10.1.0.5,", "item 2 is empty"},
		{"host", `"host" is not an IP address (want an address, a range first-last or a prefix)`},
		{"10.1.0.5,nope", `"nope" is not an IP address`},
		{"fe80::1%eth0", "has a zone"},
		{"fe80::1", "link-local"},
		{"::ffff:10.1.0.5", "write it as 10.1.0.5"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"198.18.0.250-198.18.0.10", "runs backwards"},
		{"198.18.0.1-2001:db8::1", "IPv4 or IPv6, not both"},
		{"198.18.0.1-x", "x is not an IP address"},
		{"198.18.0.5/16", "host bits are set: the prefix is 198.18.0.0/16"},
		{"2001:db8:2::/48", "a /48 is more than a pool may hold: /64 or longer"},
		{"10.0.0.0/7", "/8 or longer"},
		{"198.18.0.0/33", "not a prefix"},
		{"nope/16", "nope is not an IP address"},
		{"2001:db8::-2001:db8:0:1::", "more than 2^64−1 addresses"},
		{"198.18.0.0/16,198.18.0.5", `"198.18.0.5": overlaps 198.18.0.0/16 (at 198.18.0.5)`},
		{"198.18.0.5,198.18.0.0/16", `"198.18.0.0/16": overlaps 198.18.0.5`},
		{"2001:db8:2::10-2001:db8:2::12,2001:db8:2::/120", `overlaps 2001:db8:2::10-2001:db8:2::12`},
		{"10.1.0.5,10.1.0.5", "an address may be named once"},
		{strings.Repeat("10.1.0.5,", MaxPoolItems) + "10.1.0.6", "at most 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			_, err := ParsePool(tt.list)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParsePool(%.60q) = %v, want an error saying %q", tt.list, err, tt.want)
			}
			var pe *PoolError
			if strings.HasPrefix(tt.want, `"`) && !errors.As(err, &pe) {
				t.Errorf("error %v is not a *PoolError", err)
			}
		})
	}
}

// TestPoolItem: an address is traced back to the item it came from, with
// the prefix to route.
func TestPoolItem(t *testing.T) {
	t.Parallel()
	p, err := ParsePool("10.1.0.5,198.18.0.10-198.18.0.250,2001:db8:2::/112,2001:db8:2::1:10-2001:db8:2::1:12")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ addr, item, route string }{
		{"10.1.0.5", "10.1.0.5", "10.1.0.5/32"},
		{"198.18.0.77", "198.18.0.10-198.18.0.250", "198.18.0.0/24"},
		{"2001:db8:2::abcd", "2001:db8:2::/112", "2001:db8:2::/112"},
		{"2001:db8:2::1:11", "2001:db8:2::1:10-2001:db8:2::1:12", "2001:db8:2::1:10/126"},
		{"198.18.0.9", "", ""},
		{"10.1.0.5", "10.1.0.5", "10.1.0.5/32"},
	}
	for _, tt := range tests {
		item, route, ok := p.Item(netip.MustParseAddr(tt.addr))
		if ok != (tt.item != "") || item != tt.item || (ok && route.String() != tt.route) {
			t.Errorf("Item(%s) = %q, %v, %v; want %q, %s", tt.addr, item, route, ok, tt.item, tt.route)
		}
	}
	if v4, v6 := p.Families(); !v4 || !v6 {
		t.Errorf("Families() = %v, %v; want both", v4, v6)
	}
}

// BenchmarkPoolAt: the i-th address of a /64 costs no list.
func BenchmarkPoolAt(b *testing.B) {
	p, err := ParsePool("198.18.0.0/16,2001:db8:2::/64")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		_ = p.At(65534 + i%(1<<20))
	}
}

func ExampleParsePool() {
	p, err := ParsePool("198.18.0.10-198.18.0.12,2001:db8:2::/112")
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Len(), p.Take(5))
	// Output: 65538 [198.18.0.10 198.18.0.11 198.18.0.12 2001:db8:2::1 2001:db8:2::2]
}
