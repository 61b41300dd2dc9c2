package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/internal/human"
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

// parseArgs is parseFlags for commands that take arguments after their
// flags. -h prints the whole usage; a bad flag gets the error, one line of
// hint where there is one (the nearest flag name, a duration's missing
// unit) and where to find every flag, not the whole usage, which would
// scroll the error away.
func parseArgs(fs *flag.FlagSet, args []string) int {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return exitOK
	case err != nil:
		if msg := valueError(fs, err); msg != "" {
			fmt.Fprintf(out, "%s: %s\n", fs.Name(), msg)
			fmt.Fprintf(out, "run '%s -h' for every flag\n", fs.Name())
			return exitUsage
		}
		fmt.Fprintf(out, "%s: %v\n", fs.Name(), err)
		if h := flagHint(fs, err); h != "" {
			fmt.Fprintf(out, "%s: %s\n", fs.Name(), h)
		}
		fmt.Fprintf(out, "run '%s -h' for every flag\n", fs.Name())
		return exitUsage
	}
	return -1
}

// flagHint is one line that helps with the parse error err of fs: the
// flag meant by a misspelt one ("" for none).
func flagHint(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	name = strings.TrimLeft(name, "-")
	best, bestD := "", 3 // at most two edits away
	fs.VisitAll(func(f *flag.Flag) {
		if d := human.EditDistance(name, f.Name); d < bestD || d == bestD && f.Name < best {
			best, bestD = f.Name, d
		}
	})
	if best != "" {
		return fmt.Sprintf("did you mean --%s?", best)
	}
	return ""
}

// valueError says what is wrong with a flag's value when err is its
// parse error ("" for any other error), in place of the flag package's
// "parse error": a duration's bare number lacks its unit, which it names
// (--window 10 has no unit (10s?)), as a contract file's durations do; a
// number or a boolean says what it wants.
func valueError(fs *flag.FlagSet, err error) string {
	var value, name string
	msg := err.Error()
	if n, _ := fmt.Sscanf(msg, "invalid value %q for flag -%s", &value, &name); n != 2 {
		if n, _ := fmt.Sscanf(msg, "invalid boolean value %q for -%s", &value, &name); n != 2 {
			return ""
		}
	}
	name = strings.TrimSuffix(name, ":")
	f := fs.Lookup(name)
	if f == nil {
		return ""
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		if _, err := time.ParseDuration(value + "s"); err == nil {
			return fmt.Sprintf("--%s %s has no unit (%ss?): a duration takes its unit, such as 10s, 500ms or 2m", name, value, value)
		}
		return fmt.Sprintf("--%s %q is not a duration: write it with its unit, such as 10s, 500ms or 2m", name, value)
	case bool:
		return fmt.Sprintf("--%s=%s: want true or false (or the flag alone for true)", name, value)
	case int, int64, uint, uint64:
		return fmt.Sprintf("--%s %q is not a whole number", name, value)
	case float64:
		return fmt.Sprintf("--%s %q is not a number", name, value)
	}
	return ""
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

// parseSources reads a --sources pool (flagName names the flag in its
// errors): addresses, ranges and prefixes, IPv4 and IPv6 mixed, taken in
// the order written (see client.Pool).
func parseSources(flagName, list string) (client.Pool, error) {
	pool, err := client.ParsePool(list)
	if err != nil {
		return client.Pool{}, fmt.Errorf("%s: %v", flagName, err)
	}
	return pool, nil
}

// replaceSources makes every stream of p send from the addresses of list
// (a pool of at most scenario.MaxSources addresses: every stream sends
// from each), or from the machine's own address for "own"; it returns the
// pool (empty for own).
func replaceSources(p *scenario.Profile, list string) (client.Pool, error) {
	var pool client.Pool
	if list != "own" {
		var err error
		if pool, err = client.ParsePool(list); err != nil {
			return pool, fmt.Errorf("%w (or use own)", err)
		}
		if pool.Len() > scenario.MaxSources {
			return pool, fmt.Errorf("%s holds %s addresses, and attack sends every stream from each of its sources: name at most %d (a range, or a longer prefix)",
				pool, addressCount(pool.Len()), scenario.MaxSources)
		}
	}
	p.Sources = pool.Take(pool.Len())
	for i := range p.Streams {
		p.Streams[i].Sources = nil
	}
	return pool, nil
}

// addressCount writes a pool's size, "over 2^63" for a saturated one.
func addressCount(n int) string {
	if n == math.MaxInt {
		return "over 2^63"
	}
	return strconv.Itoa(n)
}

// loopbackV4 reports whether target is the embedded target or on IPv4
// loopback (127.x, localhost), where every 127.0.0.x is a source on
// Linux; ::1 is IPv6's only loopback address.
func loopbackV4(target string) bool {
	if !attack.IsLoopback(target) {
		return false
	}
	u, err := url.Parse(target)
	if err != nil || target == "" {
		return err == nil
	}
	a, err := netip.ParseAddr(u.Hostname())
	return err != nil || a.Unmap().Is4()
}

// embeddedAddr is where the embedded target listens for a run from pool:
// IPv6 loopback when every source is IPv6, IPv4 loopback otherwise.
func embeddedAddr(pool client.Pool) string {
	if v4, v6 := pool.Families(); v6 && !v4 {
		return "[::1]:0"
	}
	return "127.0.0.1:0"
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
