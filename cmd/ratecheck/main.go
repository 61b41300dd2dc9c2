package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/redact"
)

// Exit codes of every command.
const (
	exitOK          = 0 // verified, or the command did what it was asked
	exitCheckFailed = 1 // a check failed
	exitUsage       = 2 // bad usage, configuration or input
	exitUnreachable = 3 // the target could not be reached, or failed during the run
	// exitInconclusive: the run could not gather the evidence a selected
	// check needs (nothing refused, every request unanswered, the API not
	// there). A CI gate must never read it as a pass.
	exitInconclusive = 4
)

// verdictExit is the exit code of a verdict: 0 pass, 1 fail, 4 inconclusive.
func verdictExit(verdict string) int {
	switch verdict {
	case analyze.Pass:
		return exitOK
	case analyze.Inconclusive:
		return exitInconclusive
	}
	return exitCheckFailed
}

// version is the tool's version, recorded in every archived run.
var version = "0.1.0-dev"

// command is one subcommand: a one-line summary and a function that parses its
// own flags and returns an exit code.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands returns the subcommands by name.
func commands() map[string]command {
	return map[string]command{
		"analyze": {"judge archived runs or Vegeta results files against the documented limits", runAnalyze},
		"attack":  {"run a scenario profile against a target and archive the results", runAttack},
		"compare": {"compare a run with a baseline: throughput, latency, limits, verdicts; exit 1 on a regression", runCompare},
		"report":  {"write a self-contained HTML report with charts of a run", runReport},
		"serve":   {"run the reference target that speaks the documented contract", runServe},
		"verify":  {"prove the documented limits hold: probe plan, archive, analysis, verdict", runVerify},
		"fleet":   {"drive retrying clients into a shared 429 and show whether their jitter spreads them out", runFleet},
		"k8s-job": {"print the Kubernetes Indexed Job that runs an attack as shards on many machines", runK8sJob},
		"version": {"print the version", runVersion},
	}
}

func main() {
	routeLog(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// routeLog sends the standard logger's output to w through the credential
// redaction: net/http logs there, and what it logs may quote what a hostile
// target sent (an unsolicited response on an idle connection, its
// Set-Cookie included).
func routeLog(w io.Writer) { log.SetOutput(redact.Writer(w)) }

// run dispatches args to a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			if c, ok := commands()[rest[0]]; ok {
				return c.run(ctx, []string{"-h"}, stdout, stdout)
			}
			fmt.Fprintf(stderr, "ratecheck help: unknown command %q\n", rest[0])
			return exitUsage
		}
		usage(stdout)
		return exitOK
	}
	c, ok := commands()[name]
	if !ok {
		fmt.Fprintf(stderr, "ratecheck: unknown command %q\n\n", name)
		usage(stderr)
		return exitUsage
	}
	return c.run(ctx, rest, stdout, stderr)
}

// usage prints the command list.
func usage(w io.Writer) {
	fmt.Fprint(w, `ratecheck verifies, from the outside, that an API's documented rate limits hold.

Usage:
  ratecheck COMMAND [flags]
  ratecheck help COMMAND

Commands:
`)
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprint(w, `
Exit codes: 0 verified, 1 a check failed, 2 bad usage, config or input, 3 target unreachable or failing,
4 inconclusive (the run did not produce the evidence a selected check needs).
`)
}

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

// usageErr prints a usage error for a subcommand and returns exitUsage.
func usageErr(stderr io.Writer, name string, format string, args ...any) int {
	fmt.Fprintf(stderr, "ratecheck %s: %s\n", name, fmt.Sprintf(format, args...))
	return exitUsage
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "", "Print the version of ratecheck.", stderr)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	fmt.Fprintln(stdout, "ratecheck", version)
	return exitOK
}
