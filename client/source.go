package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// ErrNotLocal is the reason an address cannot be sent from when this
// machine does not route it to itself: it is on no interface and in no
// prefix routed to the host as local.
var ErrNotLocal = errors.New("not local to this machine")

// SourceDialer returns a dialer whose connections go out from source ("":
// the system's choice), each dial bounded by timeout (0: none). On Linux
// the socket is bound with IP_FREEBIND or IPV6_FREEBIND, so that any
// address of a prefix routed to the host as local (ip route add local
// PREFIX dev lo) is a source with nothing configured for it; elsewhere
// the bind is a plain one, and the address must be on an interface.
func SourceDialer(source string, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{KeepAlive: 30 * time.Second, Timeout: timeout}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
		d.Control = freeBind
	}
	return d
}

// SourceCheck tells whether this machine can send from an address,
// before a run sends from it. The zero value is not usable: make one with
// NewSourceCheck and Close it. It is not safe for concurrent use.
type SourceCheck struct {
	routes *routeTable // nil: no routing table to ask; a plain bind tells
}

// NewSourceCheck returns a check of source addresses. On Linux it asks
// the kernel's routing table (netlink); where that cannot be had, and on
// other systems, a plain bind tells whether an address is local.
func NewSourceCheck() *SourceCheck {
	rt, err := openRouteTable()
	if err != nil {
		rt = nil
	}
	return &SourceCheck{routes: rt}
}

// Close releases the check's resources.
func (c *SourceCheck) Close() error {
	if c.routes == nil {
		return nil
	}
	return c.routes.close()
}

// Check returns nil when a TCP socket can be bound to a (on a free port)
// as requests from it will be: a wrapped ErrNotLocal when this machine
// does not route a to itself (with IP_FREEBIND a bind would succeed all the
// same, and every request would go out with a source its answer cannot
// come back to), else the bind's error (its local ports used up, say).
func (c *SourceCheck) Check(a netip.Addr) error {
	local, err := c.local(a)
	if err != nil {
		return err
	}
	if !local {
		return fmt.Errorf("%v is %w", a, ErrNotLocal)
	}
	lc := net.ListenConfig{Control: freeBind}
	ln, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		return err
	}
	return ln.Close()
}

// local reports whether a is this machine's: by its routing table when
// there is one to ask, else by a plain bind (no IP_FREEBIND), which only
// an address on an interface, or of a local route of IPv4, passes.
func (c *SourceCheck) local(a netip.Addr) (bool, error) {
	if a.IsLoopback() {
		return true, nil
	}
	if c.routes != nil {
		return c.routes.local(a)
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		if isAddrNotAvail(err) {
			return false, nil
		}
		return true, nil // another bind error: the address is there, its ports may not be
	}
	return true, ln.Close()
}
