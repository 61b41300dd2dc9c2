package client

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// freeBind is a net.Dialer and net.ListenConfig Control that lets the
// socket bind an address the host does not have on an interface
// (IP_FREEBIND; IPV6_FREEBIND for IPv6, or IP_FREEBIND on kernels before
// 4.15, which covers IPv6 sockets too). It needs no privilege.
func freeBind(network, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if network == "tcp6" || network == "udp6" {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_IPV6, unix.IPV6_FREEBIND, 1)
			if !errors.Is(serr, unix.ENOPROTOOPT) {
				return
			}
		}
		serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("setting IP_FREEBIND: %w", serr)
	}
	return nil
}

// isAddrNotAvail reports whether err is a bind to an address this host
// does not have.
func isAddrNotAvail(err error) bool { return errors.Is(err, syscall.EADDRNOTAVAIL) }

// routeTable asks the kernel's routing table (a netlink socket,
// NETLINK_ROUTE) how it routes an address, as ip route get does.
type routeTable struct {
	fd  int
	seq uint32
}

// openRouteTable opens the netlink socket.
func openRouteTable() (*routeTable, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	tv := unix.Timeval{Sec: 2}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &routeTable{fd: fd}, nil
}

func (rt *routeTable) close() error { return unix.Close(rt.fd) }

// local reports whether the kernel routes a to this host: its route to a
// is of type local (an address on an interface, a loopback network, a
// prefix routed with ip route add local … dev lo). No route at all is not
// local.
func (rt *routeTable) local(a netip.Addr) (bool, error) {
	rt.seq++
	family, dst := unix.AF_INET6, a.AsSlice()
	if a.Is4() {
		family = unix.AF_INET
	}
	const attrLen = unix.SizeofRtAttr
	size := unix.SizeofNlMsghdr + unix.SizeofRtMsg + attrLen + len(dst)
	b := make([]byte, size)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(size))
	ne.PutUint16(b[4:], unix.RTM_GETROUTE)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], rt.seq)
	m := b[unix.SizeofNlMsghdr:]
	m[0], m[1] = byte(family), byte(len(dst)*8) // rtm_family, rtm_dst_len
	attr := m[unix.SizeofRtMsg:]
	ne.PutUint16(attr[0:], uint16(attrLen+len(dst)))
	ne.PutUint16(attr[2:], unix.RTA_DST)
	copy(attr[attrLen:], dst)
	if err := unix.Sendto(rt.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, fmt.Errorf("asking the routing table about %v: %w", a, err)
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(rt.fd, buf, 0)
		if err != nil {
			return false, fmt.Errorf("asking the routing table about %v: %w", a, err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return false, fmt.Errorf("asking the routing table about %v: %w", a, err)
		}
		for _, msg := range msgs {
			if msg.Header.Seq != rt.seq {
				continue // an answer to an earlier question that timed out
			}
			switch msg.Header.Type {
			case unix.NLMSG_ERROR:
				if len(msg.Data) < 4 {
					return false, fmt.Errorf("asking the routing table about %v: a short answer", a)
				}
				errno := syscall.Errno(-int32(ne.Uint32(msg.Data)))
				switch errno {
				case 0:
					continue
				case unix.ENETUNREACH, unix.EHOSTUNREACH, unix.EINVAL:
					return false, nil // no route to it at all
				}
				return false, fmt.Errorf("asking the routing table about %v: %w", a, errno)
			case unix.RTM_NEWROUTE:
				if len(msg.Data) < unix.SizeofRtMsg {
					return false, fmt.Errorf("asking the routing table about %v: a short answer", a)
				}
				return msg.Data[7] == unix.RTN_LOCAL, nil // rtm_type
			}
		}
	}
}
