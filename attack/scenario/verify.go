package scenario

import (
	"fmt"
	"slices"

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
	// Surfaces are the surfaces probed (nil: both).
	Surfaces []string
	// Discriminate adds a window of probes that tells the limiter
	// families apart: a second burst of L at 1.2w, then a probe every
	// 0.005w until 2.2w. Capacity comes back at the burst's age (a sliding
	// log), at the next boundary (a fixed window), in between (a
	// sliding-window counter) or steadily (a token bucket).
	Discriminate bool
}

// VerifyProfile returns the probe plan of docs/method.md for both surfaces in
// parallel: per surface, L requests over [0, 0.03w] and one more at 0.04w
// (onset), L refused requests over [0.05w, 0.10w] (do refusals count?),
// forged forwarding headers and a second address at 0.11w (spoof,
// isolation), probes every 0.02w from 0.12w to 1.2w and every 0.005w across
// [w, 1.1w] (window length, recovery edge), and the failure-table probes of
// errors.yaml from their own address. The over request also waits for every
// answer of the onset, the flood and the spoof and isolation probes for the
// over request's, so a slow machine delays the plan instead of blurring it.
func VerifyProfile(o VerifyOptions) (*Profile, error) {
	p := &Profile{Name: "verify", Description: "verify probe plan", Policy: Policy{Surface: "both", Window: Span{D: 60e9}}}
	src := func(i int) []string {
		if len(o.Sources) == 0 {
			return nil
		}
		return []string{o.Sources[min(i, len(o.Sources)-1)]}
	}
	once := func(n int) PacerSpec {
		return PacerSpec{Type: "constant", Rate: Rate{N: 2000, Per: Span{D: 1e9}}, Count: n}
	}
	for _, sf := range []struct {
		surface string
		limit   int
		req     Request
	}{
		{method.REST, o.RESTLimit, Request{Path: "/api/public/search", Query: map[string]string{"q": "rate limits", "limit": "5"}}},
		{method.MCP, o.MCPLimit, Request{RPC: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits", "limit": 5}}}},
	} {
		if o.Surfaces != nil && !slices.Contains(o.Surfaces, sf.surface) {
			continue
		}
		L := sf.limit
		stream := func(name string, sources []string, start float64, pacer PacerSpec, reqs ...Request) Stream {
			if len(reqs) == 0 {
				reqs = []Request{sf.req}
			}
			return Stream{Name: name, Surface: sf.surface, Sources: sources, Start: Span{W: start}, Requests: reqs, Pacer: pacer}
		}
		// after keeps the order the checks rely on when the machine is
		// slower than the plan: the (L+1)-th request goes out only once
		// the first L are answered, and so on.
		after := func(s Stream, prev string) Stream {
			s.After = []string{prev}
			return s
		}
		if o.Limits || o.Isolation {
			p.Streams = append(p.Streams,
				stream(method.StreamOnset, src(0), 0, PacerSpec{Type: "burst-then-probe", Burst: L, Over: Span{W: 0.03}}),
				after(stream(method.StreamOver, src(0), 0.04, once(1)), method.StreamOnset),
				after(stream(method.StreamFlood, src(0), 0.05, PacerSpec{Type: "burst-then-probe", Burst: L, Over: Span{W: 0.05}}), method.StreamOver),
				stream(method.StreamProbe, src(0), 0.12, PacerSpec{Type: "constant", Rate: Rate{N: 50, Per: Span{W: 1}}, Duration: Span{W: 1.08}}),
				stream(method.StreamEdge, src(0), 1.0, PacerSpec{Type: "constant", Rate: Rate{N: 200, Per: Span{W: 1}}, Duration: Span{W: 0.1}}))
			if o.Discriminate {
				p.Streams = append(p.Streams, stream(method.StreamDiscriminate, src(0), 1.2,
					PacerSpec{Type: "burst-then-probe", Burst: L, Over: Span{W: 0.03}, ProbeFrom: Span{W: 0.05}, ProbeEvery: Span{W: 0.005}, Until: Span{W: 1}}))
			}
		}
		if o.Isolation {
			spoofed := func(k, v string) Request {
				r := sf.req
				r.Headers = map[string]string{k: v}
				return r
			}
			// Forged probes between plain ones from the same address: a
			// forged probe proves something only against plain ones sent
			// just before and after it. Ten plain probes go out g = W/(10L)
			// apart, and three of each forged header between them, so
			// that a limiter refilling L per window gives back at most one
			// request while one header's three are in flight.
			g := 1 / float64(10*L)
			p.Streams = append(p.Streams, after(stream(method.StreamSpoofControl, src(0), 0.11,
				PacerSpec{Type: "constant", Rate: Rate{N: float64(10 * L), Per: Span{W: 1}}, Count: 10}), method.StreamOver))
			for i, h := range []struct{ stream, header, value string }{
				{method.StreamSpoofXForwardedFor, "X-Forwarded-For", "198.51.100.7"},
				{method.StreamSpoofForwarded, "Forwarded", "for=198.51.100.7"},
				{method.StreamSpoofXRealIP, "X-Real-IP", "198.51.100.7"},
			} {
				forged := stream(h.stream, src(0), 0.11+(0.5+float64(i))*g,
					PacerSpec{Type: "constant", Rate: Rate{N: float64(10*L) / 3, Per: Span{W: 1}}, Count: 3}, spoofed(h.header, h.value))
				forged.Lag = Span{W: (0.5 + float64(i)) * g}
				p.Streams = append(p.Streams, after(forged, method.StreamOver))
			}
			if len(o.Sources) >= 2 {
				p.Streams = append(p.Streams, after(stream(method.StreamIsolation, src(1), 0.11, once(3)), method.StreamOver))
			}
		}
	}
	if o.Contract {
		rows, err := LoadEmbedded("errors.yaml")
		if err != nil {
			return nil, err
		}
		start := 0.2
		if len(o.Sources) < 2 {
			start = 1.25 // from the limit address, once its budget is back
		}
		for _, s := range rows.Streams {
			if o.Surfaces != nil && !slices.Contains(o.Surfaces, s.Surface) {
				continue // a surface not verified is not probed
			}
			s.Sources, s.Start, s.Expect = src(2), Span{W: start}, nil
			p.Streams = append(p.Streams, s)
		}
	}
	if len(p.Streams) == 0 {
		return nil, fmt.Errorf("no check group selected")
	}
	return p, nil
}

// LoadEmbedded loads a shipped profile by file name.
func LoadEmbedded(name string) (*Profile, error) {
	b, err := profiles.FS.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return ParseProfile("profiles/"+name, b)
}
