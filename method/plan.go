package method

import (
	"math/rand/v2"
	"slices"
)

// Source roles of verify's probe plan: the index of the address a probe is
// sent from, in the order verify is given its addresses. With fewer
// addresses the last one given takes the later roles.
const (
	limitSource     = 0 // the address whose limit is probed
	isolationSource = 1 // a second address, sent from while the first is over its limit
	ContractSource  = 2 // the failure-table probes' own address
)

// Key roles of verify's probe plan, for a surface whose limit is counted
// by an API key (PlanOptions.Keyed): the key a probe is sent as.
const (
	LimitKey  = 0 // the key whose limit is probed
	SecondKey = 1 // a second key, sent as from the limit address while the first is over its limit
)

// PlanOptions select what verify's probe plan sends. The zero value plans
// nothing.
type PlanOptions struct {
	// Limits and Isolation select the probe groups; the failure-table
	// probes (Contract) are the shipped errors profile's streams, which the
	// caller adds at ContractStart.
	Limits, Isolation bool
	// Limit returns the limit L of a surface per window.
	Limit func(surface string) int
	// Sources is how many source addresses the plan has (the isolation
	// probes need two).
	Sources int
	// Surfaces are the surfaces probed (nil: both): the documented API's
	// rest and mcp, planned in that order, or a contract's limits, planned
	// in the order given.
	Surfaces []string
	// Seed orders the spoof probes (SpoofOrder): the run's seed.
	Seed uint64
	// Keyed reports whether a surface's limit is counted by an API key
	// rather than by the client address (nil: none is). The key, not the
	// address, is then what isolation probes: the isolation burst and its
	// rebound go out from the limit address as a second key (SecondKey),
	// and the spoof probes add spoofPerHeader of the limit key from the
	// second address (StreamSpoofAddress) among the plain ones, which a
	// limit counted by the key refuses alike.
	Keyed func(surface string) bool
	// Global reports whether a surface's limit is one budget for
	// everybody (nil: none is). Isolation then proves that the second
	// address shares it: no isolation burst or rebound (a budget of its
	// own is not what is claimed), and the spoof probes add
	// spoofPerHeader from the second address (StreamSpoofAddress) among
	// the plain ones, which a budget for everybody refuses alike.
	Global func(surface string) bool
	// SharedRoutes says how many routes besides its own draw on a
	// surface's budget (nil: none): a contract's limit over several
	// routes, probed on its first. The spoof probes then add
	// spoofPerHeader on each other route (SharedRouteStream), among as
	// many plain ones more, which one budget the routes share refuses
	// alike (Probe.Route says which).
	SharedRoutes func(surface string) int
	// FollowUpUntil, when above FollowUpStart, adds each surface's
	// follow-up probes (FollowUpProbe) until then, in windows from the
	// start: verify holds them back and sends only what a run that left a
	// question open needs (the caller decides; see StreamFollowUp).
	FollowUpUntil float64
}

// A Probe is one stream of verify's probe plan. Times are fractions of the
// window W. It is paced in one of two ways:
//   - a burst: Burst requests evenly over [0, Over·W], then, when
//     ProbeEvery is set, one every ProbeEvery·W from ProbeFrom·W to Until·W;
//   - a steady stream: PerWindow requests per W (0: at once, 2000 per
//     second) for Duration·W, or Count requests;
//   - scattered: one request at each of At (fractions of W after Start,
//     rising), when At is set.
type Probe struct {
	Stream, Surface string
	// Source is the role of the address it is sent from (LimitSource …).
	Source int
	// Key is the role of the key it is sent as (LimitKey, SecondKey), on
	// a surface counted by key.
	Key int
	// Route is which of a shared budget's routes it is sent to: 0 the
	// surface's own, i the i-th of the others (PlanOptions.SharedRoutes).
	Route int
	// Start is when it starts; Lag how far its first request trails an
	// opened gate; After names the stream whose answers it waits for.
	Start, Lag float64
	After      string
	Burst      int
	Over       float64
	ProbeFrom  float64
	ProbeEvery float64
	Until      float64
	PerWindow  float64
	Count      int
	Duration   float64
	At         []float64
	// Header and Value are the forwarding header it forges, if any.
	Header, Value string
	// Group names probes whose requests go out in due order across them
	// (a surface's spoof probes: forged and plain are comparable because
	// they are interleaved at random, and a stall must not send one kind
	// first).
	Group string
}

// forged are the forwarding headers the spoof probes forge, each with its
// stream, all naming one address that is not the sender's.
var forged = []struct{ stream, header, value string }{
	{StreamSpoofXForwardedFor, "X-Forwarded-For", "198.51.100.7"},
	{StreamSpoofForwarded, "Forwarded", "for=198.51.100.7"},
	{StreamSpoofXRealIP, "X-Real-IP", "198.51.100.7"},
}

// Plan returns verify's probe plan of the limit and isolation groups for
// both surfaces in parallel (docs/method.md): per surface, L requests over
// [0, 0.03w] and one more at 0.04w (onset), L refused requests over
// [0.05w, 0.10w] (do refusals count?), forged forwarding headers and plain
// probes in a random order from 0.11w (spoof, see spoofProbes), a burst
// of L from a second address over [0.11w, 0.17w] (isolation) and its
// rebound at ReboundStart, probes every 0.02w from 0.12w to 1.2w and every
// 0.005w across [w, 1.1w] (window length, recovery edge), and a second
// burst of L at SecondStart; with FollowUpUntil, the follow-up probes the
// caller holds back. The over request waits for every answer of the
// onset, and the flood, the sparse probes and the spoof and isolation
// probes for the over request's, so a slow machine delays the plan
// instead of blurring it.
func Plan(o PlanOptions) []Probe {
	var plan []Probe
	for _, surface := range planned(o.Surfaces) {
		L := o.Limit(surface)
		at := func(stream string, start float64) Probe {
			return Probe{Stream: stream, Surface: surface, Source: limitSource, Start: start}
		}
		if o.Limits || o.Isolation {
			onset, over, flood := at(StreamOnset, 0), at(StreamOver, 0.04), at(StreamFlood, 0.05)
			onset.Burst, onset.Over = L, 0.03
			over.Count, over.After = 1, StreamOnset
			flood.Burst, flood.Over, flood.After = L, 0.05, StreamOver
			probe, edge := at(StreamProbe, 0.12), at(StreamEdge, 1.0)
			// The probes wait for the over request's answer too: on a
			// loaded host the onset's last requests, still queued at the
			// target, were counted after the first probe, which the
			// target then counted among the first burst's L.
			probe.PerWindow, probe.Duration, probe.After = 50, 1.08, StreamOver
			edge.PerWindow, edge.Duration = 200, 0.1
			// The second burst comes a window and a little after the
			// flood's last answer (1.14 W on time): on a loaded host a late
			// flood would still fill the window at a fixed 1.14 W, and a
			// second burst all refused then fits a longer window forgetting
			// refusals as well as the documented log.
			second := at(StreamSecond, SecondStart)
			second.Burst, second.Over, second.After, second.Lag = L, 0.03, StreamFlood, SecondStart-0.10
			plan = append(plan, onset, over, flood, probe, edge, second)
			if o.FollowUpUntil > FollowUpStart {
				plan = append(plan, FollowUpProbes(surface, L, o.FollowUpUntil)...)
			}
		}
		if o.Isolation {
			global := o.Global != nil && o.Global(surface)
			keyed := (o.Keyed != nil && o.Keyed(surface) || global) && o.Sources >= 2
			routes := 0
			if o.SharedRoutes != nil {
				routes = o.SharedRoutes(surface)
			}
			plan = append(plan, spoofProbes(surface, o.Seed, keyed, routes)...)
			if o.Sources >= 2 && !global {
				iso, rebound := at(StreamIsolation, 0.11), at(StreamRebound, ReboundStart)
				iso.Source, iso.Burst, iso.Over, iso.After = isolationSource, L, IsolationSpan, StreamOver
				// The rebound keeps its place in the isolation burst's
				// ageing however late that burst went out.
				rebound.Source, rebound.Burst, rebound.Over = isolationSource, L, 0.03
				rebound.After, rebound.Lag = StreamIsolation, ReboundStart-(0.11+IsolationSpan)
				if keyed {
					// Another key from the same address: the budget
					// isolation proves is the key's.
					iso.Source, iso.Key = limitSource, SecondKey
					rebound.Source, rebound.Key = limitSource, SecondKey
				}
				plan = append(plan, iso, rebound)
			}
		}
	}
	return plan
}

// spoofPerHeader is how many probes forge each header, and how many plain
// probes go out per header in the same span. With 10 forged against 30
// plain, the spoof check's exact test (one-sided, the smallest of three
// p-values held to 0.0001/3 by Holm's step-down) rejects whenever every
// forged probe is admitted and at most 7 plain ones are: against a trusted
// header its power is 1 when every plain probe is refused, 0.99999 when
// each is admitted with chance L·SpoofSpan/60 = 0.04 (a limiter refilling
// 240 per window gives back that share at this pace; MCP's is 0.02), 0.9994
// at 0.067, 0.992 at 0.1. Fewer would not do at that false-alarm rate: 6
// per header rejects only when every plain probe is refused, 8 has power
// 0.93 at 0.067.
const spoofPerHeader = 10

// SpoofSpan is how long the spoof probes take, in windows: they go out from
// 0.11w at an even pace, before the sparse probes begin at 0.12w.
const SpoofSpan = 0.01

// spoofProbes are the spoof probes of a surface: spoofPerHeader forging
// each header and as many plain ones per header, one every
// SpoofSpan/(2·3·spoofPerHeader) windows from 0.11w (after the over
// request's answer) in the random order SpoofOrder(seed) gives, so that a
// limiter that ignores the headers admits both kinds alike whatever its
// timing (one refilling L per window gives back L·SpoofSpan requests over
// the span: 2.4 on REST, 1.2 on MCP). On a surface counted by key or
// for everybody (keyed), spoofPerHeader more of the limit key (or none)
// from the second address (StreamSpoofAddress), and as many plain ones
// more, go out among them: a limit counted by the key, or for everybody,
// refuses them alike; one counted per address too admits them. On a
// surface whose budget routes other than its own draw on (routes of
// them), spoofPerHeader more on each of those routes
// (SharedRouteStream), with as many plain ones more: one budget the
// routes share refuses them alike, a budget per route admits them.
func spoofProbes(surface string, seed uint64, keyed bool, routes int) []Probe {
	kinds := len(forged)
	if keyed {
		kinds++
	}
	kinds += routes
	order := SpoofOrder(seed, kinds)
	g := SpoofSpan / float64(len(order))
	plan := make([]Probe, 1+kinds)
	for k := range plan {
		p := Probe{Stream: StreamSpoofControl, Surface: surface, Source: limitSource, Start: 0.11, After: StreamOver, Group: surface + "/" + streamSpoof}
		switch address := len(forged) + 1; {
		case k > address || k == address && !keyed:
			i := k - len(forged)
			if keyed {
				i--
			}
			p.Stream, p.Route = SharedRouteStream(i), i
		case k == address:
			p.Stream, p.Source = StreamSpoofAddress, isolationSource
		case k > 0:
			h := forged[k-1]
			p.Stream, p.Header, p.Value = h.stream, h.header, h.value
		}
		for slot, kind := range order {
			if kind == k {
				p.At = append(p.At, float64(slot)*g)
			}
		}
		p.Count = len(p.At)
		plan[k] = p
	}
	return plan
}

// SpoofOrder returns the order of the spoof probes of a run with the given
// seed: per slot, 0 for a plain probe or i for one forging the i-th of the
// headers; SpoofPerHeader of each header and as many plain ones per header,
// shuffled. The same seed gives the same order.
func SpoofOrder(seed uint64, headers int) []int {
	order := make([]int, 0, 2*headers*spoofPerHeader)
	for h := 1; h <= headers; h++ {
		for range spoofPerHeader {
			order = append(order, 0, h)
		}
	}
	r := rand.New(rand.NewPCG(seed, 0x5b00f))
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// ContractStart is when the failure-table probes start, in windows: soon
// from an address of their own, or from the limit address once its budget
// is back when the plan has fewer than two addresses.
func ContractStart(sources int) float64 {
	if sources < 2 {
		return 1.25
	}
	return 0.2
}

// SecondStart is when the second burst starts, in windows.
const SecondStart = 1.14

// IsolationSpan is how long the isolation address's burst of L takes, in
// windows, from 0.11 W: twice the onset's, so that its requests age out of
// a sliding log over [1.11 W, 1.17 W] and the rebound, twice as fast from
// ReboundStart, meets that ageing half done however a busy host shifted
// either by up to 0.02 W.
const IsolationSpan = 0.06

// ReboundStart is when the isolation address's rebound (a burst of L over
// 0.03 W) starts, in windows: a window after its own burst began, plus a
// sixth of that burst. A sliding log, counting refusals or not, has given
// back only the requests of the burst that have aged (about 0.6 L by the
// rebound's end); a fixed window opened at the address's first request,
// and a token bucket, have given back all L; a sliding-window counter
// still weighs the whole burst, so it admits only a few.
const ReboundStart = 1.12

// FollowUpStart is when verify's follow-up probes may start, in windows:
// when the plan's own probes end.
const FollowUpStart = 1.2

// FollowUpEvery is the follow-up probes' spacing, in windows: the plan's
// sparse probes' own. Denser probes would fill the window of a limiter
// that counts refusals by themselves (at MCP's 120 per window, one every
// 0.01 W is 100 of them) and hold off the very recovery they look for.
const FollowUpEvery = 0.02

// FollowUpProbes are the follow-up of a surface of limit L, from the limit
// address: one request every FollowUpEvery windows from FollowUpStart
// until until, and a burst of L over FollowUpBurstSpan. After the second
// burst the rivals a run leaves open give capacity back at different
// moments (a sliding log when that burst ages out of its window, whatever
// its length; a fixed window at its next boundary; a counter from its
// next boundary on; a token bucket steadily), so probes through the time
// they differ tell them apart; rivals that give it back at the same moment
// (a log of one length, a counter of one phase) still hold different
// counts then, which the burst measures, as the second burst does within
// the plan; and rivals that give it back at different moments differ most
// in between, where one has it all back and the other none (a fixed
// window whose boundary follows the documented window's end and a log
// forgetting refusals admit the same probes, and a burst after both have
// given everything back alike: only a burst between them tells them
// apart). The caller starts the burst and cuts the probes where its
// question needs them (the analyzer's follow-up need says when: the burst
// just after the first moment a rival gives capacity back at once, at the
// latest ending FollowUpBurstLead windows before the probes, FollowUpBurstAt
// of their end): the plan holds them until then.
func FollowUpProbes(surface string, L int, until float64) []Probe {
	probes := Probe{Stream: StreamFollowUp, Surface: surface, Source: limitSource, Start: FollowUpStart, PerWindow: 1 / FollowUpEvery, Duration: until - FollowUpStart}
	burst := Probe{Stream: StreamFollowUpBurst, Surface: surface, Source: limitSource, Start: FollowUpStart, Burst: L, Over: FollowUpBurstSpan}
	return []Probe{probes, burst}
}

// FollowUpBurstSpan is how long the follow-up burst takes, in windows, and
// FollowUpBurstLead how long before the follow-up probes end it does.
const (
	FollowUpBurstSpan = 0.03
	FollowUpBurstLead = 0.01
)

// FollowUpAgedOut is how long after a run's last answer the follow-up
// burst that weighs a budget spent before the run against a lower limit
// starts, in windows: a window, every request of the run then out of it,
// and a margin for a limiter whose window or clock runs a little long.
const FollowUpAgedOut = 1.05

// FollowUpBurstAt is when the follow-up burst starts to end
// FollowUpBurstLead windows before until, in windows: the latest it starts
// when the probes go on until until.
func FollowUpBurstAt(until float64) float64 {
	return until - FollowUpBurstLead - FollowUpBurstSpan
}

// planned is the order the plan probes surfaces in: the documented API's
// rest then mcp (those of them given; nil: both), else the given order.
func planned(surfaces []string) []string {
	documented := []string{REST, MCP}
	if surfaces == nil {
		return documented
	}
	if slices.ContainsFunc(surfaces, func(s string) bool { return !slices.Contains(documented, s) }) {
		return surfaces
	}
	return slices.DeleteFunc(documented, func(s string) bool { return !slices.Contains(surfaces, s) })
}
