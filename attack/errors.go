package attack

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/connectbyjbrh/ratecheck/client"
)

// Errors of Execute that are not about the target: a run stopped by the
// caller, before anything was sent or during the run.
var (
	ErrCancelled   = errors.New("cancelled before sending anything")
	ErrInterrupted = errors.New("interrupted")
)

// SetupError is a run that could not start for a reason of the caller's:
// an embedded target that does not start, a run folder that cannot be
// made, an archive that cannot be written, a source address this machine
// does not have (*SourceError), a revision the target does not speak
// (*RevisionError).
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// SourceError is a source address this machine cannot send from: a
// request from it would fail before it left, or leave with a source its
// answer cannot come back to, and a run of such failures proves nothing
// about the target. Limit, when set, names the local limit met (the
// address is this machine's, but no local port is left on it). Item and
// Route, when set, are the item of the pool (--sources) the address came
// from and the smallest prefix that holds it: Err is client.ErrNotLocal
// when this machine does not route the address to itself, and Unanswered
// is set when the target does not accept connections from it.
type SourceError struct {
	Source     string
	Err        error
	Limit      string
	Item       string
	Route      netip.Prefix
	Unanswered bool
}

func (e *SourceError) Error() string {
	notLocal := errors.Is(e.Err, client.ErrNotLocal)
	switch {
	case e.Limit != "":
		return fmt.Sprintf("cannot send from %s: %s (%v): this machine's own limit, not the target; free them (ss -tanp src %s shows who holds them) or send from another address",
			e.Source, e.Limit, e.Err, e.Source)
	case notLocal && e.Item != "":
		return fmt.Sprintf("%s is not local to this machine (%s is not routed here): make it local with %q (Linux), or give addresses this machine has",
			e.Item, e.Source, RouteCommand(e.Route))
	case notLocal:
		return fmt.Sprintf("cannot send from %s: this machine has no such address (on Linux every 127.0.0.x is local; another address must be one of this machine's, or of a prefix routed here: %s)",
			e.Source, RouteCommand(netip.PrefixFrom(mustAddr(e.Source), mustAddr(e.Source).BitLen())))
	case e.Unanswered:
		return fmt.Sprintf("cannot send from %s (of %s): %v: the network must route %s back to this machine", e.Source, e.Item, e.Err, e.Route)
	case e.Item != "" && e.Item != e.Source:
		return fmt.Sprintf("cannot send from %s (of %s): %v", e.Source, e.Item, e.Err)
	}
	return fmt.Sprintf("cannot send from %s: %v", e.Source, e.Err)
}
func (e *SourceError) Unwrap() error { return e.Err }

// RouteCommand is the Linux command that makes every address of p local
// to this machine, to be sent from with nothing configured per address:
// ip route add local P dev lo (ip -6 for IPv6).
func RouteCommand(p netip.Prefix) string {
	if p.Addr().Is6() {
		return fmt.Sprintf("ip -6 route add local %v dev lo", p)
	}
	return fmt.Sprintf("ip route add local %v dev lo", p)
}

// mustAddr is the address s, or the zero address.
func mustAddr(s string) netip.Addr {
	a, _ := netip.ParseAddr(s)
	return a
}

// UnreachableError is a target that does not answer at all.
type UnreachableError struct {
	Target string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("target %s is unreachable: %v", e.Target, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// TLSError is a target whose TLS handshake failed: it answers, but not to
// a client configured as this one is. Err is the handshake's error
// ([client.TLSProblemOf] says which failure it was).
type TLSError struct {
	Target string
	Err    error
}

func (e *TLSError) Error() string {
	return fmt.Sprintf("TLS with %s failed: %v", e.Target, e.Err)
}
func (e *TLSError) Unwrap() error { return e.Err }

// RedirectError is a target whose HEAD / redirects to another origin: the
// attack follows no redirect, so every request would get that redirect
// instead of an answer (the URL it redirects to is the target to name).
type RedirectError struct {
	Status int
	// To is the redirect's target, credentials redacted.
	To string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("it redirects to %s (%d): the attack follows no redirect, so every request would get that", strconv.QuoteToASCII(e.To), e.Status)
}

// RunError is a run that ended early but archived what it received: Err
// is ErrInterrupted, a *FailingError, a *LocalLimitError (this machine's
// limit) or an archive write error.
type RunError struct {
	Run *Run
	Err error
}

func (e *RunError) Error() string {
	switch {
	case errors.Is(e.Err, ErrInterrupted):
		return fmt.Sprintf("interrupted; the %d results received are archived in %s", e.Run.Results, e.Run.Dir)
	case errorsAsGuard(e.Err):
		return fmt.Sprintf("%v; the %d results received are archived in %s", e.Err, e.Run.Results, e.Run.Dir)
	}
	return fmt.Sprintf("%v (the %d results received are in %s)", e.Err, e.Run.Results, e.Run.Dir)
}
func (e *RunError) Unwrap() error { return e.Err }
