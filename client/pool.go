package client

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/netip"
	"slices"
	"strings"
)

// MaxPoolItems is the most items (addresses, ranges, prefixes) a pool
// may be written with.
const MaxPoolItems = 1024

// Pool is an ordered set of source addresses, written as a
// comma-separated list of items, IPv4 and IPv6 mixed:
//
//   - an address: 10.1.0.5, 2001:db8:2::10;
//   - a range, first and last included: 198.18.0.10-198.18.0.250,
//     2001:db8:2::10-2001:db8:2::12;
//   - a prefix: 198.18.0.0/16, 2001:db8:2::/112.
//
// A pool never lists its addresses: [Pool.At] computes the i-th, so a /64
// costs what one address costs. Its order is the order the items are
// written in and, within an item, ascending. A prefix leaves out its
// first address (IPv4's network address, IPv6's subnet-router anycast)
// and, for IPv4 up to a /30, its last (the broadcast address): of
// 198.18.0.0/16 the pool's addresses are 198.18.0.1 … 198.18.255.254, of
// 2001:db8:2::/112 they are 2001:db8:2::1 … 2001:db8:2::ffff. Every
// address is in its canonical text form (lower case, zeros compressed), as
// a server sees the client. Items may not overlap.
//
// The zero value is an empty pool. A Pool is immutable and safe for
// concurrent use.
type Pool struct {
	blocks []block
	n      int // addresses in all, saturating at math.MaxInt
}

// block is one item of a pool: n addresses from first, ascending.
type block struct {
	text  string // as the item is written, canonical
	first netip.Addr
	n     uint64
	route netip.Prefix // the smallest prefix that holds the block
}

// PoolError is an item of a pool that is not an address, range or
// prefix a source can be taken from. Item is the item as written.
type PoolError struct {
	Item string
	Err  error
}

// Error names the item and what is wrong with it.
func (e *PoolError) Error() string {
	if rest, ok := strings.CutPrefix(e.Err.Error(), e.Item+" "); ok { // "x" is not …, not "x": x is not …
		return fmt.Sprintf("%q %s", e.Item, rest)
	}
	return fmt.Sprintf("%q: %v", e.Item, e.Err)
}

// Unwrap returns the reason.
func (e *PoolError) Unwrap() error { return e.Err }

// ParsePool reads a pool from its comma-separated items (see [Pool]). It
// is strict: an empty item, a name rather than an address, an address with
// a zone, an IPv4-mapped IPv6 address, the unspecified, a multicast or a
// link-local address, a range that runs backwards or mixes IPv4 and
// IPv6, a prefix with host bits set, an IPv6 prefix shorter than /64 or
// an IPv4 one shorter than /8, an item of more than 2^64−1 addresses, more
// than MaxPoolItems items, and two items that overlap are errors (a
// *PoolError naming the item, but for the count of items). An empty list
// is an empty pool.
func ParsePool(list string) (Pool, error) {
	var p Pool
	if strings.TrimSpace(list) == "" {
		return p, nil
	}
	items := strings.Split(list, ",")
	if len(items) > MaxPoolItems {
		return Pool{}, fmt.Errorf("%d items: at most %d (write a range or a prefix for many addresses)", len(items), MaxPoolItems)
	}
	for i, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			return Pool{}, fmt.Errorf("item %d is empty", i+1)
		}
		b, err := parseBlock(item)
		if err != nil {
			return Pool{}, &PoolError{Item: item, Err: err}
		}
		p.blocks = append(p.blocks, b)
		p.n = satAdd(p.n, b.n)
	}
	if err := p.checkOverlap(); err != nil {
		return Pool{}, err
	}
	return p, nil
}

// PoolOf returns the pool of addresses, in their order: each its own
// item. It panics on an address that ParsePool refuses, or on two alike.
func PoolOf(addrs ...netip.Addr) Pool {
	texts := make([]string, len(addrs))
	for i, a := range addrs {
		texts[i] = a.String()
	}
	p, err := ParsePool(strings.Join(texts, ","))
	if err != nil {
		panic(err)
	}
	return p
}

// parseBlock reads one item.
func parseBlock(item string) (block, error) {
	switch {
	case strings.Contains(item, "/"):
		pfx, err := netip.ParsePrefix(item)
		if err != nil {
			if a, _, ok := strings.Cut(item, "/"); ok {
				if _, aerr := netip.ParseAddr(a); aerr != nil {
					return block{}, addrError(a, aerr)
				}
			}
			return block{}, errors.New("not a prefix such as 198.18.0.0/16 or 2001:db8:2::/112")
		}
		a := pfx.Addr()
		if err := checkAddr(a); err != nil {
			return block{}, err
		}
		if pfx.Masked() != pfx {
			return block{}, fmt.Errorf("host bits are set: the prefix is %v", pfx.Masked())
		}
		bits, least := pfx.Bits(), 64
		if a.Is4() {
			least = 8
		}
		if bits < least {
			return block{}, fmt.Errorf("a /%d is more than a pool may hold: /%d or longer", bits, least)
		}
		size := a.BitLen() - bits // the host bits, at most 64
		b := block{text: pfx.String(), first: a, route: pfx}
		switch {
		case a.Is4() && size >= 2: // not the network nor the broadcast address
			b.first, b.n = a.Next(), uint64(1)<<size-2
		case a.Is6() && size >= 2: // not the subnet-router anycast address
			b.first, b.n = a.Next(), math.MaxUint64>>(64-size) // 2^size − 1
		default:
			b.n = uint64(1) << size
		}
		if err := checkAddr(b.last()); err != nil {
			return block{}, err
		}
		return b, nil
	case strings.Contains(item, "-"):
		lo, hi, _ := strings.Cut(item, "-")
		first, err := parseAddr(strings.TrimSpace(lo))
		if err != nil {
			return block{}, err
		}
		last, err := parseAddr(strings.TrimSpace(hi))
		if err != nil {
			return block{}, err
		}
		switch {
		case first.Is4() != last.Is4():
			return block{}, errors.New("a range is IPv4 or IPv6, not both")
		case last.Less(first):
			return block{}, errors.New("the range runs backwards: write the lower address first")
		}
		span, ok := distance(first, last)
		if !ok {
			return block{}, errors.New("more than 2^64−1 addresses: a pool item holds at most an IPv6 /64")
		}
		return block{text: first.String() + "-" + last.String(), first: first, n: span + 1, route: covering(first, last)}, nil
	}
	a, err := parseAddr(item)
	if err != nil {
		return block{}, err
	}
	return block{text: a.String(), first: a, n: 1, route: netip.PrefixFrom(a, a.BitLen())}, nil
}

// parseAddr reads one address of an item.
func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return a, addrError(s, err)
	}
	return a, checkAddr(a)
}

// addrError words an address that does not parse.
func addrError(s string, err error) error {
	if strings.Contains(s, "%") {
		return fmt.Errorf("%s has a zone: a source address is written without one", s)
	}
	return fmt.Errorf("%s is not an IP address (want an address, a range first-last or a prefix)", s)
}

// checkAddr refuses an address no request can come from.
func checkAddr(a netip.Addr) error {
	switch {
	case a.Zone() != "":
		return fmt.Errorf("%s has a zone: a source address is written without one", a)
	case a.Is4In6():
		return fmt.Errorf("%s is an IPv4-mapped IPv6 address: write it as %v", a, a.Unmap())
	case a.IsUnspecified():
		return fmt.Errorf("%s is the unspecified address: leave the sources out for the system's choice", a)
	case a.IsMulticast():
		return fmt.Errorf("%s is a multicast address", a)
	case a.IsLinkLocalUnicast():
		return fmt.Errorf("%s is link-local: it needs an interface to be sent from", a)
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%s is the broadcast address", a)
	}
	return nil
}

// last is the block's last address.
func (b block) last() netip.Addr { return add(b.first, b.n-1) }

// checkOverlap refuses two items that share an address: it would send
// from it twice as often as the pool's order says.
func (p Pool) checkOverlap() error {
	order := make([]int, len(p.blocks))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return p.blocks[i].first.Compare(p.blocks[j].first) })
	for k := 1; k < len(order); k++ {
		a, b := p.blocks[order[k-1]], p.blocks[order[k]]
		if a.first.Is4() == b.first.Is4() && b.first.Compare(a.last()) <= 0 {
			first, second := a, b
			if order[k] < order[k-1] {
				first, second = b, a
			}
			return &PoolError{Item: second.text, Err: fmt.Errorf("overlaps %s (at %v): an address may be named once", first.text, b.first)}
		}
	}
	return nil
}

// Len returns how many addresses the pool holds, saturating at
// math.MaxInt.
func (p Pool) Len() int { return p.n }

// Items returns how many items the pool was written with.
func (p Pool) Items() int { return len(p.blocks) }

// At returns the pool's i-th address (0 ≤ i < Len), in its order.
func (p Pool) At(i int) netip.Addr {
	if i < 0 {
		panic(fmt.Sprintf("client: Pool.At(%d)", i))
	}
	k := uint64(i)
	for _, b := range p.blocks {
		if k < b.n {
			return add(b.first, k)
		}
		k -= b.n
	}
	panic(fmt.Sprintf("client: Pool.At(%d) of %d addresses", i, p.n))
}

// Take returns the pool's first n addresses (all of them when it holds
// fewer), in its order and canonical text form.
func (p Pool) Take(n int) []string {
	n = min(max(n, 0), p.n)
	out := make([]string, 0, n)
	for _, b := range p.blocks {
		for k := uint64(0); k < b.n && len(out) < n; k++ {
			out = append(out, add(b.first, k).String())
		}
		if len(out) == n {
			break
		}
	}
	return out
}

// Families reports whether the pool holds IPv4 addresses, and whether
// it holds IPv6 ones.
func (p Pool) Families() (v4, v6 bool) {
	for _, b := range p.blocks {
		if b.first.Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	return v4, v6
}

// Item returns the item that holds address a, as the pool writes it
// (canonical: 198.18.0.0/16, 198.18.0.10-198.18.0.250, 10.1.0.5), the
// smallest prefix that holds the item (the one to route to this host), and
// whether a is in the pool at all.
func (p Pool) Item(a netip.Addr) (item string, route netip.Prefix, ok bool) {
	for _, b := range p.blocks {
		if a.Is4() == b.first.Is4() && a.Compare(b.first) >= 0 && a.Compare(b.last()) <= 0 {
			return b.text, b.route, true
		}
	}
	return "", netip.Prefix{}, false
}

// String returns the pool's items, canonical, comma-separated.
func (p Pool) String() string {
	texts := make([]string, len(p.blocks))
	for i, b := range p.blocks {
		texts[i] = b.text
	}
	return strings.Join(texts, ",")
}

// satAdd is n + k, saturating at math.MaxInt.
func satAdd(n int, k uint64) int {
	if k > uint64(math.MaxInt-n) {
		return math.MaxInt
	}
	return n + int(k)
}

// add returns a + k, which the caller knows is in a's family.
func add(a netip.Addr, k uint64) netip.Addr {
	if a.Is4() {
		b := a.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		v += uint32(k)
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	hi, lo := split(a)
	lo, carry := bits.Add64(lo, k, 0)
	return join(hi+carry, lo)
}

// distance returns last − first and whether it fits a uint64 below its
// maximum (an item may hold at most 2^64−1 addresses).
func distance(first, last netip.Addr) (uint64, bool) {
	if first.Is4() {
		f, l := first.As4(), last.As4()
		fv := uint64(f[0])<<24 | uint64(f[1])<<16 | uint64(f[2])<<8 | uint64(f[3])
		lv := uint64(l[0])<<24 | uint64(l[1])<<16 | uint64(l[2])<<8 | uint64(l[3])
		return lv - fv, true
	}
	fh, fl := split(first)
	lh, ll := split(last)
	d, borrow := bits.Sub64(ll, fl, 0)
	dh := lh - fh - borrow
	return d, dh == 0 && d < math.MaxUint64
}

// covering is the smallest prefix that holds first and last.
func covering(first, last netip.Addr) netip.Prefix {
	n := first.BitLen()
	for ; n > 0; n-- {
		p := netip.PrefixFrom(first, n).Masked()
		if p.Contains(last) {
			return p
		}
	}
	return netip.PrefixFrom(first, 0).Masked()
}

// split returns an IPv6 address as two 64-bit halves.
func split(a netip.Addr) (hi, lo uint64) {
	b := a.As16()
	for i := range 8 {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return hi, lo
}

// join is the IPv6 address of two 64-bit halves.
func join(hi, lo uint64) netip.Addr {
	var b [16]byte
	for i := range 8 {
		b[7-i], b[15-i] = byte(hi>>(8*i)), byte(lo>>(8*i))
	}
	return netip.AddrFrom16(b)
}
