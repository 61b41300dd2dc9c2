package method

import "slices"

// Source roles of verify's probe plan: the index of the address a probe is
// sent from, in the order verify is given its addresses. With fewer
// addresses the last one given takes the later roles.
const (
	LimitSource     = 0 // the address whose limit is probed
	IsolationSource = 1 // a second address, sent from while the first is over its limit
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
}

// A Probe is one stream of verify's probe plan. Times are fractions of the
// window W. It is paced in one of two ways:
//   - a burst: Burst requests evenly over [0, Over·W], then, when
//     ProbeEvery is set, one every ProbeEvery·W from ProbeFrom·W to Until·W;
//   - a steady stream: PerWindow requests per W (0: at once, 2000 per
//     second) for Duration·W, or Count requests.
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
// [0.05w, 0.10w] (do refusals count?), forged forwarding headers and a
// second address at 0.11w (spoof, isolation), probes every 0.02w from
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
			return Probe{Stream: stream, Surface: surface, Source: LimitSource, Start: start}
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
				d := at(StreamDiscriminate, 1.2)
				d.Burst, d.Over, d.ProbeFrom, d.ProbeEvery, d.Until = L, 0.03, 0.05, 0.005, 1
				plan = append(plan, d)
			}
		}
		if o.Isolation {
			// Forged probes between plain ones from the same address: a
			// forged probe proves something only against plain ones sent
			// just before and after it. Ten plain probes go out g = W/(10L)
			// apart, and three of each forged header between them, so
			// that a limiter refilling L per window gives back at most one
			// request while one header's three are in flight.
			g := 1 / float64(10*L)
			control := at(StreamSpoofControl, 0.11)
			control.PerWindow, control.Count, control.After = float64(10*L), 10, StreamOver
			plan = append(plan, control)
			for i, h := range forged {
				p := at(h.stream, 0.11+(0.5+float64(i))*g)
				p.PerWindow, p.Count, p.After = float64(10*L)/3, 3, StreamOver
				p.Lag, p.Header, p.Value = (0.5+float64(i))*g, h.header, h.value
				plan = append(plan, p)
			}
			if o.Sources >= 2 {
				iso := at(StreamIsolation, 0.11)
				iso.Source, iso.Count, iso.After = IsolationSource, 3, StreamOver
				plan = append(plan, iso)
			}
		}
	}
	return plan
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
