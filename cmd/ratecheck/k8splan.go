package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
)

// maxShards is the most shards k8s-job prints (see kubernetes.Options).
const maxShards = 1000

// parseShards reads --shards, saying what is wrong with it.
func parseShards(s string) (int, error) {
	if s == "" {
		return 0, errors.New("--shards is required: the number of shards, one pod each")
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, fmt.Errorf("--shards %q is not a whole number: want the number of shards, 1 to %d", s, maxShards)
	case n < 1:
		return 0, fmt.Errorf("--shards %d: want at least 1 shard (one pod each)", n)
	case n > maxShards:
		return 0, fmt.Errorf("--shards %d: at most %d shards", n, maxShards)
	}
	return n, nil
}

// checkPassed refuses, among the arguments after --, a flag k8s-job sets
// itself (in a capacity search's pods, when search).
func checkPassed(extra []string, search bool) error {
	own := []string{"profile", "target", "shard", "start-at", "sources", "out", "window"}
	if search {
		own = append(own, "rendezvous", "shared-sources")
	}
	for _, a := range extra {
		flagName, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && slices.Contains(own, flagName) {
			return fmt.Errorf("after --: %s is set by k8s-job itself (use its own flag, if it has one)", a)
		}
	}
	return nil
}

// shardCeilings are the ceilings every shard's attack runs with: the
// defaults, or the --max-rate and --max-duration passed after --.
func shardCeilings(extra []string) (scenario.Ceilings, error) {
	c := scenario.DefaultCeilings
	fs := flag.NewFlagSet("attack", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&c.Rate, "max-rate", c.Rate, "")
	fs.DurationVar(&c.Duration, "max-duration", c.Duration, "")
	for i := 0; i < len(extra); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(extra[i], "-"), "=")
		if !strings.HasPrefix(extra[i], "-") || (name != "max-rate" && name != "max-duration") {
			continue
		}
		args := extra[i : i+1]
		if !hasValue && i+1 < len(extra) {
			args, i = extra[i:i+2], i+1
		}
		if err := fs.Parse(args); err != nil {
			return c, fmt.Errorf("after --: %v", err)
		}
	}
	return c, nil
}

// checkShards refuses a profile that a shard of it would refuse: every
// shard's busiest second and length, at the run's window, against the
// ceilings the shards run with, before a Job is printed whose pods would
// all exit 2.
func checkShards(prof *scenario.Profile, file string, window time.Duration, shards int, extra []string, pool client.Pool) error {
	c, err := shardCeilings(extra)
	if err != nil {
		return err
	}
	if window == 0 {
		window = prof.Policy.Window.D
	}
	own := *prof
	own.Streams = append([]scenario.Stream(nil), prof.Streams...)
	list := "own" // as every pod sends
	if pool.Len() > 0 {
		list = pool.String()
		if pool.Len() < shards {
			return fmt.Errorf("--sources %s holds %d addresses, fewer than the %d shards: every pod needs addresses of its own", pool, pool.Len(), shards)
		}
	}
	if _, err := replaceSources(&own, list); err != nil {
		return fmt.Errorf("--sources: %v", err)
	}
	for i := range shards {
		plan := attack.Plan{Profile: &own, Window: window, Shard: attack.Shard{I: i, N: shards}}
		if err := c.Check(file, window, plan.PeakRate(), plan.Duration()); err != nil {
			return shardCeilingMessage(err, attack.Shard{I: i, N: shards})
		}
	}
	return nil
}

// shardCeilingMessage words a shard above a ceiling with the flag, passed
// after --, that raises it.
func shardCeilingMessage(err error, s attack.Shard) error {
	var ce *scenario.CeilingError
	switch {
	case !errors.As(err, &ce):
		return err
	case ce.OverRate:
		return fmt.Errorf("shard %v of %s at window %v sends up to %d requests in one second, above the ceiling --max-rate %d every shard runs with: pass -- --max-rate %d if you mean it, or more --shards",
			s, ce.Profile, ce.Window, ce.Rate, ce.Ceilings.Rate, ce.Rate)
	}
	return fmt.Errorf("shard %v of %s at window %v runs for %v, above the ceiling --max-duration %v every shard runs with: pass -- --max-duration %v if you mean it",
		s, ce.Profile, ce.Window, ce.Duration.Round(time.Second), ce.Ceilings.Duration, ce.Duration.Round(time.Second))
}
