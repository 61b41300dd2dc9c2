package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// serveOptions are the flags of "ratecheck serve".
type serveOptions struct {
	addr           string
	window         time.Duration
	restLimit      int
	mcpLimit       int
	limiter        string
	advertise      string
	faults         string
	seed           uint64
	allowedOrigins string
	quiet          bool
	pool           refserver.Pool
	// contract is the file of --contract ("": the documented limits), and
	// set the flags given.
	contract string
	set      map[string]bool
}

const serveHelp = `
Run the reference target: a REST surface under /api/public/ (search, pages,
manifests; 240 GETs per rolling window per client address) and an MCP endpoint
at /mcp (protocol revision 2026-07-28; 120 calls per rolling window per client
address), answering every row of the documented failure table.

--limiter picks the limiting algorithm. Only "rolling" is the documented one;
the others are deliberately wrong, to prove the verifier fails on them:
  rolling        at most L requests in any rolling window, refused ones counted
  fixed-window   L admitted per window aligned to the server's start
  token-bucket   capacity L, refilled L per window, refusals cost nothing
  admitted-only  rolling window that forgets refused requests
  off-by-one     rolling window that admits L+1
  sliding-window-counter
                 the previous fixed window's count, weighted, plus the current one's
  shared-budget  rolling window with one budget for every client address
  fixed-window-per-address
                 L admitted per window, opened by the address's first request
                 after its last window ended
  leaky-bucket   nginx's limit_req: L at once, then one per W/L; admissions
                 past L/2 held until the bucket drains; refusals cost nothing
  counter-with-refusals
                 HAProxy's http_req_rate: a sliding-window counter that counts
                 refused requests too, periods from each address's first one

--advertise adds rate-limit fields to every answer (the documented API sends
none): draft (RateLimit-Policy and RateLimit, the IETF httpapi draft), legacy
(X-RateLimit-* and Retry-After on a 429), or lying (advertises L, enforces 5/6
of it, a wrong remaining count and Retry-After: 0 on a 429).

--faults injects transport faults and latency, drawn from --seed, e.g.
  --faults 5xx=0.02,reset=0.01,delay=5ms-40ms

--workers N --service D serves each admitted request (never a 429) in one of N
workers for D, fixed or uniform in MIN-MAX (5ms-35ms), queueing up to --queue,
then 503 queue_full. Capacity: N over the mean of D (10 of 20ms: 500/s).

--contract FILE serves a limits contract (docs/contract.md) in place of the
documented limits: each limit over its routes, counted by client address, by
a header's value (an API key) or globally, with its quota (per tier, the tier
of the identity whose credential a request carries), window and refusal; a
request is held to every limit over its route, and routes of one limit share
its budget. A limit whose contract names its family is served by that
limiter, the others by --limiter's. Paths under /api/public/ and /mcp are
answered by the reference surfaces, other routes with {"route": NAME, "ok":
true}. --limiter, when given, applies to every limit (a deliberately wrong
contract target); the identities' ${VARIABLE} credentials are read from this
environment.

One line is logged to stderr per refused or failed request (route or JSON-RPC
method, status, error code, request id; never a body or a credential).
--quiet turns them off for load tests. Stop with Ctrl-C.
Exit codes: 2 bad usage, or an address it cannot listen on; 130 or 143
stopped by SIGINT (Ctrl-C) or SIGTERM.
`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	def := refserver.DefaultConfig()
	var o serveOptions
	fs := newFlagSet("serve", "[flags]", serveHelp, stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "`host:port` to listen on, IPv4 or IPv6 ([::1]:8080; [::]:8080 every address); port 0 picks a free one")
	fs.DurationVar(&o.window, "window", def.Window, "length of the rolling window")
	fs.IntVar(&o.restLimit, "rest-limit", def.RESTLimit, "REST requests admitted per window and client address")
	fs.IntVar(&o.mcpLimit, "mcp-limit", def.MCPLimit, "MCP calls admitted per window and client address")
	fs.StringVar(&o.limiter, "limiter", string(refserver.Rolling), "limiter `mode`: rolling, or a deliberately wrong one (see above)")
	fs.StringVar(&o.advertise, "advertise", string(refserver.AdvertiseNone), "rate-limit fields to send: none, draft, legacy, lying")
	fs.StringVar(&o.faults, "faults", "", "fault `spec` such as 5xx=0.02,reset=0.01,delay=5ms-40ms")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the fault and service-time draws")
	fs.StringVar(&o.allowedOrigins, "allowed-origins", "", "comma-separated `list` of Origin values /mcp accepts (default: none; requests without Origin are always accepted)")
	fs.IntVar(&o.pool.Workers, "workers", 0, "serve admitted requests in a pool of `N` workers (0: no pool, answer at once)")
	fs.Func("service", "a worker's service `time`, such as 20ms or 5ms-35ms (with --workers)", o.pool.SetService)
	fs.IntVar(&o.pool.Queue, "queue", 1000, "`requests` that may wait for a worker before the answer is 503 (with --workers)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not log refused and failed requests")
	fs.StringVar(&o.contract, "contract", "", "serve the limits of this contract `file` in place of the documented ones (see above)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	cfg, err := o.config()
	if err != nil {
		return usageErr(stderr, "serve", "%v", err)
	}
	if !o.quiet {
		cfg.Log = stderr
	}
	srv, err := refserver.New(cfg)
	if err != nil {
		return usageErr(stderr, "serve", "%v", err)
	}
	ln, err := refserver.Listen(srv, o.addr)
	if err != nil {
		return usageErr(stderr, "serve", "--addr %s: %v", o.addr, err)
	}
	if cfg.Rules != nil {
		fmt.Fprintf(stdout, "ratecheck serve: listening on %s (contract %s: %s; limiter %s %s", ln.URL, o.contract, describeRules(cfg.Rules), cfg.Limiter, map[bool]string{false: "where it names none", true: "for every limit"}[o.set["limiter"]])
	} else {
		fmt.Fprintf(stdout, "ratecheck serve: listening on %s (window %v, rest %d, mcp %d per window and address, limiter %s", ln.URL, cfg.Window, cfg.RESTLimit, cfg.MCPLimit, cfg.Limiter)
	}
	if cfg.Advertise != refserver.AdvertiseNone {
		fmt.Fprintf(stdout, ", advertising %s", cfg.Advertise)
	}
	if cfg.Faults != (refserver.Faults{}) {
		fmt.Fprintf(stdout, ", faults %s", cfg.Faults)
	}
	if cfg.Pool.Workers > 0 {
		fmt.Fprintf(stdout, ", %s", cfg.Pool)
	}
	fmt.Fprintln(stdout, ")")
	<-ctx.Done()
	if err := ln.Close(); err != nil {
		fmt.Fprintf(stderr, "ratecheck serve: shutting down: %v\n", err)
	}
	return exitOK
}

// config validates the options and turns them into a target configuration.
func (o serveOptions) config() (refserver.Config, error) {
	cfg := refserver.DefaultConfig()
	if o.window <= 0 {
		return cfg, fmt.Errorf("--window must be positive, got %v", o.window)
	}
	if o.restLimit < 1 || o.mcpLimit < 1 {
		return cfg, fmt.Errorf("--rest-limit and --mcp-limit must be at least 1, got %d and %d", o.restLimit, o.mcpLimit)
	}
	mode, err := refserver.ParseLimiterMode(o.limiter)
	if err != nil {
		return cfg, fmt.Errorf("--limiter: %v", err)
	}
	if cfg.Advertise, err = refserver.ParseAdvertise(o.advertise); err != nil {
		return cfg, fmt.Errorf("--advertise: %v", err)
	}
	faults, err := refserver.ParseFaults(o.faults)
	if err != nil {
		return cfg, fmt.Errorf("--faults: %v", err)
	}
	origins, err := parseList(o.allowedOrigins)
	if err != nil {
		return cfg, fmt.Errorf("--allowed-origins: %v", err)
	}
	cfg.Window, cfg.RESTLimit, cfg.MCPLimit, cfg.Limiter = o.window, o.restLimit, o.mcpLimit, mode
	switch p := o.pool; {
	case p.Workers < 0 || (p.Workers > 0) != (p.ServiceMax > 0):
		return cfg, fmt.Errorf("--workers %d: want at least 1 worker, given with --service (such as 20ms or 5ms-35ms)", p.Workers)
	case p.Queue < 0:
		return cfg, fmt.Errorf("--queue %d: want 0 or more waiting requests", p.Queue)
	}
	cfg.Faults, cfg.Seed, cfg.AllowedOrigins, cfg.Pool = faults, o.seed, origins, o.pool
	if o.contract != "" {
		for _, f := range []string{"rest-limit", "mcp-limit", "window", "advertise"} {
			if o.set[f] {
				return cfg, fmt.Errorf("--%s with --contract: the contract says each limit's quota and window, and a contract target advertises nothing", f)
			}
		}
		c, err := scenario.LoadContract(o.contract)
		if err != nil {
			return cfg, err
		}
		if cfg.Rules, err = rulesOf(c, os.LookupEnv); err != nil {
			return cfg, fmt.Errorf("--contract %s: %v", o.contract, err)
		}
		if o.set["limiter"] { // every limit, whatever family its contract documents
			for i := range cfg.Rules.Limits {
				cfg.Rules.Limits[i].Mode = ""
			}
		}
	}
	return cfg, nil
}

// rulesOf is the rules the reference target enforces for contract c: each
// limit's routes (an MCP route by the tool its tools/call names), quota,
// window, key and refusal, and the tier of each identity's credential,
// read from env.
func rulesOf(c *scenario.Contract, env func(string) (string, bool)) (*refserver.Rules, error) {
	routes := map[string]refserver.Route{}
	for _, r := range c.Routes {
		ro := refserver.Route{Name: r.Name, Method: r.Method, Path: r.Path}
		if r.RPC != "" {
			name, _ := r.Params["name"].(string)
			if r.RPC != "tools/call" || name == "" {
				return nil, fmt.Errorf("route %s: the reference target tells MCP routes apart by the tool a tools/call names: give it rpc: tools/call and params: {name: TOOL}", r.Name)
			}
			ro.Tool = name
		}
		routes[r.Name] = ro
	}
	rules := &refserver.Rules{Tiers: map[string]string{}}
	for _, id := range c.Identities {
		if id.Tier == "" {
			continue
		}
		h, err := id.Credentials(env)
		if err != nil {
			return nil, err
		}
		for k := range h {
			rules.Tiers[k+": "+h.Get(k)] = id.Tier
		}
	}
	for _, l := range c.Limits {
		ru := refserver.Rule{Name: l.Name, Quota: l.Quota.N, Tiers: l.Quota.Tiers, Window: time.Duration(l.Window),
			Key:     refserver.Key{Header: l.Key.Header, Global: l.Key.Kind == scenario.KeyGlobal},
			Refusal: refserver.Refusal{Status: l.Refused.Status, RPCCode: l.Refused.JSONRPCCode}}
		if l.Refused.Body != nil {
			b, err := json.Marshal(l.Refused.Body)
			if err != nil {
				return nil, fmt.Errorf("limit %s: refused body: %v", l.Name, err)
			}
			ru.Refusal.Body = b
		}
		for _, r := range l.Routes {
			ru.Routes = append(ru.Routes, routes[r])
		}
		mode, err := modeOf(l)
		if err != nil {
			return nil, err
		}
		ru.Mode = mode
		rules.Limits = append(rules.Limits, ru)
	}
	return rules, nil
}

// modeOf is the reference limiter of the family limit l documents (none:
// the server's --limiter).
func modeOf(l scenario.Limit) (refserver.LimiterMode, error) {
	switch f := l.Family; f.Name {
	case "sliding-log":
		return refserver.Rolling, nil
	case "fixed-window":
		return refserver.FixedWindow, nil
	case "sliding-window-counter":
		return refserver.SlidingWindowCounter, nil
	case "token-bucket":
		// The reference bucket holds the quota and refills it in a window.
		if w := time.Duration(l.Window); math.Abs(float64(f.RefillIn(w)-w)) > float64(w)/1e6 {
			return "", fmt.Errorf("limit %s: the reference target's token bucket refills its burst in one window, and this one takes %v (rate: %d/w serves it)", l.Name, f.RefillIn(w), f.Burst)
		}
		return refserver.TokenBucket, nil
	}
	return "", nil
}

// describeRules says each rule in a few words: name, quota, window, key.
func describeRules(rules *refserver.Rules) string {
	var parts []string
	for _, ru := range rules.Limits {
		quota := fmt.Sprint(ru.Quota)
		if ru.Tiers != nil {
			var ts []string
			for _, t := range slices.Sorted(maps.Keys(ru.Tiers)) {
				ts = append(ts, fmt.Sprintf("%d %s", ru.Tiers[t], t))
			}
			quota = strings.Join(ts, " or ")
		}
		key := "client address"
		switch {
		case ru.Key.Global:
			key = "everybody"
		case ru.Key.Header != "":
			key = ru.Key.Header
		}
		part := fmt.Sprintf("%s %s per %v per %s", ru.Name, quota, ru.Window, key)
		if ru.Mode != "" {
			part += " (" + string(ru.Mode) + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}
