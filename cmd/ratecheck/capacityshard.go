package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/capacity"
	"github.com/connectbyjbrh/ratecheck/capacity/runner"
)

// capacityShard are the flags of a capacity search sharded over several
// processes in lockstep.
type capacityShard struct {
	shardArg, rendezvous, startAt string
	gap, slack                    time.Duration
}

// declare adds the sharding flags to fs.
func (c *capacityShard) declare(fs *flag.FlagSet) {
	fs.StringVar(&c.shardArg, "shard", "", "send shard `i/n` of a search sharded over n processes in lockstep, such as 0/3 (needs --target, --rendezvous and --start-at)")
	fs.StringVar(&c.rendezvous, "rendezvous", "", "`dir`ectory every shard shares (a volume they all mount), where each reports every step and reads the others'")
	fs.StringVar(&c.startAt, "start-at", "", "wait until this RFC 3339 `instant` to start, such as 2026-11-30T09:00:00Z (the shards' agreed start)")
	fs.DurationVar(&c.gap, "rendezvous-gap", runner.DefaultGap, "pause between the last shard's finish of a step and the next step's start")
	fs.DurationVar(&c.slack, "rendezvous-slack", runner.DefaultSlack, "how long past a step's end and --timeout a shard waits for the others' reports")
}

// schedule reads the sharding flags into the job's configuration and
// returns the instant the engine is to wait for (zero: none); target is
// --target ("": the embedded target).
func (c *capacityShard) schedule(cfg *runner.Config, target string) (time.Time, error) {
	var at time.Time
	var err error
	if c.startAt != "" {
		if at, err = parseInstant("--start-at", c.startAt); err != nil {
			return at, err
		}
		if time.Until(at) > 24*time.Hour {
			return at, fmt.Errorf("--start-at %s is more than 24h away", c.startAt)
		}
	}
	if c.shardArg != "" {
		if cfg.Shard, err = attack.ParseShard(c.shardArg); err != nil {
			return at, fmt.Errorf("--shard: %v", err)
		}
	}
	s := cfg.Shard
	switch {
	case c.gap <= 0 || c.slack <= 0:
		return at, fmt.Errorf("--rendezvous-gap %v and --rendezvous-slack %v: want durations above zero", c.gap, c.slack)
	case !s.Split() && c.rendezvous != "":
		return at, errors.New("--rendezvous is for a search sharded over several processes: give --shard i/n too")
	case !s.Split():
		return at, nil
	case target == "":
		return at, fmt.Errorf("--shard %v needs --target: every shard must load the same target, not an embedded one of its own", s)
	case c.rendezvous == "":
		return at, fmt.Errorf("--shard %v needs --rendezvous: the directory every shard shares, where each reports every step", s)
	case at.IsZero():
		return at, fmt.Errorf("--shard %v needs --start-at: the instant every shard agreed to start at", s)
	}
	cfg.Rendezvous, cfg.StartAt, cfg.Gap, cfg.Slack = c.rendezvous, at, c.gap, c.slack
	return at, nil
}

// shardSources are the addresses shard s of a search sends from on a
// loopback target when no --sources are given: of the 127.0.x.y each
// shard needs times the shards, every n-th from the i-th, so that the
// shards' addresses together are those one process would send from.
func shardSources(need int, s attack.Shard) ([]string, error) {
	n := max(s.N, 1)
	per := (need + n - 1) / n
	all, err := capacity.LoopbackSources(per * n)
	if err != nil {
		return nil, err
	}
	var own []string
	for k := s.I; k < len(all); k += n {
		own = append(own, all[k])
	}
	return own, nil
}
