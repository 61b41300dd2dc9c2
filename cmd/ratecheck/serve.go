package main

import (
	"context"
	"fmt"
	"io"
	"time"

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
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
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
	fmt.Fprintf(stdout, "ratecheck serve: listening on %s (window %v, rest %d, mcp %d per window and address, limiter %s", ln.URL, cfg.Window, cfg.RESTLimit, cfg.MCPLimit, cfg.Limiter)
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
	return cfg, nil
}
