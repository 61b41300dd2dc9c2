package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/report"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// verifyRun is a run of verify as its flags planned it: the probe plan,
// the engine's options, and how the run is judged (mid-run, for the
// follow-up, and at the end alike; Path is set once the folder is made).
type verifyRun struct {
	plan     attack.Plan
	opts     attack.Options
	surfaces []string
	judged   analyze.Overrides
}

// prepare checks the flags of verify and plans its run; code is -1 to go
// on, else the exit code (the reason said on stderr).
func (o *verifyOptions) prepare(stderr io.Writer) (v verifyRun, code int) {
	fail := func(format string, args ...any) (verifyRun, int) {
		return v, usageErr(stderr, "verify", format, args...)
	}
	restLimit, mcpLimit := *o.restLimit, *o.mcpLimit
	if err := checkLimits(restLimit, mcpLimit, o.window); err != nil {
		return fail("%v", err)
	}
	if o.timeout <= 0 {
		return fail("--timeout must be positive, got %v", o.timeout)
	}
	if err := checkOutFile("--junit", o.junit); err != nil {
		return fail("%v", err)
	}
	var vc *verifyContract
	if o.contract != "" {
		for _, f := range []string{"rest-limit", "mcp-limit", "surfaces"} {
			if o.set[f] {
				return fail("--%s with --contract: the contract names its limits and their quotas", f)
			}
		}
		if o.set["checks"] && slices.Contains(strings.Split(o.checks, ","), "contract") {
			return fail("--checks contract with --contract: the failure-table probes are the documented API's; say --checks limits,isolation")
		}
		if !o.set["checks"] {
			o.checks = "limits,isolation"
		}
		var err error
		if vc, err = loadVerifyContract(o.contract, os.LookupEnv); err != nil {
			return fail("--contract: %v", err)
		}
	}
	groups, checks, err := parseChecks(o.checks)
	if err != nil {
		return fail("--checks: %v", err)
	}
	surfaces, err := parseSurfaces(o.surfaces)
	if err != nil {
		return fail("--surfaces: %v", err)
	}
	documented := method.Window
	if vc != nil {
		surfaces, documented = vc.names, vc.window
	}
	window := o.runFlags.window(o.window, documented, 6*time.Second)
	pool, err := parseSources("--sources", o.sources)
	if err != nil {
		return fail("%v", err)
	}
	// The limit address, the isolation address and the contract
	// address: the pool's first three, or as many as it has.
	sources := pool.Take(3)
	if o.sources == "" && loopbackV4(o.target) {
		sources = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	}
	seed := o.runSeed()
	if o.maxDuration < 0 {
		return fail("--max-duration must be positive, got %v", o.maxDuration)
	}
	limits := slices.Contains(groups, "limits") || slices.Contains(groups, "isolation")
	until := timeline.MaxUntil(o.maxDuration, window, limits)
	// The follow-ups end where they would by default on a contract with
	// stacked limits: a longer --max-duration is for a stacked limit's
	// onset probe, and more follow-ups would only bring the limit address
	// nearer the stacked quota, which it must not reach (see reach).
	followUntil := until
	if vc != nil && len(vc.stacked) > 0 {
		followUntil = min(until, timeline.MaxUntil(0, window, limits))
	}
	var named map[string]scenario.NamedLimit
	var stacked []stackedPlan
	if vc != nil {
		named = vc.named
	}
	prof, err := scenario.VerifyProfile(scenario.VerifyOptions{RESTLimit: restLimit, MCPLimit: mcpLimit, Sources: sources, Surfaces: surfaces, Named: named,
		Limits: slices.Contains(groups, "limits"), Isolation: slices.Contains(groups, "isolation"), Contract: slices.Contains(groups, "contract"), Seed: seed,
		FollowUpUntil: followUntil})
	if err != nil {
		return fail("%v", err)
	}
	if vc != nil {
		stacked = vc.stackedPlans(vc.count(prof, window), until, window)
		if err := vc.reach(stacked); err != nil {
			return fail("--contract: %v", err)
		}
		if len(sources) >= 3 { // a stacked limit's onset goes out from the third address, the contract address
			prof.Streams = append(prof.Streams, vc.stackedStreams(stacked, sources[2])...)
		}
	}
	nw, err := o.network(o.target)
	if err != nil {
		return fail("%v", err)
	}
	contract := "" // the contract address: the last of the three, or the only one
	if len(sources) > 0 {
		contract = sources[min(2, len(sources)-1)]
	}
	plan := attack.Plan{Profile: prof, Window: window, Timeout: o.timeout, ClientVersion: version, Network: nw, MaxWorkers: o.maxWorkers, Behind: &attack.Behind{}}
	if vc == nil && slices.Contains(surfaces, method.MCP) || vc != nil && vc.speaksMCP() {
		// Negotiation goes out from the contract address, as the profile
		// sends the contract probes; when that is the limit address too,
		// the run waits a window for the handshake to leave it.
		plan.MCP = o.mcpSession(contract, o.timeout, nw)
		if len(sources) < 2 && (slices.Contains(groups, "limits") || slices.Contains(groups, "isolation")) {
			plan.MCP.Settle = window
		}
	}
	embedded := embeddedWith(window, restLimit, mcpLimit)
	if vc != nil {
		// Served only without --target: a contract the reference target
		// cannot serve (a token bucket of another refill) is verified
		// against a target of the user's.
		if embedded, err = vc.embedded(window, os.LookupEnv); err != nil && o.target == "" {
			return fail("--contract %s: %v (give --target)", o.contract, err)
		}
	}
	opts, err := o.runFlags.options("verify", stderr, embeddedTargetAt(o.withFaults(embedded), embeddedAddr(pool)))
	if err != nil {
		return fail("%v", err)
	}
	documentedLimits := limitsOf(restLimit, mcpLimit)
	var j contractJudging
	if vc != nil {
		j = judgingOf(vc.c)
		text, err := vc.c.Marshal()
		if err != nil {
			return fail("--contract %s: %v", o.contract, err)
		}
		opts.Contract, documentedLimits = archive.NewContractInfo(o.contract, text), j.limits
	}
	opts.Folder, opts.Seed, opts.Network, opts.Fresh, opts.NoWait = prof.Name, seed, nw, window, o.noWait
	if vc != nil {
		opts.Fresh = vc.freshAfter(stacked, window)
	}
	opts.Sources = pool
	opts.ReachFrom = contract // the reachability check spends nothing of the limit address's budget
	v = verifyRun{plan: plan, opts: opts, surfaces: surfaces,
		judged: analyze.Overrides{Window: window, Limits: documentedLimits, Checks: checks, Surfaces: surfaces}}
	if vc != nil {
		v.judged.Refusals, v.judged.Surfaces, v.judged.Stacked, v.judged.Keys, v.judged.Routes, v.judged.RefusalsCount = j.refusals, vc.judged(), j.stacked, j.keys, j.routes, j.counts
		v.judged.Families, v.judged.Windows = j.familiesAt(window), j.windowsAt(window)
		for _, sp := range stacked {
			if st := j.stacked[sp.name]; !sp.probe || len(sources) < 3 {
				st.Onset = sp.why
				if sp.probe {
					st.Onset = "its onset needs a third address (--sources) to be sent from"
				}
				j.stacked[sp.name] = st
			}
		}
		v.plan.Refusals = map[string]uint16{}
		for name, r := range j.refusals {
			v.plan.Refusals[name] = r.Status
		}
	}
	if followUntil > 0 {
		v.plan.FollowUp = followUp(surfaces, v.judged, followUntil, stderr)
	}
	if vc != nil {
		// A limit of a longer window than the run's is paced over its own:
		// its plan may outlast --max-duration, which then says so.
		bound := time.Duration(max(until, timeline.DefaultMaxDuration) * float64(window))
		if d := v.plan.Duration(); d > bound {
			return fail("--contract %s: the run would take about %v, its limits of longer windows paced over their own (contract check %s says each), longer than the %v a run may take (--max-duration, and at least 3.5 windows): give --max-duration %v or more",
				o.contract, d.Round(time.Second), o.contract, bound, d.Round(time.Second)+time.Second)
		}
	}
	probed := slices.Clone(surfaces)
	for _, st := range prof.Streams {
		if st.Name == method.StreamStacked {
			probed = append(probed, "the onset of "+st.Surface)
		}
	}
	intro := fmt.Sprintf("probing %s for about %v (window %v)", strings.Join(probed, " and "), v.plan.Duration().Round(100*time.Millisecond), window)
	switch horizon := time.Duration(followUntil * float64(window)); {
	case followUntil > 0 && v.plan.Duration() >= horizon:
		// the follow-up is decided once every stream is answered: after
		// the horizon it would have ended by
		intro += ", no follow-up (its streams run past the follow-ups' end)"
	case followUntil > 0:
		intro += fmt.Sprintf(", up to %v if a question is left open", horizon.Round(100*time.Millisecond))
	}
	v.opts.Events = engineEvents(stderr, "verify", intro)
	return v, -1
}

// judge analyzes the run, writes its report and verdict, and returns the
// exit code: the run's own when it stopped on a failing target (runErr),
// else the verdict's. What stopped the run is said once, after the
// analysis: a target without the API answers the probes with errors, and
// that, not a failing target, is the story then.
func (o *verifyOptions) judge(run *attack.Run, v verifyRun, runErr error, stdout, stderr io.Writer) int {
	code := exitFor(runErr)
	in, err := analyze.ReadFor([]string{run.Dir}, v.judged.Refusals)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck verify: reading %s: %v\n", run.Dir, err)
		return exitUsage
	}
	judged := v.judged
	judged.Path = run.Dir
	cfg := configFor(&in.Meta, judged)
	cfg.Charts = o.report
	rep, err := analyze.Analyze(in, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck verify: %v\n", err)
		return exitUsage
	}
	if o.report {
		path := filepath.Join(run.Dir, report.HTMLFile)
		if err := writeReport(path, in, rep, cfg); err != nil {
			fmt.Fprintf(stderr, "ratecheck verify: writing the report: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "ratecheck verify: report %s\n", path)
		}
	}
	switch {
	case runErr != nil && rep.APIAbsent():
		// A target without the API fails the probes (404, 501) rather
		// than failing itself: that is what to fix, and the verdict says so.
		fmt.Fprintf(stderr, "ratecheck verify: the API is not there on %s: its errors (404, 501) to the probes made the attack stop adding load (--abort-at), but they are its answers, not a failing target; the verdict says what came back\n", run.Target)
		code = exitOK
	case runErr != nil:
		fmt.Fprintf(stderr, "ratecheck verify: %s\n", describe(runErr))
	}
	verdict := printVerdict(rep, o.json, stdout, stderr)
	if err := writeJUnit(o.junit, "ratecheck verify", report.VerdictSuites(rep)); err != nil {
		fmt.Fprintf(stderr, "ratecheck verify: --junit: %v (the run is kept in %s)\n", err, run.Dir)
		return exitUsage
	}
	if !saveMetrics("verify", o.metrics, ptrTo(report.VerdictMetrics(run.Info, rep, true)), run.Dir, stderr) {
		return exitUsage
	}
	if code != exitOK {
		return code
	}
	return verdict
}
