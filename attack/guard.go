package attack

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// FailureGuard watches the last Window results and trips when more than
// Max of them were transport errors or 5xx: the target is failing, and a
// load generator must stop adding load to it. Transport errors that never
// left this machine (out of file descriptors, out of local ports) are the
// tool's own limit, not the target's: when they are most of the failures
// the guard says so (*LocalLimitError). Execute keeps one per run
// (Options.Guard); a simulation of a run keeps the same. Not safe for
// concurrent use.
type FailureGuard struct {
	// Window is how many of the latest results are judged (default 100).
	Window int
	// Max is the share of failures that trips the guard; 0 never trips
	// during the run (Final still judges the whole run).
	Max float64
	// Scripted, when set, names the faults the target scripted on purpose
	// (see FaultScripter): they are counted as answered.
	Scripted func(archive.Result) bool

	ring             []uint8 // 0 answered, failed, local
	next, n          int
	fail, local      int // in the ring
	total, allFailed int // of the whole run: results, and whether each failed
	allLocal         int
	lastLocal        string
}

// The kinds of result the guard counts.
const (
	answered uint8 = iota
	failed
	localFailure
)

// FailingError says the guard tripped: the target is failing.
type FailingError struct {
	Failed, Of int
	Max        float64
	// All is set when every result of the run failed (see Final).
	All bool
}

func (e *FailingError) Error() string {
	if e.All {
		return fmt.Sprintf("the target is failing: all %d results were transport errors or 5xx", e.Of)
	}
	return fmt.Sprintf("the target is failing: %d of the last %d results were transport errors or 5xx (more than %.0f%%), so the attack stopped adding load",
		e.Failed, e.Of, 100*e.Max)
}

// LocalLimitError says the results failed on this machine's own limits
// (file descriptors, local ports) before reaching the target: the tool's
// limit, never the target's failure.
type LocalLimitError struct {
	Failed, Of int
	// Err is the kind of one of the errors (see archive.ErrKind): "too
	// many open files", "cannot assign requested address", "address
	// already in use".
	Err string
}

func (e *LocalLimitError) Error() string {
	return fmt.Sprintf("this machine's own limit, not the target: %d of %d results failed before leaving it (%s); raise the descriptor limit (ulimit -n) or free local ports, or lower the load (fewer clients, a lower rate)",
		e.Failed, e.Of, e.Err)
}

// isLocalLimit reports whether a transport error is one of this machine's
// limits: too many open files (EMFILE, ENFILE), no local address or port
// left (EADDRNOTAVAIL), or the source address's local ports all taken, by
// another process or by this run (EADDRINUSE: a bind to it found no free
// port), as an error or as the text Vegeta archives.
func isLocalLimit(err string) bool {
	for _, s := range localLimitTexts {
		if strings.Contains(err, s) {
			return true
		}
	}
	return false
}

var localLimitTexts = []string{syscall.EMFILE.Error(), syscall.ENFILE.Error(), syscall.EADDRNOTAVAIL.Error(), syscall.EADDRINUSE.Error()}

// Add counts r and returns a *FailingError once the target is failing, or
// a *LocalLimitError once most failures were this machine's own.
func (g *FailureGuard) Add(r archive.Result) error {
	kind := answered
	switch {
	case r.Code == 0 && isLocalLimit(r.Error):
		kind = localFailure
		g.lastLocal = archive.ErrKind(r.Error) // not the URL, which may carry a credential
	case (r.Code == 0 || r.Code >= 500) && (g.Scripted == nil || !g.Scripted(r)):
		kind = failed
	}
	g.total++
	if kind != answered {
		g.allFailed++
	}
	if kind == localFailure {
		g.allLocal++
	}
	if g.Max <= 0 {
		return nil
	}
	if g.ring == nil {
		if g.Window <= 0 {
			g.Window = 100
		}
		g.ring = make([]uint8, g.Window)
	}
	if g.n == len(g.ring) {
		g.count(g.ring[g.next], -1)
	} else {
		g.n++
	}
	g.ring[g.next] = kind
	g.count(kind, 1)
	g.next = (g.next + 1) % len(g.ring)
	if g.n == len(g.ring) && float64(g.fail) > g.Max*float64(g.n) {
		if 2*g.local >= g.fail {
			return &LocalLimitError{Failed: g.local, Of: g.n, Err: g.lastLocal}
		}
		return &FailingError{Failed: g.fail, Of: g.n, Max: g.Max}
	}
	return nil
}

func (g *FailureGuard) count(kind uint8, d int) {
	if kind != answered {
		g.fail += d
	}
	if kind == localFailure {
		g.local += d
	}
}

// Final judges the whole run once it ended, whatever Max and however few
// its results: when more than a tenth of them failed on this machine's own
// limits, the run measured the machine, not the target
// (*LocalLimitError); when every result failed, the run is no pass (a
// handful of requests that all timed out is a failing target).
func (g *FailureGuard) Final() error {
	switch {
	case g.total == 0:
		return nil
	case 10*g.allLocal > g.total:
		return &LocalLimitError{Failed: g.allLocal, Of: g.total, Err: g.lastLocal}
	case g.allFailed == g.total:
		return &FailingError{Failed: g.allFailed, Of: g.total, All: true}
	}
	return nil
}

// errorsAsGuard reports whether err is the guard's (failing or local).
func errorsAsGuard(err error) bool {
	return errors.As(err, new(*FailingError)) || errors.As(err, new(*LocalLimitError))
}
