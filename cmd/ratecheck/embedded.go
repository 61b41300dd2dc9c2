package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/redact"
	"github.com/connectbyjbrh/ratecheck/target"
)

// embeddedTarget returns a starter of the reference target, in-process on
// a free loopback port, quiet, configured by cfg.
func embeddedTarget(cfg target.Config) func() (*target.Listener, error) {
	return func() (*target.Listener, error) {
		srv, err := target.New(cfg)
		if err != nil {
			return nil, err
		}
		return target.Listen(srv, "127.0.0.1:0")
	}
}

// embeddedWith is the reference target's configuration with window and
// limits (zero: the contract's).
func embeddedWith(window time.Duration, restLimit, mcpLimit int) target.Config {
	cfg := target.DefaultConfig()
	cfg.Window = window
	if restLimit > 0 {
		cfg.RESTLimit = restLimit
	}
	if mcpLimit > 0 {
		cfg.MCPLimit = mcpLimit
	}
	return cfg
}

// checkTarget validates a --target URL.
func checkTarget(raw string) (string, error) {
	if err := redact.CheckBaseURL(raw); err != nil {
		return "", fmt.Errorf("--target %v", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("--target: not a URL; want a base URL such as http://127.0.0.1:8080") // raw may hold a secret
	}
	if u.User != nil {
		// A password in the URL would be archived in run.json, the report
		// and every message: refuse it, and never echo it.
		return "", fmt.Errorf("--target %s carries credentials (user:password@): the contract's surfaces authenticate nothing, so remove them", u.Redacted())
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--target %q: want a base URL such as http://127.0.0.1:8080", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// reachTimeout bounds the reachability probe (see attack.Engine); tests
// shorten it.
var reachTimeout = 25 * time.Second

// remoteWait is how long a person at a terminal has to cancel an attack on
// a target that is not on loopback; tests shorten it.
var remoteWait = 5 * time.Second

// runFlags are the flags of every command that sends load: where to, where
// the run folder goes, and when to stop adding load to a failing target.
type runFlags struct {
	target  string
	out     string
	abortAt string
}

// declare adds the run flags to fs.
func (rf *runFlags) declare(fs *flag.FlagSet) {
	fs.StringVar(&rf.target, "target", "", "base `URL` of the target (default: the embedded reference target)")
	fs.StringVar(&rf.out, "out", "results", "`dir`ectory the run folder is written under")
	fs.StringVar(&rf.abortAt, "abort-at", "50%", "stop adding load when more than this `share` of the last 100 results were transport errors or 5xx (0: never)")
}

// window is w, or when w is zero the default: documented for a --target,
// embedded for the embedded target (which runs in compressed time).
func (rf *runFlags) window(w, documented, embedded time.Duration) time.Duration {
	switch {
	case w != 0:
		return w
	case rf.target == "":
		return embedded
	}
	return documented
}

// engine checks the run flags and returns the engine of a run of command
// name, writing its messages to stderr; embedded starts the reference
// target when no --target is given.
func (rf *runFlags) engine(name string, stderr io.Writer, embedded func() (*target.Listener, error)) (*attack.Engine, error) {
	abortShare, err := parsePercent(rf.abortAt)
	if err != nil || abortShare > 1 {
		return nil, fmt.Errorf("--abort-at %q: want a share such as 50%% (0 never aborts)", rf.abortAt)
	}
	e := &attack.Engine{Command: name, Out: rf.out, AbortShare: abortShare, Version: version, Stderr: stderr,
		Terminal: isTerminal(stderr), ReachTimeout: reachTimeout, RemoteWait: remoteWait}
	if rf.target != "" {
		if e.Target, err = checkTarget(rf.target); err != nil {
			return nil, err
		}
		return e, nil
	}
	e.Embedded = func() (string, func() error, error) {
		ln, err := embedded()
		if err != nil {
			return "", nil, err
		}
		return ln.URL, ln.Close, nil
	}
	return e, nil
}

// exitFor is the exit code of an engine's outcome: 0 done, 1 cancelled or
// interrupted, 3 an unreachable or failing target, 2 anything else (a
// setup or archive error).
func exitFor(err error) int {
	var unreachable *attack.UnreachableError
	var failing *attack.FailingError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, attack.ErrCancelled), errors.Is(err, attack.ErrInterrupted):
		return exitCheckFailed
	case errors.As(err, &unreachable), errors.As(err, &failing):
		return exitUnreachable
	}
	return exitUsage
}

// failed says what stopped a run of command name and returns its exit code.
func failed(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "ratecheck %s: %v\n", name, err)
	return exitFor(err)
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// headerFlag collects repeated --header 'K: V' flags.
type headerFlag http.Header

func (h headerFlag) String() string { return "" }

func (h headerFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, ":")
	k = strings.TrimSpace(k)
	if !ok || k == "" || strings.ContainsAny(k, " \t") {
		return fmt.Errorf("want 'Name: value', got %q", s)
	}
	http.Header(h).Add(k, strings.TrimSpace(v))
	return nil
}
