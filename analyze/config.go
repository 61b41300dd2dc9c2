package analyze

import (
	"fmt"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// Overrides are what a caller sets over what the run folders' run.json
// recorded when it judges them (see [ConfigFor]). The zero value judges
// every check against the contract's limits and the recorded window.
type Overrides struct {
	// Window is the window to judge by (0: the first run.json's, else the
	// documented method.Window, which ConfigFor says it assumed).
	Window time.Duration
	// Limits are the documented limits per surface (nil: the contract's,
	// method.RESTLimit and method.MCPLimit).
	Limits map[string]int
	// Checks selects checks by name (nil: all).
	Checks []string
	// Refusals are how the refusals of a contract's limits look, by limit
	// name (nil: the documented API's; see Config.Refusals).
	Refusals map[string]Refusal
	// Surfaces are the surfaces the run was meant to exercise (nil: the
	// ones it sent to; see [Config.Surfaces]).
	Surfaces []string
	// Stacked are a contract's limits verify does not probe (see
	// [Config.Stacked]).
	Stacked map[string]Stacked
	// Keys say what a contract's limit counts by, when not the client
	// address (see [Config.Keys]).
	Keys map[string]string
	// Routes are the routes of a contract's limit over several (see
	// [Config.Routes]).
	Routes map[string][]string
	// RefusalsCount says what a contract's limits say of refusals (see
	// [Config.RefusalsCount]).
	RefusalsCount map[string]string
	// Families are the limiters a contract's limits document (see
	// [Config.Families]).
	Families map[string]Family
	// Windows are the windows of a contract's limits longer than the
	// run's (see [Config.Windows]).
	Windows map[string]time.Duration
	// Path is the first path read: the run reported when no run folder was
	// read.
	Path string
}

// ConfigFor is the configuration that judges input described by meta (the
// run.json of each run folder read) with o over it: the window given,
// else the one the first run.json recorded, else the documented one
// (assumed then says so: the caller should warn that the input had no
// run.json); the target and run of the first run folder, else o.Path as
// the run; the MCP revision the first run that spoke one recorded; and a
// warning for each run that did not finish or fell far behind its
// schedule (see [RunWarnings]).
func ConfigFor(meta *decode.Meta, o Overrides) (cfg Config, assumed bool) {
	cfg = Config{Window: o.Window, Limits: o.Limits, Checks: o.Checks, Surfaces: o.Surfaces, Refusals: o.Refusals, Stacked: o.Stacked, Keys: o.Keys, Routes: o.Routes, RefusalsCount: o.RefusalsCount, Families: o.Families, Windows: o.Windows}
	if cfg.Limits == nil {
		cfg.Limits = map[string]int{method.REST: method.RESTLimit, method.MCP: method.MCPLimit}
	}
	if len(meta.Runs) > 0 {
		cfg.Target, cfg.Run = meta.Runs[0].Target, meta.Runs[0].Dir
		if cfg.Window == 0 {
			cfg.Window = meta.Runs[0].Window()
		}
	} else {
		cfg.Run = o.Path
	}
	if cfg.Window == 0 {
		cfg.Window, assumed = method.Window, true
	}
	for _, r := range meta.Runs {
		cfg.Warnings = append(cfg.Warnings, RunWarnings(r)...)
		if cfg.MCPRevision == "" {
			cfg.MCPRevision = r.MCPRevision
		}
		if r.SentBefore != nil && r.SentBefore.After(cfg.SentBefore) {
			cfg.SentBefore = *r.SentBefore
		}
	}
	return cfg, assumed
}

// RunWarnings says what a run's run.json records that a reader of its
// verdict should know: a run that did not finish, and one that fell far
// behind its schedule.
func RunWarnings(r archive.RunInfo) []string {
	var out []string
	if r.InProgress {
		out = append(out, fmt.Sprintf("%s: the run did not finish (killed?): its run.json was written when it started", r.Dir))
	}
	if r.Interrupted {
		out = append(out, fmt.Sprintf("%s: the run was interrupted (SIGINT or SIGTERM): what was received before is judged, what the plan had still to send is missing", r.Dir))
	}
	if r.BehindMS >= 100 {
		// Judged by when requests went out, so the verdict holds; the
		// load the target saw was gentler than the profile planned.
		out = append(out, fmt.Sprintf("%s: the run fell behind its schedule: %d requests went out more than 10ms late, the latest %v late (the target saw a gentler load than planned)",
			r.Dir, r.LateRequests, r.BehindMS.Duration().Round(time.Millisecond)))
	}
	return out
}
