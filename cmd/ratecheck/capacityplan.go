package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/capacity/runner"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// capacityPool is the embedded target's pool in a capacity run: 10
// workers of 20 ms, 500/s, so that the search has a knee to find soon.
var capacityPool = refserver.Pool{Workers: 10, ServiceMin: 20 * time.Millisecond, ServiceMax: 20 * time.Millisecond, Queue: 1000}

// prepare checks the flags and returns the job and the engine's options,
// or the exit code of a usage error.
func (o *capacityOptions) prepare(stderr io.Writer) (*runner.Job, attack.Options, int) {
	fail := func(format string, args ...any) (*runner.Job, attack.Options, int) {
		return nil, attack.Options{}, usageErr(stderr, "capacity", format, args...)
	}
	if o.surface != method.REST && o.surface != method.MCP {
		return fail("--surface %q: want rest or mcp", o.surface)
	}
	load, err := o.capacityContract(os.LookupEnv)
	if err != nil {
		return fail("%v", err)
	}
	if o.sharedSources && (o.sources == "" || o.shardArg == "") {
		return fail("--shared-sources is for a sharded search's --sources: give --shard i/n and --sources too")
	}
	if err := checkOutFile("--junit", o.junit); err != nil {
		return fail("%v", err)
	}
	so, err := o.search()
	if err != nil {
		return fail("%v", err)
	}
	window := o.runFlags.window(o.wind, method.Window, time.Second)
	so.Limit, so.Window, so.ThroughLimit = method.Limit(o.surface), window, o.throughLimit
	if load != nil {
		so.Limit, so.Window = load.limit, load.window
	}
	sources, err := parseSources("--sources", o.sources)
	if err != nil {
		return fail("%v", err)
	}
	target := o.withFaults(embeddedWith(window, 0, 0))
	if load != nil {
		target.Rules = load.rules
	}
	target.Pool = capacityPool
	opts, err := o.runFlags.options("capacity", stderr, embeddedTargetAt(target, embeddedAddr(sources)))
	if err != nil {
		return fail("%v", err)
	}
	opts.Sources = sources
	opts.Folder, opts.Seed = "capacity", o.seed
	if load != nil {
		opts.Contract = load.info
	}
	cfg := runner.Config{Search: so, Surface: o.surface, Timeout: o.timeout,
		MaxWorkers: o.maxWorkers, ClientVersion: version}
	if load != nil {
		cfg.Requests, cfg.Keys = []scenario.Request{load.request}, load.keys
	}
	if opts.StartAt, err = o.capacityShard.schedule(&cfg, o.runFlags.target); err != nil {
		return fail("%v", err)
	}
	if cfg.Shard.Split() {
		opts.Folder += fmt.Sprintf("-shard%dof%d", cfg.Shard.I, cfg.Shard.N)
		o.capacityOut.shard = cfg.Shard.String()
	}
	switch {
	case len(cfg.Keys) > 0:
		// Every key from one address: the first of --sources, or the
		// system's.
		cfg.Sources = []string{""}
		if sources.Len() > 0 {
			cfg.Sources = sources.Take(1)
		}
	default:
		if cfg.Sources, err = o.sourceList(so, sources, opts.Target, cfg.Shard); err != nil {
			return fail("%v", err)
		}
	}
	if o.surface == method.MCP {
		cfg.MCP = o.mcpSession(negotiationSource(o.runFlags.target, cfg.Sources), o.timeout, nil)
	}
	unit := "source"
	if len(cfg.Keys) > 0 {
		unit = "key"
	}
	cfg.Events = stepEvents(stderr, so.Objective.SLO.QuantileName(), unit, cfg.Shard)
	job, err := runner.New(cfg)
	var few *capacity.TooFewSourcesError
	given := ""
	if sources.Len() == 0 {
		given = " (without --sources, the system's own address)"
	}
	switch {
	case errors.As(err, &few) && len(cfg.Keys) > 0:
		return fail("--contract %s: %g requests per second need %d keys (identities sending %s), each at most %s its limit of %d per %v, and the contract has %d: give it identities with keys of their own, or lower --max-rate",
			o.contract, few.Rate, few.Need, load.header, shareWords(few.Share), few.Limit, few.Window, few.Have)
	case errors.As(err, &few) && few.Shards > 1:
		return fail("--sources: %v%s; give this shard at least %d addresses, or run more shards, or lower --max-rate", err, given, few.Need)
	case errors.As(err, &few):
		return fail("--sources: %v%s; give at least %d addresses, or lower --max-rate", err, given, few.Need)
	case err != nil:
		return fail("%v", err)
	}
	return job, opts, -1
}

// sourceList is the source addresses of the search (of shard s's share
// of it): the first the highest rate needs of the --sources pool (all of
// it when it holds fewer: the search then refuses it with the number
// needed; with --shared-sources, shard i's every n-th of the pool), or on
// an IPv4 loopback target as many 127.0.x.y as that (the shard's own of
// them), or else the system's own address (the search refuses a rate
// that needs more).
func (o *capacityOptions) sourceList(so capacity.Options, pool client.Pool, target string, s attack.Shard) ([]string, error) {
	n := max(s.N, 1)
	so.Shards = n
	need := so.SourcesPerShard()
	switch {
	case pool.Len() > 0 && o.sharedSources && n > 1:
		// The search's pool, shared by the shards on this host: every
		// n-th of the addresses one process would use, from the i-th.
		all := pool.Take(need * n)
		var own []string
		for k := s.I; k < len(all); k += n {
			own = append(own, all[k])
		}
		return own, nil
	case pool.Len() > 0:
		return pool.Take(need), nil
	case loopbackV4(target):
		return shardSources(need*n, s)
	}
	return []string{""}, nil
}

// contractLoad is what a capacity search of a contract's route loads: the
// route's request, the limit it spreads under (the route's tightest, by
// rate), the keys it spreads over when that limit counts a header, and
// the rules the embedded target serves.
type contractLoad struct {
	request scenario.Request
	limit   int
	window  time.Duration
	header  string // the key's header ("": addresses)
	keys    []runner.Key
	rules   *refserver.Rules
	info    *archive.ContractInfo // what run.json records
}

// capacityContract reads --contract and --route (nil without them): the
// route's request, the tightest limit over it (a global one cannot be
// spread, and limits counting by two kinds of key are refused), and for
// a header key every identity carrying it, its credentials read from env.
func (o *capacityOptions) capacityContract(env func(string) (string, bool)) (*contractLoad, error) {
	switch {
	case o.contract == "" && o.route == "":
		return nil, nil
	case o.contract == "":
		return nil, fmt.Errorf("--route names a route of a contract: give the contract with --contract FILE")
	case o.route == "":
		return nil, fmt.Errorf("--contract needs --route NAME: the route to load")
	}
	for _, f := range []string{"surface", "window", "through-limit"} {
		if o.set[f] {
			return nil, fmt.Errorf("--%s with --contract: the route says what is sent, and its limit the window", f)
		}
	}
	c, err := scenario.LoadContract(o.contract)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(c.Routes, func(r scenario.Route) bool { return r.Name == o.route })
	if i < 0 {
		var names []string
		for _, r := range c.Routes {
			names = append(names, r.Name)
		}
		return nil, fmt.Errorf("--route %q: %s has no such route (routes: %s)", o.route, o.contract, strings.Join(names, ", "))
	}
	text, err := c.Marshal()
	if err != nil {
		return nil, fmt.Errorf("--contract %s: %v", o.contract, err)
	}
	load := &contractLoad{request: c.Routes[i].Request, info: archive.NewContractInfo(o.contract, text)}
	load.info.Route = o.route
	if load.request.RPC != "" {
		o.surface = method.MCP
	}
	var tightest *scenario.Limit
	kind := ""
	for k := range c.Limits {
		l := &c.Limits[k]
		if !slices.Contains(l.Routes, o.route) {
			continue
		}
		if l.Key.Kind == scenario.KeyGlobal {
			return nil, fmt.Errorf("--route %s is held to limit %s, one budget for everybody: no pool of addresses or keys spreads it; lower --max-rate under %d per %v", o.route, l.Name, quotaOf(l), time.Duration(l.Window))
		}
		if kind != "" && l.Key.String() != kind {
			return nil, fmt.Errorf("--route %s is counted by %s and by %s: a search spreads over one kind of key", o.route, kind, l.Key)
		}
		kind = l.Key.String()
		if tightest == nil || float64(quotaOf(l))/time.Duration(l.Window).Seconds() < float64(quotaOf(tightest))/time.Duration(tightest.Window).Seconds() {
			tightest = l
		}
	}
	if tightest != nil {
		load.limit, load.window = quotaOf(tightest), time.Duration(tightest.Window)
		load.header = tightest.Key.Header
	}
	if load.header != "" {
		for _, id := range c.Identities {
			if !id.Sends(load.header) {
				continue
			}
			h, err := id.Credentials(env)
			if err != nil {
				return nil, fmt.Errorf("--contract %s: %v", o.contract, err)
			}
			load.keys = append(load.keys, runner.Key{Name: id.Name, Header: h})
		}
	}
	if o.runFlags.target == "" {
		if load.rules, err = rulesOf(c, env); err != nil {
			return nil, fmt.Errorf("--contract %s: %v", o.contract, err)
		}
	}
	return load, nil
}

// quotaOf is a limit's quota: its number, or its smallest tier's (a pool
// of keys of several tiers is spread as if each were of the smallest).
func quotaOf(l *scenario.Limit) int {
	if l.Quota.Tiers == nil {
		return l.Quota.N
	}
	return slices.Min(slices.Collect(maps.Values(l.Quota.Tiers)))
}

// shareWords says a share of a limit as the sources error does ("half").
func shareWords(share float64) string {
	if share == 0 || share == 0.5 {
		return "half"
	}
	return fmt.Sprintf("%g of", share)
}
