package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/attack/schedule"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// verifyContract is what verify --contract takes from a contract file:
// its limits, each probed as a surface of its own named after it (in the
// contract's order), with its route's request, the limit identity's
// headers and its quota, over the window they share; and the limits
// stacked on them, judged as surfaces that verify sends nothing of their
// own (see analyze.Stacked).
type verifyContract struct {
	file  string
	c     *scenario.Contract
	names []string
	named map[string]scenario.NamedLimit
	// stacked are the limits held to a route beside a limit of a shorter
	// window, which verify probes, by name.
	stacked map[string]analyze.Stacked
	// window is the run's window as the contract says it, the shortest of
	// the probed limits' (see runWindowOf): a limit of a longer window has
	// its probes' times scaled (scenario.NamedLimit.Scale).
	window time.Duration
}

// judged are the surfaces the run is judged on: every limit of the
// contract, in its order, the stacked ones included.
func (vc *verifyContract) judged() []string {
	var out []string
	for _, l := range judgedLimits(vc.c) {
		out = append(out, l.name)
	}
	return out
}

// stackedOf maps each limit of c over one route that another limit over
// that route alone, of a shorter window, holds too (stacked limits, 10 a
// second and 1 000 an hour) to that limit: the route's limit of the
// shortest window, the first of them in the contract where several have
// it, which verify probes.
func stackedOf(c *scenario.Contract) map[string]analyze.Stacked {
	shortest := map[string]scenario.Limit{} // route → its limit of the shortest window
	for _, l := range c.Limits {
		if len(l.Routes) != 1 {
			continue
		}
		if s, ok := shortest[l.Routes[0]]; !ok || l.Window < s.Window {
			shortest[l.Routes[0]] = l
		}
	}
	out := map[string]analyze.Stacked{}
	for _, l := range c.Limits {
		if len(l.Routes) != 1 {
			continue
		}
		if on := shortest[l.Routes[0]]; on.Name != l.Name {
			out[l.Name] = analyze.Stacked{On: on.Name, Route: l.Routes[0], Window: time.Duration(l.Window)}
		}
	}
	return out
}

// runWindowOf is the window a run of c goes by, as the contract says it:
// the shortest of its limits not stacked on others (the limits verify
// probes); every other limit's times scale from it.
func runWindowOf(c *scenario.Contract, stacked map[string]analyze.Stacked) time.Duration {
	var w time.Duration
	for _, l := range c.Limits {
		if _, ok := stacked[l.Name]; !ok && (w == 0 || time.Duration(l.Window) < w) {
			w = time.Duration(l.Window)
		}
	}
	return w
}

// loadVerifyContract reads the contract at path for verify and checks that
// verify's plan can prove it: limits counted by client address, or all by
// one API key header, or all for everybody, each over routes of its own
// (one, or several sharing its budget) with one quota and a window of its
// own (the run goes by the shortest: runWindowOf); a route may also be
// held to limits of longer windows (stacked), which the run probes only
// by their onset, where it can reach them (see reach, probeStacked). What
// it cannot prove yet is
// an error naming the file, the limit and what to do; credentials are
// read through env (nil: not read, the requests carry none, as for a plan
// only).
func loadVerifyContract(path string, env func(string) (string, bool)) (*verifyContract, error) {
	c, err := scenario.LoadContract(path)
	if err != nil {
		return nil, err
	}
	vc := &verifyContract{file: path, c: c, named: map[string]scenario.NamedLimit{}, stacked: stackedOf(c)}
	vc.window = runWindowOf(c, vc.stacked)
	routes := map[string]scenario.Route{}
	for _, r := range c.Routes {
		routes[r.Name] = r
	}
	notYet := func(l scenario.Limit, format string, args ...any) error {
		return fmt.Errorf("%s: limit %s: %s; verify proves limits counted by client address, by one API key header (a quota per tier, too) or for everybody, each over routes of its own (one, or several sharing its budget) and a window of its own, and limits of longer windows stacked on them as far as the run reaches, so far (ratecheck contract check %s summarises the whole contract)",
			path, l.Name, fmt.Sprintf(format, args...), path)
	}
	stackedOn := map[string]bool{}
	for _, st := range vc.stacked {
		stackedOn[st.On] = true
	}
	var key *scenario.Limit       // the first probed limit: every other counts by its key
	probed := map[string]string{} // route → the probed limit over it
	for i, l := range c.Limits {
		switch {
		case l.Quota.Tiers != nil && l.Key.Kind != scenario.KeyHeader:
			return nil, notYet(l, "it has a quota per tier and is counted by %s: the tiers' probes would draw on one budget", l.Key)
		case l.Quota.Tiers != nil && (stackedOn[l.Name] || vc.stacked[l.Name] != analyze.Stacked{}):
			return nil, notYet(l, "it has a quota per tier, and is stacked with another limit on its route")
		}
		if st, ok := vc.stacked[l.Name]; ok {
			if on := c.Limits[slices.IndexFunc(c.Limits, func(o scenario.Limit) bool { return o.Name == st.On })]; st.Window == time.Duration(on.Window) {
				return nil, notYet(l, "route %s is held to %s and %s over one window of %v (stacked limits of one window)", st.Route, st.On, l.Name, st.Window)
			}
			if on := c.Limits[slices.IndexFunc(c.Limits, func(o scenario.Limit) bool { return o.Name == st.On })]; on.Key != l.Key {
				return nil, notYet(l, "it is stacked on %s over route %s, and counted by %s where %s is counted by %s (stacked limits counted by different keys)", st.On, st.Route, l.Key, on.Name, on.Key)
			}
			continue
		}
		for _, r := range l.Routes {
			if other, ok := probed[r]; ok {
				return nil, notYet(l, "route %s is also held to %s, over the same window or with several routes (limits over one route that verify cannot tell apart)", r, other)
			}
			probed[r] = l.Name
			if (routes[r].RPC != "") != (routes[l.Routes[0]].RPC != "") {
				return nil, notYet(l, "its routes %s and %s are sent differently (an MCP call and a plain request)", l.Routes[0], r)
			}
		}
		if key != nil && l.Key != key.Key {
			return nil, notYet(l, "it is counted by %s and %s by %s (limits counted by different keys)", l.Key, key.Name, key.Key)
		}
		key = &c.Limits[i]
	}
	named := map[string]bool{}
	for _, jl := range judgedLimits(c) {
		switch {
		case strings.ContainsFunc(jl.name, unicode.IsSpace):
			return nil, fmt.Errorf("%s: limit %s: verify labels its results by %q, which cannot hold a space: rename the limit (or the tier)", path, jl.Name, jl.name)
		case named[jl.name]:
			return nil, fmt.Errorf("%s: limit %s: its name, %q, is another limit's too (a tier's limits are named limit:tier): rename one", path, jl.Name, jl.name)
		}
		named[jl.name] = true
	}
	var headers map[string]string // of the limit identity, for limits not counted by key
	if env != nil && (key == nil || key.Key.Kind != scenario.KeyHeader) {
		if headers, err = limitHeaders(c, env); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	}
	for _, jl := range judgedLimits(c) {
		l := jl.Limit
		if _, ok := vc.stacked[l.Name]; ok {
			continue
		}
		var ids [2]*scenario.Identity // by key: the limit key's identity and the second's
		sendAs, second := headers, map[string]string(nil)
		if l.Key.Kind == scenario.KeyHeader {
			if ids, err = keyedIdentities(c, l.Key.Header, jl.tier); err != nil {
				return nil, fmt.Errorf("%s: limit %s: %v", path, jl.name, err)
			}
			if env != nil {
				if sendAs, err = credentials(ids[0], env); err == nil {
					second, err = credentials(ids[1], env)
				}
				if err != nil {
					return nil, fmt.Errorf("%s: %v", path, err)
				}
			}
		}
		sendWith := func(route string, as map[string]string) scenario.Request {
			req := routes[route].Request
			if len(as) > 0 {
				req.Headers = maps.Clone(req.Headers)
				if req.Headers == nil {
					req.Headers = map[string]string{}
				}
				maps.Copy(req.Headers, as)
			}
			return req
		}
		send := func(route string) scenario.Request { return sendWith(route, sendAs) }
		req := send(l.Routes[0])
		wire := method.REST
		if req.RPC != "" {
			wire = method.MCP
		}
		n := scenario.NamedLimit{Request: req, Wire: wire, Quota: jl.quota, Scale: float64(l.Window) / float64(vc.window)}
		for _, r := range l.Routes[1:] {
			n.Others = append(n.Others, send(r))
		}
		if ids[0] != nil {
			n.Keys, n.Second = [2]string{ids[0].Name, ids[1].Name}, sendWith(l.Routes[0], second)
		}
		n.Global = l.Key.Kind == scenario.KeyGlobal
		vc.names = append(vc.names, jl.name)
		vc.named[jl.name] = n
	}
	return vc, nil
}

// A judgedLimit is one surface a run of a contract is judged on: a limit,
// or one tier of a limit with a quota per tier (named limit:tier), with
// its quota.
type judgedLimit struct {
	scenario.Limit
	name, tier string
	quota      int
}

// judgedLimits are c's limits as the surfaces of its runs, in the
// contract's order, one per tier of a limit with a quota per tier, in
// the tiers' order by name.
func judgedLimits(c *scenario.Contract) []judgedLimit {
	var out []judgedLimit
	for _, l := range c.Limits {
		if l.Quota.Tiers == nil {
			out = append(out, judgedLimit{Limit: l, name: l.Name, quota: l.Quota.N})
			continue
		}
		for _, t := range slices.Sorted(maps.Keys(l.Quota.Tiers)) {
			out = append(out, judgedLimit{Limit: l, name: l.Name + ":" + t, tier: t, quota: l.Quota.Tiers[t]})
		}
	}
	return out
}

// keyedIdentities are the identities a limit counted by header sends as,
// of tier ("": any): the one whose address role is the limit address,
// else the first that sends the header, and the next that sends it
// (another key: proving the key, not the address, is what is counted
// needs two; of the same tier, a budget as large).
func keyedIdentities(c *scenario.Contract, header, tier string) ([2]*scenario.Identity, error) {
	var ids [2]*scenario.Identity
	of := func(id *scenario.Identity) bool { return id.Sends(header) && (tier == "" || id.Tier == tier) }
	for i := range c.Identities {
		if id := &c.Identities[i]; of(id) && (ids[0] == nil || id.Address == scenario.AddressLimit && ids[0].Address != scenario.AddressLimit) {
			ids[0] = id
		}
	}
	for i := range c.Identities {
		if id := &c.Identities[i]; of(id) && id != ids[0] && ids[1] == nil {
			ids[1] = id
		}
	}
	in := ""
	if tier != "" {
		in = " of tier " + tier
	}
	switch {
	case ids[0] == nil:
		return ids, fmt.Errorf("it counts by header %s, and no identity%s sends it", header, in)
	case ids[1] == nil:
		return ids, fmt.Errorf("it counts by header %s, and only identity %s%s sends it: proving that the key, not the address, is counted takes a second key; give another identity%s its own (headers: {%s: ${VARIABLE}})", header, ids[0].Name, in, in, header)
	}
	for _, id := range ids {
		if strings.ContainsFunc(id.Name, unicode.IsSpace) {
			return ids, fmt.Errorf("identity %q: its results are labelled by its name, which cannot hold a space", id.Name)
		}
	}
	return ids, nil
}

// limitHeaders are the headers of the identity the probes send as: the one
// whose address role is the limit address, else the only one (none: no
// identity). Its references are read through env.
func limitHeaders(c *scenario.Contract, env func(string) (string, bool)) (map[string]string, error) {
	var id *scenario.Identity
	for i := range c.Identities {
		if c.Identities[i].Address == scenario.AddressLimit {
			id = &c.Identities[i]
			break
		}
	}
	if id == nil && len(c.Identities) == 1 {
		id = &c.Identities[0]
	}
	if id == nil {
		if len(c.Identities) > 1 {
			return nil, fmt.Errorf("%d identities and none with address: limit: say which one the probes send as", len(c.Identities))
		}
		return nil, nil
	}
	return credentials(id, env)
}

// credentials are id's headers, their references read through env, by
// canonical name.
func credentials(id *scenario.Identity, env func(string) (string, bool)) (map[string]string, error) {
	h, err := id.Credentials(env)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		out[k] = h.Get(k)
	}
	return out, nil
}

// contractJudging is how the analyzer judges a run of verify --contract
// of c: each limit a surface named after it, with its quota (the limits
// verify takes have one) and its refusal.
type contractJudging struct {
	names    []string
	limits   map[string]int
	refusals map[string]analyze.Refusal
	stacked  map[string]analyze.Stacked
	keys     map[string]string // what a limit counts by, when not the client address
	routes   map[string][]string
	counts   map[string]string // whether a limit's refusals count, as it says
	// families are the limiters the limits document, when not a sliding
	// log (see familiesAt)
	families map[string]documentedFamily
	// windows are the windows of the limits longer than the run's (the
	// shortest of the probed ones: runWindowOf), stacked ones too, in the
	// run's windows
	windows map[string]float64
}

// judgingOf is the judging of runs of c.
func judgingOf(c *scenario.Contract) contractJudging {
	j := contractJudging{limits: map[string]int{}, refusals: map[string]analyze.Refusal{}, stacked: stackedOf(c), counts: map[string]string{}}
	run := runWindowOf(c, j.stacked)
	for _, jl := range judgedLimits(c) {
		l, name := jl.Limit, jl.name
		j.names = append(j.names, name)
		j.limits[name] = jl.quota
		j.counts[name] = string(l.RefusalsCount)
		w := time.Duration(l.Window)
		if f := l.Family.Name; f != "" && f != "sliding-log" {
			if j.families == nil {
				j.families = map[string]documentedFamily{}
			}
			j.families[name] = documentedFamily{name: f, refill: float64(l.Family.RefillIn(w)) / float64(run)}
		}
		if w != run {
			if j.windows == nil {
				j.windows = map[string]float64{}
			}
			j.windows[name] = float64(w) / float64(run)
		}
		j.refusals[name] = analyze.Refusal{Status: uint16(l.Refused.Status), Body: jsonValue(l.Refused.Body), RPCCode: l.Refused.JSONRPCCode}
		if len(l.Routes) > 1 {
			if j.routes == nil {
				j.routes = map[string][]string{}
			}
			j.routes[name] = l.Routes
		}
		if l.Key.Kind != scenario.KeyClientAddress {
			if j.keys == nil {
				j.keys = map[string]string{}
			}
			j.keys[name] = l.Key.String()
		}
	}
	return j
}

// documentedFamily is a limit's family as its contract documents it: its
// name, and a token bucket's refill in the run's windows (0: none).
type documentedFamily struct {
	name   string
	refill float64
}

// familiesAt are the limiters j's limits document, judged at the run's
// window w: a token bucket's refill scaled to w as the window is.
func (j *contractJudging) familiesAt(w time.Duration) map[string]analyze.Family {
	if j == nil || j.families == nil {
		return nil
	}
	out := map[string]analyze.Family{}
	for name, f := range j.families {
		out[name] = analyze.Family{Name: f.name, Refill: time.Duration(f.refill * float64(w))}
	}
	return out
}

// windowsAt are the windows of j's limits longer than the run's, judged
// at the run's window w.
func (j *contractJudging) windowsAt(w time.Duration) map[string]time.Duration {
	if j == nil || j.windows == nil {
		return nil
	}
	out := map[string]time.Duration{}
	for name, k := range j.windows {
		out[name] = time.Duration(k * float64(w))
	}
	return out
}

// refusalsOf are the refusals j reads the input with (nil j: none, the
// documented API's).
func (j *contractJudging) refusalsOf() map[string]analyze.Refusal {
	if j == nil {
		return nil
	}
	return j.refusals
}

// apply judges by j's limits (nil j: cfg as it is).
func (j *contractJudging) apply(cfg *analyze.Config) {
	if j != nil {
		cfg.Limits, cfg.Refusals, cfg.Surfaces, cfg.Stacked, cfg.Keys, cfg.Routes, cfg.RefusalsCount = j.limits, j.refusals, j.names, j.stacked, j.keys, j.routes, j.counts
		cfg.Families, cfg.Windows = j.familiesAt(cfg.Window), j.windowsAt(cfg.Window)
	}
}

// recordedJudging is the judging of the run folder at path (or its
// results.bin) when it is a run of verify --contract, from the contract
// its run.json recorded; nil for any other input.
func recordedJudging(path string) (*contractJudging, error) {
	dir := path
	if filepath.Base(dir) == archive.ResultsFile {
		dir = filepath.Dir(dir)
	}
	info, err := archive.ReadRunInfo(dir)
	if err != nil || info == nil || info.Command != "verify" || info.Contract == nil || info.Contract.Text == "" {
		return nil, nil // not a contract's verify run (a file alone, an attack): judged as ever
	}
	c, err := scenario.ParseContract(filepath.Join(dir, archive.RunFile)+" (contract "+info.Contract.File+")", []byte(info.Contract.Text))
	if err != nil {
		return nil, err
	}
	j := judgingOf(c)
	return &j, nil
}

// jsonValue is v (as YAML decodes it) as encoding/json decodes the same
// value: numbers as float64, mappings keyed by string.
func jsonValue(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// speaksMCP reports whether any limit's route is an MCP call.
func (vc *verifyContract) speaksMCP() bool {
	return slices.ContainsFunc(vc.names, func(n string) bool { return vc.named[n].Wire == method.MCP })
}

// embedded is the reference target serving the contract with the run's
// window compressed to window, and every limit's as many times that as
// the contract says.
func (vc *verifyContract) embedded(window time.Duration, env func(string) (string, bool)) (refserver.Config, error) {
	cfg := refserver.DefaultConfig()
	cfg.Window = window
	rules, err := rulesOf(vc.c, env)
	if err != nil {
		return cfg, err
	}
	run := runWindowOf(vc.c, vc.stacked)
	for i := range rules.Limits {
		// as many times the run's window as the contract says (a stacked
		// limit's too)
		rules.Limits[i].Window = time.Duration(float64(vc.c.Limits[i].Window) / float64(run) * float64(window))
	}
	cfg.Rules = rules
	return cfg, nil
}

// contractPlan is what verify --contract sends for each limit of a
// contract at the contract's window, in requests, and how long the run
// takes: what contract check prints before anything is sent.
type contractPlan struct {
	window time.Duration
	limits []limitPlan
	// stacked are the limits stacked on others, in the contract's order.
	stacked []stackedPlan
	// about is how long the plan runs when no question is left open;
	// upTo, with the follow-ups verify may add (--max-duration's default).
	about, upTo time.Duration
}

// limitPlan is what the plan sends to prove one limit: from the limit
// address (its probes, the spoof probes among them), from a second
// address (isolation; for a limit counted by key, the limit key's probes
// from there), as a second key from the limit address (isolation, for a
// limit counted by key), and at most in follow-ups.
type limitPlan struct {
	name                                       string
	fromLimit, spoof, second, otherKey, follow int
	// keys are the identities sent as, for a limit counted by key.
	keys [2]string
	// global is set of a limit counted for everybody.
	global bool
	// others are the limit's routes after its first, and onOthers what
	// the plan sends them from the limit address (a budget they share).
	others   []string
	onOthers int
	// streams are the plan's streams from the limit address, with their
	// requests, in the plan's order.
	streams []streamCount
	// scale is the limit's window in the run's, when longer (see
	// scenario.NamedLimit.Scale).
	scale float64
}

// followUp ends a limit's line of the plan (at the run's window w): what
// a follow-up may add, sent as from says, or, for a limit of a longer
// window than the run's, that its probes keep their places in it.
func (l limitPlan) followUp(w time.Duration, from string) string {
	if l.scale > 1 {
		return fmt.Sprintf("; paced over its own window of %v (%.4g of the run's), with no follow-up", time.Duration(l.scale*float64(w)), l.scale)
	}
	return fmt.Sprintf("; if a question is left open, up to %d more %s (follow-up)", l.follow, from)
}

type streamCount struct {
	name string
	n    int
}

// stackedPlan is a stacked limit, at most how many requests the run
// sends to its route from the limit address, and, where the run can
// reach its quota paced under the limit it is stacked on, the stream that
// probes its onset (method.StreamStacked).
type stackedPlan struct {
	name  string
	st    analyze.Stacked
	quota int
	most  int
	// probe, when set, is the onset probe: n requests from the contract
	// address at pace per window of per (On's, as the contract says it),
	// over dur of the run's windows; why, when not, says why none (empty:
	// the run reaches the limit anyway).
	probe     bool
	n         int
	pace, dur float64
	per       time.Duration
	why       string
}

// stackedPace is how far under the limit it is stacked on a stacked
// limit's onset probe goes: four fifths of its rate.
const stackedPace = 0.8

// stackedExtra is how many requests the onset probe sends past the
// stacked limit's quota: enough to see it refuse.
const stackedExtra = 10

// probeStacked plans sp's onset probe, where the run (at window runW,
// the contract's or compressed) can reach its quota within until windows
// (--max-duration) at stackedPace of on's rate
// (its quota per window, or a documented token bucket's refill if
// slower), from an address of its own: a limit counted by client address
// only (an API key's would need a third key, one for everybody would
// count everybody's requests).
func (vc *verifyContract) probeStacked(sp *stackedPlan, on, l scenario.Limit, until float64, runW time.Duration) {
	w := time.Duration(on.Window)
	perWindow := float64(on.Quota.N)
	if r := refillPer(on, w); r > 0 {
		perWindow = min(perWindow, r)
	}
	pace := stackedPace * perWindow
	k := float64(l.Window) / float64(on.Window) // its window, in on's
	var reach float64                           // windows to its first refusal
	switch refill := refillPer(l, w); {
	case l.Key.Kind != scenario.KeyClientAddress:
		sp.why = "counted by " + l.Key.String() + ", its onset would need an identity of its own, which verify probes only for a limit counted by client address"
		return
	case refill > 0: // a token bucket drains at the pace less its refill
		if pace <= refill {
			sp.why = fmt.Sprintf("it refills faster than %s's limit lets the run send", on.Name)
			return
		}
		reach = float64(l.Quota.N) / (pace - refill)
	case l.Family.Name == "fixed-window" || l.Family.Name == "sliding-window-counter":
		sp.why = fmt.Sprintf("a %s's boundary may fall within the requests that would reach its quota, and admit them all", l.Family.Name)
		return
	default: // its quota within one of its windows
		if reach = float64(l.Quota.N) / pace; reach > k {
			sp.why = fmt.Sprintf("%s's limit lets the run send fewer than its quota in one of its windows", on.Name)
			return
		}
	}
	dur := (reach + stackedExtra/pace) * float64(w) / float64(vc.window) // in the run's windows
	if dur > until {
		sp.why = fmt.Sprintf("its onset, paced under %s's limit from a third address, takes about %v: verify --max-duration %v probes it", on.Name, time.Duration(dur*float64(runW)).Round(time.Second), time.Duration(math.Ceil(dur*float64(runW)/float64(time.Second)))*time.Second)
		return
	}
	sp.probe, sp.pace, sp.dur, sp.n, sp.per = true, pace, dur, int(math.Ceil(reach*pace))+stackedExtra, w
}

// refillPer is how many tokens limit l refills in w, a token bucket its
// contract documents (0: none).
func refillPer(l scenario.Limit, w time.Duration) float64 {
	r := l.Family.RefillIn(time.Duration(l.Window))
	if r <= 0 {
		return 0
	}
	return float64(l.Quota.N) * float64(w) / float64(r)
}

// freshAfter is how long the run's addresses must not have sent before it
// (attack.Options.Fresh) at the run's window w: the longest window a
// probed limit is judged at (a limit of a longer window, a stacked limit
// whose onset is probed), and a probed stacked token bucket's refill, so
// that each budget is whole when the run begins.
func (vc *verifyContract) freshAfter(plans []stackedPlan, w time.Duration) time.Duration {
	fresh := w
	for _, n := range vc.named {
		fresh = max(fresh, time.Duration(n.Scale*float64(w)))
	}
	for _, sp := range plans {
		if !sp.probe {
			continue
		}
		l := vc.c.Limits[slices.IndexFunc(vc.c.Limits, func(l scenario.Limit) bool { return l.Name == sp.name })]
		lw := time.Duration(l.Window)
		fresh = max(fresh, time.Duration(float64(max(lw, l.Family.RefillIn(lw)))/float64(vc.window)*float64(w)))
	}
	return fresh
}

// stackedStreams are the onset probes of plans, from source, each to its
// route as the limit it is stacked on sends it.
func (vc *verifyContract) stackedStreams(plans []stackedPlan, source string) []scenario.Stream {
	var out []scenario.Stream
	for _, sp := range plans {
		if !sp.probe {
			continue
		}
		on := vc.named[sp.st.On]
		out = append(out, scenario.Stream{Name: method.StreamStacked, Surface: sp.name, Wire: on.Wire, Sources: []string{source}, Requests: []scenario.Request{on.Request},
			Pacer: scenario.PacerSpec{Type: "constant", Rate: scenario.Rate{N: sp.pace, Per: scenario.Span{W: float64(sp.per) / float64(vc.window)}}, Count: sp.n}})
	}
	return out
}

// planContract is verify's plan of vc at the contract's window, with the
// default checks (limits and isolation), two addresses and the default
// --max-duration.
func planContract(vc *verifyContract) (contractPlan, error) {
	w := vc.window
	until := timeline.MaxUntil(0, w, true)
	prof, err := scenario.VerifyProfile(scenario.VerifyOptions{Sources: []string{"limit", "second"}, Surfaces: vc.names, Named: vc.named,
		Limits: true, Isolation: true, Seed: 1, FollowUpUntil: until})
	if err != nil {
		return contractPlan{}, err
	}
	p := contractPlan{window: w, upTo: time.Duration(until * float64(w)), limits: vc.count(prof, w)}
	held := &attack.FollowUp{}
	for _, n := range vc.names {
		held.Streams = append(held.Streams, n+"/"+method.StreamFollowUp, n+"/"+method.StreamFollowUpBurst)
	}
	p.stacked = vc.stackedPlans(p.limits, until, w)
	prof.Streams = append(prof.Streams, vc.stackedStreams(p.stacked, "third")...)
	p.about = attack.Plan{Profile: prof, Window: w, FollowUp: held}.Duration()
	return p, nil
}

// count is what prof sends for each of vc's probed limits at window w, in
// vc.names's order.
func (vc *verifyContract) count(prof *scenario.Profile, w time.Duration) []limitPlan {
	at := map[string]int{}
	limits := make([]limitPlan, 0, len(vc.names))
	for _, n := range vc.names {
		at[n] = len(limits)
		limits = append(limits, limitPlan{name: n, keys: vc.named[n].Keys, global: vc.named[n].Global, others: vc.routesOf(n)[1:], scale: vc.named[n].Scale})
	}
	for _, s := range prof.Streams {
		i, ok := at[s.Surface]
		if !ok {
			continue
		}
		n := int(schedule.Count(s.Pacer.Schedule(w)))
		l := &limits[i]
		switch {
		case s.Name == method.StreamFollowUp || s.Name == method.StreamFollowUpBurst:
			l.follow += n
			// held for a follow-up: not in the run's length
		case (s.Name == method.StreamIsolation || s.Name == method.StreamRebound) && l.keys[0] != "":
			l.otherKey += n
		case s.Name == method.StreamIsolation || s.Name == method.StreamRebound || s.Name == method.StreamSpoofAddress:
			l.second += n
		case isSharedRoute(s.Name):
			l.onOthers += n
		case strings.HasPrefix(s.Name, "spoof-"):
			l.spoof += n
			l.fromLimit += n
		default:
			l.fromLimit += n
			l.streams = append(l.streams, streamCount{s.Name, n})
		}
	}
	return limits
}

// isSharedRoute reports whether a stream goes to a shared budget's other
// routes.
func isSharedRoute(stream string) bool { _, ok := method.SharedRoute(stream); return ok }

// routesOf are the routes of vc's judged limit name (see judgedLimits),
// in the contract's order.
func (vc *verifyContract) routesOf(name string) []string {
	for _, l := range judgedLimits(vc.c) {
		if l.name == name {
			return l.Routes
		}
	}
	return nil
}

// stackedPlans are vc's stacked limits, in the contract's order, each with
// the most the plan counted in limits sends to its route from the limit
// address: its probes and spoof probes, and the follow-up's (and, for a
// limit counted by key or for everybody, the probes of that key, or of
// anybody, from the second address).
func (vc *verifyContract) stackedPlans(limits []limitPlan, until float64, runW time.Duration) []stackedPlan {
	var out []stackedPlan
	for _, l := range vc.c.Limits {
		st, ok := vc.stacked[l.Name]
		if !ok {
			continue
		}
		sp := stackedPlan{name: l.Name, st: st, quota: l.Quota.N}
		for _, on := range limits {
			if on.name == st.On {
				sp.most = on.fromLimit + on.follow
				if on.keys[0] != "" || on.global {
					// the limit key's (or anybody's) probes from the
					// second address count against it too
					sp.most += on.second
				}
			}
		}
		if sp.most < sp.quota {
			vc.probeStacked(&sp, vc.c.Limits[slices.IndexFunc(vc.c.Limits, func(o scenario.Limit) bool { return o.Name == st.On })], l, until, runW)
		}
		out = append(out, sp)
	}
	return out
}

// reach checks that the run cannot reach any stacked limit of plans (see
// stackedPlans): it sends fewer requests to the route from the limit
// address, over the whole run, follow-ups included, than the limit's
// quota, so that none of the refusals judged of the limit verify probes
// can be the stacked one's. One it can reach is an error naming it: its
// onset is probed from another address (probeStacked), never from the
// limit address.
func (vc *verifyContract) reach(plans []stackedPlan) error {
	for _, sp := range plans {
		if sp.most >= sp.quota {
			return fmt.Errorf("%s: limit %s: it is stacked on %s over route %s, and the run sends up to %d requests to the route from the limit address, at least its quota of %d: the refusals of the two could not be told apart; verify plans a stacked limit only where the run cannot reach it, so far (ratecheck contract check %s summarises the whole contract)",
				vc.file, sp.name, sp.st.On, sp.st.Route, sp.most, sp.quota, vc.file)
		}
	}
	return nil
}

// write says p, limit by limit, then the run's length.
func (p contractPlan) write(w io.Writer, file string) {
	addresses := "two client addresses (--sources: the limit address, and a second for isolation)"
	if slices.ContainsFunc(p.stacked, func(sp stackedPlan) bool { return sp.probe }) {
		addresses = "three client addresses (--sources: the limit address, a second for isolation, and a third for the onset of stacked limits)"
	}
	fmt.Fprintf(w, "verify --contract %s sends, at the window of %v, from %s:\n", file, p.window, addresses)
	for _, l := range p.limits {
		parts := make([]string, 0, len(l.streams)+1)
		for _, s := range l.streams {
			parts = append(parts, fmt.Sprintf("%s %d", s.name, s.n))
		}
		parts = append(parts, fmt.Sprintf("spoof %d", l.spoof))
		shared := ""
		if len(l.others) > 0 {
			shared = fmt.Sprintf(", %d to route %s from it among the spoof probes (one budget the routes share)", l.onOthers, strings.Join(l.others, ", "))
		}
		if l.global {
			fmt.Fprintf(w, "  limit %s: %d requests from the limit address (%s)%s, %d from the second address among the spoof probes (one budget for everybody)%s\n",
				l.name, l.fromLimit, strings.Join(parts, ", "), shared, l.second, l.followUp(p.window, "from the limit address"))
			continue
		}
		if l.keys[0] != "" {
			fmt.Fprintf(w, "  limit %s: %d requests as %s from the limit address (%s)%s, %d as %s from it (isolation and rebound: another key's budget), %d as %s from the second address (the key, not the address, is counted)%s\n",
				l.name, l.fromLimit, l.keys[0], strings.Join(parts, ", "), shared, l.otherKey, l.keys[1], l.second, l.keys[0], l.followUp(p.window, "as "+l.keys[0]+" from the limit address"))
			continue
		}
		fmt.Fprintf(w, "  limit %s: %d requests from the limit address (%s)%s, %d from the second address (isolation and rebound)%s\n",
			l.name, l.fromLimit, strings.Join(parts, ", "), shared, l.second, l.followUp(p.window, "from the limit address"))
	}
	for _, sp := range p.stacked {
		if sp.most >= sp.quota {
			fmt.Fprintf(w, "  limit %s (%d per %v): stacked on %s over route %s, and the run sends up to %d requests to the route from the limit address, at least its quota: verify refuses the contract before sending\n",
				sp.name, sp.quota, sp.st.Window, sp.st.On, sp.st.Route, sp.most)
			continue
		}
		if sp.probe {
			fmt.Fprintf(w, "  limit %s (%d per %v): stacked on %s over route %s, which the run sends at most %d requests from the limit address, fewer than its quota; its onset: %d requests from a third address, %.4g a window (under %s's limit), over about %v; the rest of it is judged inconclusive, never passed, saying that a run of about %v would prove it\n",
				sp.name, sp.quota, sp.st.Window, sp.st.On, sp.st.Route, sp.most, sp.n, sp.pace, sp.st.On, time.Duration(sp.dur*float64(p.window)).Round(time.Second), time.Duration(timeline.DefaultMaxDuration*float64(sp.st.Window)))
			continue
		}
		fmt.Fprintf(w, "  limit %s (%d per %v): stacked on %s over route %s, no probes of its own (%s): the run sends at most %d requests to the route from the limit address, fewer than its quota, so it is judged inconclusive, never passed, saying so and that a run of about %v would prove it\n",
			sp.name, sp.quota, sp.st.Window, sp.st.On, sp.st.Route, sp.why, sp.most, time.Duration(timeline.DefaultMaxDuration*float64(sp.st.Window)))
	}
	if p.about >= p.upTo {
		fmt.Fprintf(w, "  the run: about %v (verify --max-duration %v or more runs it), no follow-up (its streams run past the follow-ups' end); --window compresses it on a target that runs a shorter window\n", p.about.Round(time.Second), p.about.Round(time.Second)+time.Second)
		return
	}
	fmt.Fprintf(w, "  the run: about %v, up to %v with follow-ups (--max-duration); --window compresses it on a target that runs a shorter window\n", p.about.Round(time.Second), p.upTo.Round(time.Second))
}
