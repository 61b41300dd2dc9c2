package main

import (
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/connectbyjbrh/ratecheck/redact"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// reachTimeout bounds the reachability probe (see attack.Engine); tests
// shorten it.
var reachTimeout = 25 * time.Second

// remoteWait is how long a person at a terminal has to cancel an attack on
// a target that is not on loopback; tests shorten it.
var remoteWait = 5 * time.Second

// runFlags are the flags of every command that sends load: where to, where
// the run folder goes, when to stop adding load to a failing target, the
// MCP revision to speak, the release under test, the embedded target's
// faults, and where the verdict's metrics go.
type runFlags struct {
	target      string
	out         string
	abortAt     string
	mcpRevision string
	label       string
	faults      string
	metrics     string
	keepBodies  bool
}

// declare adds the run flags to fs.
func (rf *runFlags) declare(fs *flag.FlagSet) {
	fs.StringVar(&rf.target, "target", "", "base `URL` of the target (default: the embedded reference target)")
	fs.StringVar(&rf.out, "out", "results", "`dir`ectory the run folder is written under")
	fs.StringVar(&rf.abortAt, "abort-at", "50%", "stop adding load when more than this `share` of the last 100 results were transport errors or 5xx (0: never)")
	fs.BoolVar(&rf.keepBodies, "keep-bodies", false, "archive the first 1 KiB of every answer's body (default: only refusals', other non-2xx answers' and the failure-table probes', which the checks read)")
	fs.StringVar(&rf.mcpRevision, "mcp-revision", "auto", "MCP protocol `revision` to speak: auto (ask the server, then the newest both speak), or one of "+strings.Join(mcpwire.Revisions(), ", "))
	fs.StringVar(&rf.label, "label", "", "the release or build under test, such as v1.4.2, recorded in run.json (ratecheck history makes a series of each label scheme)")
	fs.StringVar(&rf.faults, "faults", "", "faults of the embedded target, such as 5xx=0.05,reset=0.05 or delay=20ms-40ms")
	metricsFlag(fs, &rf.metrics)
}

// checkMCPRevision validates --mcp-revision.
func (rf *runFlags) checkMCPRevision() error {
	if rf.mcpRevision == "auto" || mcpwire.Known(rf.mcpRevision) {
		return nil
	}
	return fmt.Errorf("--mcp-revision %q: want auto or one of %s", rf.mcpRevision, strings.Join(mcpwire.Revisions(), ", "))
}

// mcpSession is the MCP session of a run that negotiates from the source
// address from (the contract probes', never the limit address).
func (rf *runFlags) mcpSession(from string, timeout time.Duration, nw *client.Network) *attack.MCPSession {
	return &attack.MCPSession{Want: rf.mcpRevision, From: from, Timeout: timeout, ClientVersion: version, Network: nw}
}

// negotiationSource picks the address MCP negotiation goes out from when
// the run has no contract address of its own: on a loopback target, the
// first of 127.0.0.250 to 127.0.0.254 that no stream sends from (every
// 127.0.0.x is local on Linux; "" counts as 127.0.0.1), so the handshake
// spends no budget under test; elsewhere the system's choice ("").
func negotiationSource(target string, used []string) string {
	if !loopbackV4(target) {
		return ""
	}
	for _, u := range used {
		if a, err := netip.ParseAddr(u); err == nil && a.Is6() {
			return "" // the embedded target listens on IPv6 loopback
		}
	}
	for n := 250; n <= 254; n++ {
		a := fmt.Sprintf("127.0.0.%d", n)
		if !slices.Contains(used, a) {
			return a
		}
	}
	return ""
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

// options checks the run flags and returns the engine's options for a
// run of command name, its events said on stderr; embedded starts the
// reference target when no --target is given.
func (rf *runFlags) options(name string, stderr io.Writer, embedded func() (*refserver.Listener, error)) (attack.Options, error) {
	if err := rf.checkMCPRevision(); err != nil {
		return attack.Options{}, err
	}
	if err := rf.checkRun(); err != nil {
		return attack.Options{}, err
	}
	abortShare, err := parsePercent(rf.abortAt)
	if err != nil || abortShare > 1 {
		return attack.Options{}, fmt.Errorf("--abort-at %q: want a share such as 50%% (0 never aborts)", rf.abortAt)
	}
	opts := attack.Options{Command: name, Out: rf.out, AbortShare: abortShare, Version: version, Label: rf.label, KeepBodies: rf.keepBodies,
		Interactive: isTerminal(stderr), ReachTimeout: reachTimeout, RemoteWait: remoteWait, Events: engineEvents(stderr, name, "")}
	if rf.target != "" {
		if opts.Target, err = checkTarget(rf.target); err != nil {
			return attack.Options{}, err
		}
		return opts, nil
	}
	opts.Embedded = func() (string, func() error, error) {
		ln, err := embedded()
		if err != nil {
			return "", nil, err
		}
		return ln.URL, ln.Close, nil
	}
	return opts, nil
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
