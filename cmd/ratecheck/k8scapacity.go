package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/deploy/kubernetes"
	"github.com/connectbyjbrh/ratecheck/method"
)

// capacityJob makes o the Job of a capacity search: no profile, the
// reference target (when deployed) with the pool of capacity's embedded
// target, and the search's flags checked as every shard will read them.
func capacityJob(o *kubernetes.Options, profile string, pool client.Pool) error {
	if profile != "" {
		return errors.New("--profile is for an attack: a --capacity search has none (its flags go after --)")
	}
	if err := checkCapacityShards(o.Args, o.Shards, o.Window, pool); err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = kubernetes.DefaultName("knee")
	}
	p := capacityPool
	o.Capacity = true
	o.TargetArgs = []string{"--workers", fmt.Sprint(p.Workers), "--service", p.ServiceMin.String(), "--queue", fmt.Sprint(p.Queue)}
	return nil
}

// checkCapacityShards refuses a search that every shard would refuse: the
// flags after -- as capacity reads them, and a highest rate that needs
// more source addresses than the shards have: one a pod, or the pods'
// shared pool.
func checkCapacityShards(extra []string, shards int, window time.Duration, pool client.Pool) error {
	var c capacityOptions
	fs := c.flagSet(io.Discard)
	if err := fs.Parse(extra); err != nil {
		return fmt.Errorf("after --: %v", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("after --: unexpected argument %q", fs.Arg(0))
	}
	so, err := c.search()
	if err != nil {
		return fmt.Errorf("after --: %v", err)
	}
	if c.surface != method.REST && c.surface != method.MCP {
		return fmt.Errorf("after --: --surface %q: want rest or mcp", c.surface)
	}
	if window == 0 {
		window = method.Window
	}
	so.Limit, so.Window, so.ThroughLimit = method.Limit(c.surface), window, c.throughLimit
	so.Shards, so.Sources = shards, shards // one address a pod
	if pool.Len() > 0 {
		so.Sources = pool.Len() / shards * shards // every pod the same share
	}
	_, err = capacity.NewSearch(so)
	var few *capacity.TooFewSourcesError
	switch {
	case errors.As(err, &few) && pool.Len() > 0:
		return fmt.Errorf("--sources %s holds %d addresses, too few for --max-rate %g: %v: give a larger pool, or pass -- --max-rate lower",
			pool, pool.Len(), so.MaxRate, err)
	case errors.As(err, &few):
		return fmt.Errorf("--max-rate %g: %v, and a pod sends from its one address: pass -- --max-rate %g or lower, or --shards %d",
			so.MaxRate, err, so.MostRate(1), capacity.SourcesNeeded(so.MaxRate, so.Limit, so.Window, so.Share))
	case err != nil:
		return fmt.Errorf("after --: %v", err)
	}
	return nil
}
