package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/method"
)

// newFlagSet returns a flag set for a subcommand whose -h prints synopsis,
// description and flags to stderr.
func newFlagSet(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("ratecheck "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: ratecheck %s %s\n\n%s\n\nFlags:\n", name, synopsis, strings.TrimSpace(description))
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and turns the outcome into an exit code: -1 to go
// on, exitOK after -h, exitUsage on a bad flag (the flag package has said why).
func parseFlags(fs *flag.FlagSet, args []string) int {
	if code := parseArgs(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage
	}
	return -1
}

// parseArgs is parseFlags for commands that take arguments after their flags.
func parseArgs(fs *flag.FlagSet, args []string) int {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case err != nil:
		return exitUsage
	}
	return -1
}

// checkLimits names the first of the limit and window flags that is out of
// range; a zero window means "the default".
func checkLimits(rest, mcp int, window time.Duration) error {
	switch {
	case rest < 1:
		return fmt.Errorf("--rest-limit must be at least 1, got %d", rest)
	case mcp < 1:
		return fmt.Errorf("--mcp-limit must be at least 1, got %d", mcp)
	case window < 0:
		return fmt.Errorf("--window must be positive, got %v", window)
	}
	return nil
}

// limitFlags declares --rest-limit and --mcp-limit, the documented limits.
func limitFlags(fs *flag.FlagSet) (rest, mcp *int) {
	return fs.Int("rest-limit", method.RESTLimit, "documented REST requests per window and address"),
		fs.Int("mcp-limit", method.MCPLimit, "documented MCP calls per window and address")
}

// limitsOf is the documented limits per surface the limit flags gave.
func limitsOf(rest, mcp int) map[string]int {
	return map[string]int{method.REST: rest, method.MCP: mcp}
}

// usageErr prints a usage error for a subcommand and returns exitUsage.
func usageErr(stderr io.Writer, name string, format string, args ...any) int {
	fmt.Fprintf(stderr, "ratecheck %s: %s\n", name, fmt.Sprintf(format, args...))
	return exitUsage
}

// parseInstant reads an RFC 3339 instant given to flag.
func parseInstant(flag, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 instant such as 2026-11-30T09:00:00Z", flag, s)
	}
	return t, nil
}

// parseAddresses reads a comma-separated list of IP addresses.
func parseAddresses(list string) ([]string, error) {
	addrs, err := parseList(list)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if net.ParseIP(a) == nil {
			return nil, fmt.Errorf("%q is not an IP address", a)
		}
	}
	return addrs, nil
}

// replaceSources makes every stream of p send from the addresses of list
// (comma-separated IPs), or from the machine's own address for "own".
func replaceSources(p *scenario.Profile, list string) error {
	var sources []string
	if list != "own" {
		var err error
		if sources, err = parseAddresses(list); err != nil {
			return fmt.Errorf("%w (or use own)", err)
		}
	}
	p.Sources = sources
	for i := range p.Streams {
		p.Streams[i].Sources = nil
	}
	return nil
}

// checkOutFile says what is wrong with an output file flag's value before a
// long run, rather than after it: its directory must exist.
func checkOutFile(flagName, path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s %s: no directory %s to write it in", flagName, path, dir)
	}
	return nil
}
