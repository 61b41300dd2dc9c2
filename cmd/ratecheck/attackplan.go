package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/redact"
)

// prepare checks the flags of attack, loads the profile and returns the
// plan and the engine's options; code is -1 to go on, else the exit code
// (the reason said on stderr).
func (o *attackOptions) prepare(stderr io.Writer) (plan attack.Plan, opts attack.Options, code int) {
	shard, startAt, err := o.schedule()
	if err == nil {
		err = o.check()
	}
	if err != nil {
		return plan, opts, usageErr(stderr, "attack", "%v", err)
	}
	prof, err := scenario.LoadProfile(o.profile)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck attack: %v\n", err)
		return plan, opts, exitUsage
	}
	if plan, err = o.plan(prof, shard); err != nil {
		return plan, opts, usageErr(stderr, "attack", "%v", err)
	}
	// The embedded target takes the profile's policy limit.
	restLimit, mcpLimit := 0, 0
	switch prof.Policy.Surface {
	case method.REST:
		restLimit = prof.Policy.Limit
	case method.MCP:
		mcpLimit = prof.Policy.Limit
	}
	target := o.withFaults(embeddedWith(plan.Window, restLimit, mcpLimit))
	file, contract := prof.ContractFile()
	if contract != nil && o.runFlags.target == "" {
		// The embedded target serves the contract the profile names.
		if target.Rules, err = rulesOf(contract, os.LookupEnv); err != nil {
			return plan, opts, usageErr(stderr, "attack", "%s: %v", file, err)
		}
	}
	if opts, err = o.runFlags.options("attack", stderr, embeddedTargetAt(target, embeddedAddr(o.pool))); err != nil {
		return plan, opts, usageErr(stderr, "attack", "%v", err)
	}
	if contract != nil {
		text, err := contract.Marshal()
		if err != nil {
			return plan, opts, usageErr(stderr, "attack", "%s: %v", file, err)
		}
		opts.Contract = archive.NewContractInfo(file, text)
	}
	opts.Folder, opts.Seed, opts.StartAt, opts.Network, opts.Sources = prof.Name, o.seed, startAt, plan.Network, o.pool
	if shard.Split() {
		opts.Folder += fmt.Sprintf("-shard%dof%d", shard.I, shard.N)
	}
	return plan, opts, -1
}

// schedule reads --shard and --start-at.
func (o *attackOptions) schedule() (shard attack.Shard, startAt time.Time, err error) {
	if o.shard != "" {
		if shard, err = attack.ParseShard(o.shard); err != nil {
			return shard, startAt, fmt.Errorf("--shard: %v", err)
		}
		if o.target == "" {
			return shard, startAt, errors.New("--shard needs --target: every shard must attack the same target, not an embedded one of its own")
		}
	}
	if o.startAt != "" {
		if startAt, err = parseInstant("--start-at", o.startAt); err != nil {
			return shard, startAt, err
		}
		if time.Until(startAt) > 24*time.Hour {
			return shard, startAt, fmt.Errorf("--start-at %s is more than 24h away", o.startAt)
		}
	}
	return shard, startAt, nil
}

// check validates the flags that need no profile.
func (o *attackOptions) check() error {
	switch {
	case o.profile == "":
		return errors.New("--profile is required (see profiles/README.md)")
	case o.window < 0 || o.timeout < 0:
		return errors.New("--window and --timeout must not be negative")
	}
	if names := redact.Names(http.Header(o.headers)); len(names) > 0 && !o.allowCredentials {
		return fmt.Errorf("--header %s carries a credential: the contract's surfaces authenticate nothing and a key sent to them only leaks into logs; pass --allow-credentials if you must", strings.Join(names, ", "))
	}
	return nil
}

// plan binds prof to the run's window as the flags say: credentials
// refused unless allowed, sources replaced, the ceilings checked, the
// network and the MCP session set.
func (o *attackOptions) plan(prof *scenario.Profile, shard attack.Shard) (attack.Plan, error) {
	if names := prof.HeaderCredentials(); len(names) > 0 && !o.allowCredentials {
		return attack.Plan{}, fmt.Errorf("%s: headers %s carry a credential; pass --allow-credentials if you must", o.profile, strings.Join(names, ", "))
	}
	if names := scenario.QueryCredentials(prof); len(names) > 0 && !o.allowCredentials {
		return attack.Plan{}, fmt.Errorf("%s: query parameters %s carry a credential; pass --allow-credentials if you must", o.profile, strings.Join(names, ", "))
	}
	// The contract's identities' credentials, read now: they are the
	// contract's to send (docs/credentials.md), never archived.
	if err := prof.BindIdentities(os.LookupEnv); err != nil {
		return attack.Plan{}, fmt.Errorf("%s: %v", o.profile, err)
	}
	if o.sources != "" {
		pool, err := replaceSources(prof, o.sources)
		if err != nil {
			return attack.Plan{}, fmt.Errorf("--sources: %v", err)
		}
		o.pool = pool
	}
	window := o.window
	if window == 0 {
		window = prof.Policy.Window.D
	}
	plan := attack.Plan{Profile: prof, Window: window, Headers: http.Header(o.headers), Timeout: o.timeout, Shard: shard, ClientVersion: version}
	ceilings := scenario.Ceilings{Rate: o.maxRate, Duration: o.maxDuration}
	if err := ceilings.Check(o.profile, window, plan.PeakRate(), plan.Duration()); err != nil {
		return attack.Plan{}, ceilingMessage(err)
	}
	nw, err := o.network(o.target)
	if err != nil {
		return attack.Plan{}, err
	}
	var used []string
	for i := range prof.Streams {
		for _, src := range prof.StreamSources(&prof.Streams[i]) {
			used = append(used, orLoopback(src))
		}
	}
	plan.Network, plan.MaxWorkers, plan.Behind = nw, o.maxWorkers, &attack.Behind{}
	plan.MCP = o.mcpSession(negotiationSource(o.target, used), o.timeout, nw)
	return plan, nil
}

// ceilingMessage words a profile above a ceiling with the flag that
// raises it.
func ceilingMessage(err error) error {
	var ce *scenario.CeilingError
	switch {
	case !errors.As(err, &ce):
		return err
	case ce.OverRate:
		return fmt.Errorf("%s at window %v sends up to %d requests in one second, above the ceiling --max-rate %d: raise --max-rate if you mean it", ce.Profile, ce.Window, ce.Rate, ce.Ceilings.Rate)
	}
	return fmt.Errorf("%s at window %v runs for %v, above the ceiling --max-duration %v: raise --max-duration if you mean it", ce.Profile, ce.Window, ce.Duration.Round(time.Second), ce.Ceilings.Duration)
}
