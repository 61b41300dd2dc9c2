package main

import (
	"io"
	"os"
	"time"

	"github.com/connectbyjbrh/ratecheck/refserver"
)

// embeddedTarget returns a starter of the reference target, in-process on
// a free IPv4 loopback port, quiet, configured by cfg.
func embeddedTarget(cfg refserver.Config) func() (*refserver.Listener, error) {
	return embeddedTargetAt(cfg, "127.0.0.1:0")
}

// embeddedTargetAt is embeddedTarget listening on addr ([::1]:0 for a run
// whose sources are all IPv6: see embeddedAddr).
func embeddedTargetAt(cfg refserver.Config, addr string) func() (*refserver.Listener, error) {
	return func() (*refserver.Listener, error) {
		srv, err := refserver.New(cfg)
		if err != nil {
			return nil, err
		}
		return refserver.Listen(srv, addr)
	}
}

// embeddedWith is the reference target's configuration with window and
// limits (zero: the contract's).
func embeddedWith(window time.Duration, restLimit, mcpLimit int) refserver.Config {
	cfg := refserver.DefaultConfig()
	cfg.Window = window
	if restLimit > 0 {
		cfg.RESTLimit = restLimit
	}
	if mcpLimit > 0 {
		cfg.MCPLimit = mcpLimit
	}
	return cfg
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
