package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/connectbyjbrh/ratecheck/target"
)

// startEmbedded starts the reference target in-process on a free loopback
// port with the given window and limits (zero: the contract's), quiet.
func startEmbedded(window time.Duration, restLimit, mcpLimit int) (*target.Listener, error) {
	cfg := target.DefaultConfig()
	cfg.Window = window
	if restLimit > 0 {
		cfg.RESTLimit = restLimit
	}
	if mcpLimit > 0 {
		cfg.MCPLimit = mcpLimit
	}
	srv, err := target.New(cfg)
	if err != nil {
		return nil, err
	}
	return target.Listen(srv, "127.0.0.1:0")
}

// checkTarget validates a --target URL.
func checkTarget(raw string) (string, error) {
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

// reachTimeout bounds the reachability probe. A refused connection fails at
// once, so it only bounds a target that accepts and hangs; it is generous
// because a loaded host can stall even a loopback answer for seconds, and
// short enough that a dead target is told within 30 s. (A var: tests
// shorten it.)
var reachTimeout = 25 * time.Second

// reachable reports whether the target answers HTTP at all (any status)
// within timeout.
func reachable(ctx context.Context, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, base+"/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("no answer to HEAD / within %v: it accepts connections but does not answer (stalled or overloaded)", timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("connection refused: nothing listens there (is the target running? is the port right?)")
	default:
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// remoteWait is how long a person at a terminal has to cancel an attack on
// a target that is not on loopback.
var remoteWait = 5 * time.Second

// warnRemote warns, in an interactive terminal, before load goes to a
// target that is not on loopback (someone's real service), and gives
// remoteWait to press Ctrl-C; it returns ctx's error if they did. Off a
// terminal (CI, scripts) it says nothing and waits for nothing.
func warnRemote(ctx context.Context, stderr io.Writer, terminal bool, name, target string, planned time.Duration) error {
	if !terminal || isLoopbackTarget(target) {
		return nil
	}
	fmt.Fprintf(stderr, "ratecheck %s: %s is not a loopback address: this sends real load to it for about %v. Starting in %v; Ctrl-C to cancel.\n",
		name, target, planned.Round(100*time.Millisecond), remoteWait)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(remoteWait):
		return nil
	}
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
