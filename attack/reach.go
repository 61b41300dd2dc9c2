package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/redact"
)

// checkSources reports the first source address this machine cannot send
// from (a *SourceError): a request from it would fail before it left, and
// a run of such failures proves nothing about the target. It says which
// limit it met: an address this machine does not have, or one whose local
// ports are used up (another process holds them: a bind to it finds no
// free port, EADDRINUSE, or the address is this machine's and still no
// port can be assigned, EADDRNOTAVAIL).
func checkSources(sources []string) error {
	for _, src := range sources {
		if src == "" {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(src, "0"))
		if err != nil {
			return sourceError(src, err)
		}
		ln.Close()
	}
	return nil
}

// PortsUsedUp names the local limit of a source address whose local
// ports are all taken.
const PortsUsedUp = "its local ports are used up"

// sourceError words the failed bind of src.
func sourceError(src string, err error) *SourceError {
	var errno syscall.Errno
	errors.As(err, &errno)
	switch {
	case errno == syscall.EADDRINUSE:
		return &SourceError{Source: src, Err: errno, Limit: PortsUsedUp}
	case errno == syscall.EADDRNOTAVAIL && isLocalAddress(src):
		return &SourceError{Source: src, Err: errno, Limit: PortsUsedUp}
	case errno == syscall.EADDRNOTAVAIL:
		return &SourceError{Source: src, Err: errors.New("this machine has no such address")}
	}
	return &SourceError{Source: src, Err: err}
}

// isLocalAddress reports whether src is one of this machine's addresses:
// on an interface, or inside a loopback network of one (Linux answers on
// every 127.0.0.x).
func isLocalAddress(src string) bool {
	ip := net.ParseIP(src)
	addrs, err := net.InterfaceAddrs()
	if ip == nil || err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && (n.IP.Equal(ip) || (n.IP.IsLoopback() && n.Contains(ip))) {
			return true
		}
	}
	return false
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
	_, isTLS := client.TLSHint(err)
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
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
