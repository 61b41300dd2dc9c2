package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/redact"
)

// checkSources reports the first source address this machine cannot send
// from (a *SourceError): a request from it would fail before it left, or
// leave with a source its answer cannot come back to, and a run of such
// failures proves nothing about the target. It says which limit it met:
// an address this machine does not route to itself (named with the item
// of pool it came from, when it did), or one whose local ports are used
// up (another process holds them: a bind to it finds no free port,
// EADDRINUSE, or the address is this machine's and still no port can be
// assigned, EADDRNOTAVAIL).
func checkSources(sources []string, pool client.Pool) error {
	var check *client.SourceCheck
	for _, src := range sources {
		if src == "" {
			continue
		}
		a, err := netip.ParseAddr(src)
		if err != nil {
			return &SourceError{Source: src, Err: errors.New("not an IP address")}
		}
		if check == nil {
			check = client.NewSourceCheck()
			defer check.Close()
		}
		if err := check.Check(a); err != nil {
			return sourceError(a, pool, err)
		}
	}
	return nil
}

// PortsUsedUp names the local limit of a source address whose local
// ports are all taken.
const PortsUsedUp = "its local ports are used up"

// sourceError words the failed check of a, an address of pool (when it
// has an item holding it).
func sourceError(a netip.Addr, pool client.Pool, err error) *SourceError {
	se := &SourceError{Source: a.String(), Err: err}
	if item, route, ok := pool.Item(a); ok && pool.Items() > 0 {
		se.Item, se.Route = item, route
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	switch {
	case errors.Is(err, client.ErrNotLocal):
		se.Err = client.ErrNotLocal
	case errno == syscall.EADDRINUSE || errno == syscall.EADDRNOTAVAIL:
		// The address is this machine's (the check asked first): no
		// port is left on it.
		se.Err, se.Limit = errno, PortsUsedUp
	}
	return se
}

// maxConnectChecks is how many items of a pool are tried against the
// target before a run: one address of each of the first so many.
const maxConnectChecks = 64

// checkConnect connects, before anything is sent, from the first address
// the run uses of each item of pool (of the first maxConnectChecks) to the
// target's host and port: a TCP handshake, no request, so nothing counts
// toward a limit. An address of the other family than the target's, or
// one the target does not accept a connection from while it accepts one
// from the system's own address (the network does not route the item
// back to this machine), is a *SourceError naming the item. When the
// target accepts no connection at all, it says nothing: the reachability
// check says what is wrong.
func checkConnect(ctx context.Context, target string, sources []string, pool client.Pool, timeout time.Duration) error {
	return checkConnectWith(ctx, target, sources, pool, timeout, dialFrom)
}

// dialFrom connects to hostPort from src ("": the system's own address).
func dialFrom(ctx context.Context, src, hostPort string) (net.Conn, error) {
	return client.SourceDialer(src, 0).DialContext(ctx, "tcp", hostPort)
}

// checkConnectWith is checkConnect connecting with dial. An address the
// target did not accept a connection from is asked once more after the
// system's own address was accepted, so that the two are compared in the
// same state of the network: a neighbour not yet resolved on a link just
// brought up refuses the first connection over it ("no route to host"),
// and the next goes through. Beside two CPU hogs, the first connection
// from a network namespace's IPv6 pool failed so, and the own address's
// right after it was accepted.
func checkConnectWith(ctx context.Context, target string, sources []string, pool client.Pool, timeout time.Duration, dial func(ctx context.Context, src, hostPort string) (net.Conn, error)) error {
	if pool.Items() == 0 {
		return nil
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	host := u.Hostname()
	literal, lerr := netip.ParseAddr(host)
	isLiteral := lerr == nil
	hostPort := net.JoinHostPort(host, port)
	tried := map[string]bool{}
	var fromDefault error // the system's own address: tried once, on the first failure
	defaultTried := false
	for _, src := range sources {
		a, err := netip.ParseAddr(src)
		if err != nil {
			continue
		}
		item, route, ok := pool.Item(a)
		if !ok || tried[item] {
			continue
		}
		if len(tried) == maxConnectChecks {
			break
		}
		tried[item] = true
		if isLiteral {
			if err := checkFamily(a, literal, item, route); err != nil {
				return err
			}
		}
		connects := func(src string) error {
			dctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			conn, err := dial(dctx, src, hostPort)
			if err == nil {
				conn.Close()
			}
			return err
		}
		err = connects(src)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !defaultTried {
			defaultTried = true
			fromDefault = connects("")
		}
		if fromDefault != nil {
			return nil // the target accepts nothing: reachability says so
		}
		if err = connects(src); err == nil {
			continue // the network had settled since (see checkConnectWith)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &SourceError{Source: src, Item: item, Route: route, Unanswered: true,
			Err: fmt.Errorf("%s accepts connections from this machine's own address but not from this one (%v)", hostPort, dialCause(err))}
	}
	return nil
}

// checkFamilies refuses, before anything else, a source of the other
// family than a target given as an address (an IPv6 source cannot reach
// an IPv4 target, nor the reverse), named with its item of pool.
func checkFamilies(target string, sources []string, pool client.Pool) error {
	u, err := url.Parse(target)
	if err != nil {
		return nil
	}
	host, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil // a name: the dialer picks an address of the source's family
	}
	for _, src := range sources {
		a, err := netip.ParseAddr(src)
		if err != nil {
			continue
		}
		item, route, _ := pool.Item(a)
		if err := checkFamily(a, host, item, route); err != nil {
			return err
		}
	}
	return nil
}

// checkFamily refuses source a (of item, holding route) for the target
// address host of the other family.
func checkFamily(a, host netip.Addr, item string, route netip.Prefix) error {
	if a.Is4() == host.Unmap().Is4() {
		return nil
	}
	family := map[bool]string{true: "IPv4", false: "IPv6"}
	return &SourceError{Source: a.String(), Item: item, Route: route,
		Err: fmt.Errorf("an %s source cannot reach the %s target %s", family[a.Is4()], family[host.Unmap().Is4()], host)}
}

// dialCause strips a dial error down to its cause.
func dialCause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// reachableBy checks that the target answers. Before an agreed start (a
// shard) it keeps trying, every second, until that instant: the target may
// still be coming up, as when it is deployed with the shards.
func (e *engine) reachableBy(ctx context.Context, target string) error {
	timeout := e.ReachTimeout
	if timeout <= 0 {
		timeout = 25 * time.Second
	}
	for said := false; ; said = true {
		err := reachable(ctx, e.Network, e.ReachFrom, target, timeout)
		left := time.Until(e.StartAt)
		if _, tlsErr := err.(*TLSError); err == nil || tlsErr || left <= 0 || ctx.Err() != nil {
			return err
		}
		if !said {
			e.emit(WaitingForTarget{Target: target, Err: err})
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Second, left)):
		}
	}
}

// reachable reports whether the target answers HTTP at all (any status)
// within timeout, reached as nw says (nil: HTTP/1.1, the system's roots),
// saying what is wrong when it does not: a failed TLS handshake is a
// *TLSError. It follows no redirect, as the
// attack follows none: a redirect to the same origin (a path) is an
// answer, and one to another scheme, host or port is an error that names
// it (*RedirectError): every request of the attack would get that redirect
// instead of an answer.
func reachable(ctx context.Context, nw *client.Network, from, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, base+"/", nil)
	if err != nil {
		return err
	}
	hc := nw.Client(from, 0)
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	isTLS := client.TLSProblemOf(err) != client.NotTLS
	switch {
	case err == nil:
	case isTLS:
		return &TLSError{Target: base, Err: tlsCause(err)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("no answer to HEAD / within %v: it accepts connections but does not answer (stalled or overloaded)", timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("connection refused: nothing listens there (is the target running? is the port right?)")
	default:
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if loc, err := resp.Location(); err == nil && (loc.Scheme != req.URL.Scheme || loc.Host != req.URL.Host) {
			return &RedirectError{Status: resp.StatusCode, To: redact.URL(loc.String())}
		}
	}
	return nil
}

// warnRemote warns, when a person is watching, before load goes to a
// target that is not on loopback (someone's real service), and gives
// RemoteWait to cancel; it returns ctx's error if they did. When no one
// is watching (CI, scripts) it says nothing and waits for nothing.
func (e *engine) warnRemote(ctx context.Context, target string, planned time.Duration) error {
	if !e.Interactive || IsLoopback(target) {
		return nil
	}
	wait := e.RemoteWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	e.emit(RemoteTarget{Target: target, Planned: planned, Wait: wait})
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
		return nil
	}
}

// IsLoopback reports whether a target URL (empty: the embedded target) is
// on loopback.
func IsLoopback(target string) bool {
	if target == "" {
		return true
	}
	u, err := url.Parse(target)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// waitForStart waits until StartAt (the shards' agreed start), saying so,
// or until ctx ends. An instant already past is a warning, not an error:
// the shard starts at once and analyze reports the skew between shards.
func (e *engine) waitForStart(ctx context.Context) error {
	at := e.StartAt
	if at.IsZero() {
		return nil
	}
	d := time.Until(at)
	if d <= 0 {
		e.emit(StartMissed{At: at, Late: -d})
		return nil
	}
	e.emit(WaitingForStart{At: at, Wait: d})
	return clock.Sleep(ctx, d)
}

// tlsCause strips the request's method and URL from a client error
// (*url.Error), which the message already names.
func tlsCause(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}
