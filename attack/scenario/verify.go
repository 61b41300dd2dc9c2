package scenario

import (
	"fmt"
	"maps"
	"slices"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/profiles"
)

// VerifyOptions shape the probe plan of verify.
type VerifyOptions struct {
	RESTLimit, MCPLimit int
	// Sources are the limit source, the isolation source and the contract
	// source, in that order; fewer are allowed (isolation then has no
	// second address, and contract probes go out last from the last one).
	Sources []string
	// Limits, Isolation and Contract select the probe groups.
	Limits, Isolation, Contract bool
	// Surfaces are the surfaces probed (nil: both): the documented API's
	// rest and mcp, or the names of Named's limits.
	Surfaces []string
	// Named are a contract's limits verify probes as surfaces of their
	// own, by name (nil: none; the documented API's rest and mcp are
	// probed with RESTLimit and MCPLimit).
	Named map[string]NamedLimit
	// Seed orders the spoof probes (method.SpoofOrder): the run's seed.
	Seed uint64
	// FollowUpUntil adds the follow-up probes (method.FollowUpProbe) of
	// each surface until then, in windows (0: none).
	FollowUpUntil float64
}

// A NamedLimit is a contract's limit as verify probes it: its route's
// request, sent as Wire (method.REST or method.MCP) with the limit
// identity's headers, and its quota per window.
type NamedLimit struct {
	Request Request
	Wire    string
	Quota   int
	// Keys, for a limit counted by an API key, name the identities whose
	// keys the plan sends as (method.LimitKey, method.SecondKey); their
	// results are labelled by them (Stream.Key). Request carries the
	// first's headers; Second is Request as the second sends it, with its
	// headers alone.
	Keys   [2]string
	Second Request
	// Global is set of a limit counted for everybody: its results are
	// labelled archive.GlobalSource, whatever address sent them.
	Global bool
	// Others are the requests of the limit's routes after its first, a
	// budget they share (method.PlanOptions.SharedRoutes), sent as
	// Request is.
	Others []Request
	// Scale is the limit's window in the run's windows, when it is longer
	// (a contract's limits of several windows go by the shortest): its
	// probes' times scale by it, and it has no follow-up (0 or 1: the
	// run's window).
	Scale float64
}

// keyed reports whether n is counted by an API key.
func (n NamedLimit) keyed() bool { return n.Keys[0] != "" }

// VerifyProfile returns verify's probe plan (method.Plan) as a profile, for
// both surfaces in parallel, with the failure-table probes of errors.yaml
// from their own address (method.ContractStart).
func VerifyProfile(o VerifyOptions) (*Profile, error) {
	p := &Profile{Name: "verify", Description: "verify probe plan", Policy: Policy{Surface: "both", Window: Span{D: 60e9}}}
	src := func(i int) []string {
		if len(o.Sources) == 0 {
			return nil
		}
		return []string{o.Sources[min(i, len(o.Sources)-1)]}
	}
	limit := func(surface string) int {
		if n, ok := o.Named[surface]; ok {
			return n.Quota
		}
		if surface == method.MCP {
			return o.MCPLimit
		}
		return o.RESTLimit
	}
	keyed := func(surface string) bool { return o.Named[surface].keyed() }
	global := func(surface string) bool { return o.Named[surface].Global }
	shared := func(surface string) int { return len(o.Named[surface].Others) }
	plan := method.Plan(method.PlanOptions{Limits: o.Limits, Isolation: o.Isolation, Limit: limit, Sources: len(o.Sources),
		Surfaces: o.Surfaces, Seed: o.Seed, Keyed: keyed, Global: global, SharedRoutes: shared, FollowUpUntil: o.FollowUpUntil})
	for _, pr := range plan {
		s := probeStream(pr, src(pr.Source))
		if n, ok := o.Named[pr.Surface]; ok {
			req := n.Request
			if pr.Route > 0 {
				req = n.Others[pr.Route-1]
			}
			switch {
			case n.keyed():
				s.As = n.Keys[pr.Key]
				s.Key = archive.KeySource(s.As)
				if pr.Key == method.SecondKey {
					req = n.Second
				}
			case n.Global:
				s.Key = archive.GlobalSource
			}
			s.Wire, s.Requests[0] = n.Wire, withHeaders(req, s.Requests[0].Headers)
			if n.Scale > 1 {
				if pr.Stream == method.StreamFollowUp || pr.Stream == method.StreamFollowUpBurst {
					continue // held for a question left open, in the run's windows
				}
				s.scale(n.Scale)
			}
		}
		p.Streams = append(p.Streams, s)
	}
	if o.Contract {
		rows, err := LoadEmbedded("errors.yaml")
		if err != nil {
			return nil, err
		}
		start := method.ContractStart(len(o.Sources))
		for _, s := range rows.Streams {
			if o.Surfaces != nil && !slices.Contains(o.Surfaces, s.Surface) {
				continue // a surface not verified is not probed
			}
			s.Sources, s.Start, s.Expect = src(method.ContractSource), Span{W: start}, nil
			p.Streams = append(p.Streams, s)
		}
	}
	if len(p.Streams) == 0 {
		return nil, fmt.Errorf("no check group selected")
	}
	return p, nil
}

// withHeaders is r with the headers h (a spoof probe's forged one) added.
func withHeaders(r Request, h map[string]string) Request {
	if len(h) == 0 {
		return r
	}
	merged := maps.Clone(r.Headers)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, h)
	r.Headers = merged
	return r
}

// probeStream is the stream of one probe of the plan: the search request
// of its surface (with its forged header, if any), paced as the probe says.
func probeStream(pr method.Probe, sources []string) Stream {
	req := RouteOf(pr.Surface)
	if pr.Header != "" {
		req.Headers = map[string]string{pr.Header: pr.Value}
	}
	s := Stream{Name: pr.Stream, Surface: pr.Surface, Sources: sources, Start: Span{W: pr.Start}, Requests: []Request{req}}
	switch {
	case len(pr.At) > 0:
		s.Pacer = scattered(pr.At)
	case pr.Burst > 0:
		s.Pacer = PacerSpec{Type: "burst-then-probe", Burst: pr.Burst, Over: Span{W: pr.Over}}
		if pr.ProbeEvery > 0 {
			s.Pacer.ProbeFrom, s.Pacer.ProbeEvery, s.Pacer.Until = Span{W: pr.ProbeFrom}, Span{W: pr.ProbeEvery}, Span{W: pr.Until}
		}
	case pr.PerWindow == 0: // at once
		s.Pacer = PacerSpec{Type: "constant", Rate: Rate{N: 2000, Per: Span{D: 1e9}}, Count: pr.Count}
	default:
		s.Pacer = PacerSpec{Type: "constant", Rate: Rate{N: pr.PerWindow, Per: Span{W: 1}}, Count: pr.Count, Duration: Span{W: pr.Duration}}
	}
	if pr.After != "" {
		s.After = []string{pr.After}
	}
	if pr.Lag > 0 {
		s.Lag = Span{W: pr.Lag}
	}
	s.Group = pr.Group
	return s
}

// scale multiplies every time of the stream given in windows by k: its
// start, lag and pacing, as if its window were k of the run's.
func (s *Stream) scale(k float64) {
	for _, sp := range []*Span{&s.Start, &s.Lag, &s.Pacer.Over, &s.Pacer.ProbeFrom, &s.Pacer.ProbeEvery, &s.Pacer.Until, &s.Pacer.Duration, &s.Pacer.Period,
		&s.Pacer.Rate.Per, &s.Pacer.From.Per, &s.Pacer.To.Per, &s.Pacer.Amplitude.Per} {
		sp.W *= k
	}
	for i := range s.Pacer.Steps {
		s.Pacer.Steps[i].Rate.Per.W *= k
		s.Pacer.Steps[i].Duration.W *= k
	}
}

// scattered is a steps pacer that sends one request at each of at
// (fractions of the window, rising): a step of one request, then a pause
// (a step at rate 0) until the next.
func scattered(at []float64) PacerSpec {
	ps := PacerSpec{Type: "steps", Count: len(at)}
	step := func(n, d float64) {
		ps.Steps = append(ps.Steps, Step{Rate: Rate{N: n, Per: Span{W: 1}}, Duration: Span{W: d}})
	}
	last := 0.0
	for i, t := range at {
		if t > last {
			step(0, t-last)
		}
		// Half the gap to the next (or a thousandth of the window) at a
		// rate that plans one request in it.
		d := 0.001
		if i+1 < len(at) {
			d = (at[i+1] - t) / 2
		}
		step(1/(2*d), d)
		last = t + d
	}
	return ps
}

// LoadEmbedded loads a shipped profile by file name.
func LoadEmbedded(name string) (*Profile, error) {
	b, err := profiles.FS.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return ParseProfile("profiles/"+name, b)
}
