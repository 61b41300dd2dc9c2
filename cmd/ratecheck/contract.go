package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
)

const contractHelp = `
The limits contract: what an API's documentation says its rate limits are,
in a file (docs/contract.md, "The contract file"): its routes (named
requests), the identities the prober sends as (an address role, credential
headers given as ${VARIABLE} or ${file:PATH}, a tier), and its limits (a
quota per window over one route or several, counted by client address, by
a header such as an API key, or globally; how a refusal looks; whether
refusals count; the family when documented).

  show          print the documented API's contract, the one every command
                uses without another, as a contract file
  check FILE    validate a contract file, summarise each limit and print
                what verify --contract would send for it (requests per
                limit and address, the run's length); a bad one exits 2
                naming the file, line and what to write instead
  discover --target URL [--route NAME=PATH]...
                send one request per route and write a contract draft of
                the limits their RateLimit-Policy (or RateLimit-Limit,
                X-RateLimit-Limit) fields advertise, every field nobody
                advertised marked GUESSED (contract discover -h)`

// runContract prints the built-in contract or validates a contract file.
func runContract(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("contract", "show | check FILE | discover --target URL", contractHelp, stderr)
	if code := parseArgs(fs, args); code >= 0 {
		return code
	}
	rest := fs.Args()
	switch {
	case len(rest) == 1 && rest[0] == "show":
		data, err := scenario.Builtin().Marshal()
		if err != nil {
			fmt.Fprintf(stderr, "ratecheck contract: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(stdout, "# The documented API's limits: what verify, analyze, attack, capacity and fleet use\n# unless --rest-limit, --mcp-limit or --window override them.\n%s", data)
		return exitOK
	case len(rest) == 2 && rest[0] == "check":
		c, err := scenario.LoadContract(rest[1])
		if err != nil {
			fmt.Fprintf(stderr, "ratecheck contract check: %v\n", err)
			return exitUsage
		}
		summariseContract(stdout, rest[1], c, os.LookupEnv)
		writeContractPlan(stdout, rest[1])
		return exitOK
	case len(rest) > 0 && rest[0] == "discover":
		return runDiscover(ctx, rest[1:], stdout, stderr)
	case len(rest) == 0:
		return usageErr(stderr, "contract", "say show, check FILE or discover --target URL")
	case rest[0] == "check":
		return usageErr(stderr, "contract", "check takes one contract file, got %d arguments", len(rest)-1)
	}
	return usageErr(stderr, "contract", "unknown action %q: say show, check FILE or discover --target URL", strings.Join(rest, " "))
}

// envRef is the variable a credential reference ${NAME} reads.
var envRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// summariseContract writes what c says, limit by limit, and the
// environment variables its identities read that are not set (lookup
// says which are).
func summariseContract(w io.Writer, file string, c *scenario.Contract, lookup func(string) (string, bool)) {
	fmt.Fprintf(w, "%s: %d routes, %d identities, %d limits\n", file, len(c.Routes), len(c.Identities), len(c.Limits))
	shared := map[string][]string{} // route → the limits over it
	for _, l := range c.Limits {
		for _, r := range l.Routes {
			shared[r] = append(shared[r], l.Name)
		}
	}
	for _, l := range c.Limits {
		quota := fmt.Sprint(l.Quota.N)
		if l.Quota.Tiers != nil {
			var parts []string
			for _, t := range slices.Sorted(maps.Keys(l.Quota.Tiers)) {
				parts = append(parts, fmt.Sprintf("%d (%s)", l.Quota.Tiers[t], t))
			}
			quota = strings.Join(parts, " or ")
		}
		over := "route " + l.Routes[0]
		if len(l.Routes) > 1 {
			over = "routes " + strings.Join(l.Routes, ", ") + ", one budget they share"
		}
		fmt.Fprintf(w, "  limit %s: %s requests per %v on %s, counted by %s; refused with %d", l.Name, quota, time.Duration(l.Window), over, l.Key, l.Refused.Status)
		if l.Refused.JSONRPCCode != 0 {
			fmt.Fprintf(w, " and JSON-RPC %d", l.Refused.JSONRPCCode)
		}
		fmt.Fprintf(w, "; refusals count: %s; family: %s\n", orWord(string(l.RefusalsCount), "unknown"), orWord(l.Family.Name, "not documented"))
		for _, r := range l.Routes {
			if others := slices.DeleteFunc(slices.Clone(shared[r]), func(n string) bool { return n == l.Name }); len(others) > 0 {
				fmt.Fprintf(w, "    route %s is also held to %s (stacked: a request counts against each)\n", r, strings.Join(others, ", "))
			}
		}
	}
	var unset []string
	for _, id := range c.Identities {
		for _, v := range id.Headers {
			if m := envRef.FindStringSubmatch(v); m != nil {
				if _, ok := lookup(m[1]); !ok && !slices.Contains(unset, m[1]) {
					unset = append(unset, m[1])
				}
			}
		}
	}
	if len(unset) > 0 {
		slices.Sort(unset)
		fmt.Fprintf(w, "not set in this environment (a run needs them): %s\n", strings.Join(unset, ", "))
	}
}

// writeContractPlan says what verify --contract of the contract at file
// would send, or why it cannot plan it yet. Credentials are not read: the
// plan does not depend on them.
func writeContractPlan(w io.Writer, file string) {
	vc, err := loadVerifyContract(file, nil)
	if err == nil {
		var p contractPlan
		if p, err = planContract(vc); err == nil {
			p.write(w, file)
			return
		}
	}
	fmt.Fprintf(w, "verify --contract plans nothing for it yet: %v\n", err)
}

// orWord is s, or word when s is empty.
func orWord(s, word string) string {
	if s == "" {
		return word
	}
	return s
}
