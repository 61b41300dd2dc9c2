package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
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
	sources, err := parseSources("--sources", o.sources)
	if err != nil {
		return fail("%v", err)
	}
	target := o.withFaults(embeddedWith(window, 0, 0))
	target.Pool = capacityPool
	opts, err := o.runFlags.options("capacity", stderr, embeddedTargetAt(target, embeddedAddr(sources)))
	if err != nil {
		return fail("%v", err)
	}
	opts.Sources = sources
	opts.Folder, opts.Seed = "capacity", o.seed
	cfg := runner.Config{Search: so, Surface: o.surface, Timeout: o.timeout,
		MaxWorkers: o.maxWorkers, ClientVersion: version}
	if opts.StartAt, err = o.capacityShard.schedule(&cfg, o.runFlags.target); err != nil {
		return fail("%v", err)
	}
	if cfg.Shard.Split() {
		opts.Folder += fmt.Sprintf("-shard%dof%d", cfg.Shard.I, cfg.Shard.N)
		o.capacityOut.shard = cfg.Shard.String()
	}
	if cfg.Sources, err = o.sourceList(so, sources, opts.Target, cfg.Shard); err != nil {
		return fail("%v", err)
	}
	if o.surface == method.MCP {
		cfg.MCP = o.mcpSession(negotiationSource(o.runFlags.target, cfg.Sources), o.timeout, nil)
	}
	cfg.Events = stepEvents(stderr, so.Objective.SLO.QuantileName(), cfg.Shard)
	job, err := runner.New(cfg)
	var few *capacity.TooFewSourcesError
	given := ""
	if sources.Len() == 0 {
		given = " (without --sources, the system's own address)"
	}
	switch {
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
