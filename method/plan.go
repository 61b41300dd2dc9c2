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
	// Surfaces are the surfaces probed (nil: both).
	Surfaces []string
	// Discriminate adds a window of probes that tells the limiter
	// families apart: a second burst of L at 1.2w, then a probe every
	// 0.005w until 2.2w. Capacity comes back at the burst's age (a sliding
	// log), at the next boundary (a fixed window), in between (a
	// sliding-window counter) or steadily (a token bucket).
	Discriminate bool
	// Seed orders the spoof probes (SpoofOrder): the run's seed.
	Seed uint64
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
// probes in a random order from 0.11w (spoof, see spoofProbes) and a
// second address at 0.11w (isolation), probes every 0.02w from
// 0.12w to 1.2w and every 0.005w across [w, 1.1w] (window length,
// recovery edge). The over request waits for every answer of the onset,
// and the flood and the spoof and isolation probes for the over request's,
// so a slow machine delays the plan instead of blurring it.
func Plan(o PlanOptions) []Probe {
	var plan []Probe
	for _, surface := range []string{REST, MCP} {
		if o.Surfaces != nil && !slices.Contains(o.Surfaces, surface) {
			continue
		}
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
			probe.PerWindow, probe.Duration = 50, 1.08
			edge.PerWindow, edge.Duration = 200, 0.1
			plan = append(plan, onset, over, flood, probe, edge)
			if o.Discriminate {
				d := at(streamDiscriminate, 1.2)
				d.Burst, d.Over, d.ProbeFrom, d.ProbeEvery, d.Until = L, 0.03, 0.05, 0.005, 1
				plan = append(plan, d)
			}
		}
		if o.Isolation {
			plan = append(plan, spoofProbes(surface, o.Seed)...)
			if o.Sources >= 2 {
				iso := at(StreamIsolation, 0.11)
				iso.Source, iso.Count, iso.After = isolationSource, 3, StreamOver
				plan = append(plan, iso)
			}
		}
	}
	return plan
}

// spoofPerHeader is how many probes forge each header, and how many plain
// probes go out per header in the same span. With 6 forged against 18
// plain, the spoof check's exact test (one-sided, the smallest of three
// p-values held to 0.01/3 by Holm's step-down) rejects whenever every
// forged probe is admitted and at most 4 plain ones are: against a trusted
// header its power is 1 when every plain probe is refused, 0.9945 when each
// is admitted with chance L·SpoofSpan/36 = 0.067 (a limiter refilling 240
// per window gives back that share at this pace; 0.9998 at MCP's 0.033),
// 0.97 at 0.1. 4 is the least that rejects at all when every forged probe
// is admitted and every plain one refused.
const spoofPerHeader = 6

// SpoofSpan is how long the spoof probes take, in windows: they go out from
// 0.11w at an even pace, before the sparse probes begin at 0.12w.
const SpoofSpan = 0.01

// spoofProbes are the spoof probes of a surface: SpoofPerHeader forging
// each header and as many plain ones per header, one every
// SpoofSpan/(2·3·SpoofPerHeader) windows from 0.11w (after the over
// request's answer) in the random order SpoofOrder(seed) gives, so that a
// limiter that ignores the headers admits both kinds alike whatever its
// timing (one refilling L per window gives back L·SpoofSpan requests over
// the span: 2.4 on REST, 1.2 on MCP).
func spoofProbes(surface string, seed uint64) []Probe {
	order := SpoofOrder(seed, len(forged))
	g := SpoofSpan / float64(len(order))
	plan := make([]Probe, 1+len(forged))
	for k := range plan {
		p := Probe{Stream: StreamSpoofControl, Surface: surface, Source: limitSource, Start: 0.11, After: StreamOver}
		if k > 0 {
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
