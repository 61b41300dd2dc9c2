package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/connectbyjbrh/ratecheck/redact"
)

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
		"analyze":  {"judge archived runs or Vegeta results files against the documented limits", runAnalyze},
		"attack":   {"run a scenario profile against a target and archive the results", runAttack},
		"capacity": {"find the knee: the highest rate the API sustains within a latency objective and error budget", runCapacity},
		"contract": {"print the documented API's limits contract, or validate a contract file and summarise its limits", runContract},
		"compare":  {"compare a run with a baseline: throughput, latency, limits, verdicts; exit 1 on a regression", runCompare},
		"report":   {"write a self-contained HTML report with charts of a run", runReport},
		"serve":    {"run the reference target that speaks the documented contract", runServe},
		"verify":   {"prove the documented limits hold: probe plan, archive, analysis, verdict", runVerify},
		"history":  {"trend every archived run, find where a change began; exit 1 on a regression with --fail-on", runHistory},
		"fleet":    {"drive retrying clients into a shared 429 and show whether their jitter spreads them out", runFleet},
		"k8s-job":  {"print the Kubernetes Indexed Job that runs an attack, or a capacity search (--capacity), as shards on many machines", runK8sJob},
		"version":  {"print the version", runVersion},
	}
}

func main() {
	routeLog(os.Stderr)
	os.Exit(runSignalled(os.Args[1:], os.Stdout, os.Stderr))
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
			names := slices.Sorted(maps.Keys(commands()))
			fmt.Fprintf(stderr, "ratecheck help: unknown command %q (the commands are %s)\n", rest[0], strings.Join(names, ", "))
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
4 inconclusive (the run did not produce the evidence a selected check needs),
130 or 143 interrupted by SIGINT or SIGTERM (what the run received is archived).
`)
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "", "Print the version of ratecheck.", stderr)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	fmt.Fprintln(stdout, "ratecheck", version)
	return exitOK
}
