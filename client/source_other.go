//go:build !linux

package client

import (
	"errors"
	"net/netip"
	"syscall"
)

// freeBind is nil where there is no IP_FREEBIND: the plain bind, which
// needs the address on an interface.
var freeBind func(network, address string, c syscall.RawConn) error

// isAddrNotAvail reports whether err is a bind to an address this host
// does not have.
func isAddrNotAvail(err error) bool { return errors.Is(err, syscall.EADDRNOTAVAIL) }

// routeTable is not asked on this system: a plain bind tells.
type routeTable struct{}

func openRouteTable() (*routeTable, error) { return nil, errors.ErrUnsupported }

func (rt *routeTable) close() error { return nil }

func (rt *routeTable) local(netip.Addr) (bool, error) { return false, errors.ErrUnsupported }
