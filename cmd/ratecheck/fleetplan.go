package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/fleet"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/internal/human"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/connectbyjbrh/ratecheck/report"
)

// prepare checks the flags of fleet and plans its fleet and the engine's
// options; code is -1 to go on, else the exit code (the reason said on
// stderr).
func (o *fleetOptions) prepare(stderr io.Writer) (f fleet.Fleet, opts attack.Options, code int) {
	fail := func(format string, args ...any) (fleet.Fleet, attack.Options, int) {
		return f, opts, usageErr(stderr, "fleet", format, args...)
	}
	strategy, err := client.ParseStrategy(o.strategy)
	if err != nil {
		return fail("--strategy: %v", err)
	}
	switch {
	case o.base < 0 || o.cap < 0 || o.slowDown < 0 || o.limit < 0 || o.timeout <= 0:
		return fail("durations and --limit must not be negative, --timeout positive")
	case o.faults != "" && o.target != "":
		return fail("--faults configures the embedded target; a --target has faults of its own")
	}
	if err := o.check(); err != nil {
		return fail("%v", err)
	}
	faults, err := refserver.ParseFaults(o.faults)
	if err != nil {
		return fail("--faults: %v", err)
	}
	pool, err := o.sourcePool()
	if err != nil {
		return fail("%v", err)
	}
	window := o.runFlags.window(o.window, method.Window, 30*time.Second)
	f = fleet.Fleet{Surface: o.surface, Clients: o.clients, Requests: o.requests,
		Backoff: client.Backoff{Strategy: strategy, Base: o.base, Cap: o.cap}, Attempts: o.attempts, SlowDown: o.slowDown,
		Limit: o.limit, Window: window, Timeout: o.timeout, Seed: o.seed, Epsilon: o.epsilon}
	switch srcs := pool.Take(2); {
	case len(srcs) == 2:
		f.Source, f.RowSource = srcs[0], srcs[1]
	case len(srcs) == 1:
		f.Source = srcs[0]
	case loopbackV4(o.target):
		f.Source, f.RowSource = "127.0.0.2", "127.0.0.3"
	}
	if o.rows {
		rows, err := scenario.LoadEmbedded("errors.yaml")
		if err != nil {
			return fail("%v", err)
		}
		f.Rows = rows.Streams
	}
	if f.Network, err = o.network(o.target); err != nil {
		return fail("%v", err)
	}
	f.MaxWorkers = o.maxWorkers
	from := f.RowSource
	if from == "" {
		from = negotiationSource(o.target, []string{orLoopback(f.Source)})
	}
	f.MCP = o.mcpSession(from, o.timeout, f.Network)
	f = f.Defaults()
	cfg := refserver.DefaultConfig()
	cfg.Window, cfg.Faults, cfg.Seed = window, faults, o.seed
	if opts, err = o.runFlags.options("fleet", stderr, embeddedTargetAt(cfg, embeddedAddr(pool))); err != nil {
		return fail("%v", err)
	}
	opts.Folder, opts.Seed, opts.Network, opts.Sources = "fleet", o.seed, f.Network, pool
	opts.Events = engineEvents(stderr, "fleet", fmt.Sprintf("%d clients from %s, strategy %s, base %s, cap %s, %d attempts, ε %s",
		f.Clients, orDefault(f.Source), strategy, human.Duration(f.Backoff.Base), human.Duration(f.Backoff.Cap), f.Attempts, human.Duration(f.Epsilon)))
	return f, opts, -1
}

// sourcePool reads --source and --sources: the fleet's address, then the
// failure-table rows' (--source: the fleet's only).
func (o fleetOptions) sourcePool() (client.Pool, error) {
	switch {
	case o.source != "" && o.sources != "":
		return client.Pool{}, errors.New("--source and --sources do not go together: --sources names the fleet's address and then the rows'")
	case o.source != "":
		pool, err := parseSources("--source", o.source)
		if err == nil && pool.Len() != 1 {
			err = fmt.Errorf("--source: %s is not one address, the fleet's (--sources takes a pool)", o.source)
		}
		return pool, err
	}
	return parseSources("--sources", o.sources)
}

// fleetConfig is what a fleet run is judged against, as its run.json
// recorded it (fleet judges its run by it, and so does analyze later), and
// the strategy its tables name.
func fleetConfig(info archive.RunInfo) (jitter.Config, string) {
	f := info.Fleet
	d := func(ms clock.Millis) time.Duration { return time.Duration(math.Round(float64(ms) * 1e6)) }
	cfg := jitter.Config{Base: d(f.BaseMS), Cap: d(f.CapMS), Epsilon: d(f.EpsilonMS), Attempts: f.Attempts,
		SlowDown: d(f.SlowDownMS), Seed: info.Seed, Strategy: f.Strategy}
	if f.Command != "" {
		// Client programs: judged against full jitter over the ranges
		// their waves showed; the harness measured the target's stalls.
		cfg.Strategy, cfg.Clients, cfg.Requests, cfg.Stall = "full", f.Clients, f.Requests, max(d(f.StallMS), time.Microsecond)
	}
	return cfg, f.Strategy
}

// printFleet writes the verdict of the fleet run info recorded, kept in
// run folder dir (tables or JSON, --junit and --metrics), and returns its
// exit code.
func printFleet(o fleetOptions, rep *jitter.Report, strategy string, info archive.RunInfo, dir string, stdout, stderr io.Writer) int {
	if err := writeJUnit(o.junit, "ratecheck fleet", []report.Suite{{Name: "fleet", Checks: rep.Checks}}); err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: --junit: %v (the run is kept in %s)\n", err, dir)
		return exitUsage
	}
	if !saveMetrics("fleet", o.metrics, ptrTo(report.FleetMetrics(info, rep)), dir, stderr) {
		return exitUsage
	}
	var err error
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = report.FleetTables(stdout, rep, strategy, dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck fleet: writing the verdict: %v\n", err)
		return exitUsage
	}
	return verdictExit(rep.Verdict)
}

// check validates the flags both kinds of fleet share.
func (o fleetOptions) check() error {
	switch {
	case o.surface != method.REST && o.surface != method.MCP:
		return fmt.Errorf("--surface %q: want rest or mcp", o.surface)
	case o.clients < 2:
		return fmt.Errorf("--clients must be at least 2 (collisions need pairs)")
	case o.requests < 1 || o.attempts < 1:
		return fmt.Errorf("--requests and --attempts must be at least 1")
	case o.window < 0 || o.epsilon < 0:
		return fmt.Errorf("--window and --epsilon must not be negative")
	}
	return checkOutFile("--junit", o.junit)
}
