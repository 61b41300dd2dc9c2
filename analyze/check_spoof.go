package analyze

import (
	"fmt"
	"math"
	"strings"

	"github.com/connectbyjbrh/ratecheck/method"
)

func init() { register(method.CheckSpoof, func() checkRun { return &spoofCheck{} }) }

// spoofCheck judges verify's spoof pairs: probes with a forged forwarding
// header and the plain probes sent beside them, from the primary.
type spoofCheck struct {
	probes []spoofProbe // the first 1000, in send order
}

// spoofProbe is a judged request of verify's spoof pairs: a forged-header
// probe or the plain one sent beside it.
type spoofProbe struct {
	start, end         int64
	header             string // the forged header; "" for a plain probe
	admitted, refused  bool
	definite, possible int32
}

func (c *spoofCheck) judgedPrimary(s *surfaceRun, p sighting) {
	if !(p.forged || p.stream == method.StreamSpoofControl) || len(c.probes) >= 1000 {
		return
	}
	r := &p.Record
	c.probes = append(c.probes, spoofProbe{start: r.Start, end: r.End, header: method.ForgedHeader(p.stream), admitted: admitted(r), refused: refused(r),
		definite: p.Definite, possible: p.Definite + p.Ambiguous})
}

// judge weighs the forged-header probes of each header against the plain
// probes sent from the same address just before and after each. A forged
// probe is over the limit when both were refused (or provably over the
// limit the target shows): the address had no budget then. Forged probes
// refused while over the limit prove that header buys nothing; more
// admitted while over the limit than the address's own budget could have
// refilled in the meantime (a bucket refills, a window ages out) prove it
// buys a fresh budget; anything else proves nothing.
func (c *spoofCheck) judge(e *evidence) (string, string) {
	var plain []spoofProbe
	forged := map[string][]spoofProbe{}
	var headers []string
	for _, p := range c.probes {
		switch {
		case p.header == "":
			plain = append(plain, p)
		case forged[p.header] == nil:
			headers = append(headers, p.header)
			fallthrough
		default:
			forged[p.header] = append(forged[p.header], p)
		}
	}
	if len(headers) == 0 {
		return Skip, "no probe with forged forwarding headers"
	}
	over := func(p spoofProbe) bool { return p.refused || 1+int(p.definite) >= e.Leff+1 }
	near := int64(e.W / 100)
	bracketed := func(f spoofProbe) bool {
		before, after := false, false
		for _, q := range plain {
			switch d := q.start - f.start; {
			case d <= 0 && d >= -near && over(q):
				before = true
			case d >= 0 && d <= near && over(q):
				after = true
			}
		}
		return before && after
	}
	var trusted, unproven, refusedBy []string
	for _, h := range headers {
		leaks, proven := 0, 0
		var from, to int64 = math.MaxInt64, math.MinInt64
		for _, f := range forged[h] {
			if !bracketed(f) {
				continue // nothing to weigh it against
			}
			switch {
			case f.admitted:
				leaks++
				from, to = min(from, f.start), max(to, f.end)
			case f.refused:
				proven++
			}
		}
		// What the address's own budget could have given back while the
		// admitted forged probes were in flight: one, plus the limit's
		// rate over that time.
		refill := 1
		if leaks > 0 {
			refill += int(float64(to-from) * float64(e.Leff) / float64(e.W))
		}
		switch {
		case leaks > refill:
			trusted = append(trusted, fmt.Sprintf("%s (%d of %d admitted)", h, leaks, len(forged[h])))
		case proven == 0:
			unproven = append(unproven, h)
		default:
			refusedBy = append(refusedBy, fmt.Sprintf("%s (%d refused)", h, proven))
		}
	}
	switch {
	case len(trusted) > 0:
		return Fail, fmt.Sprintf("probes forging %s were admitted while the plain probes from %s sent between them were refused, more than its own budget could have given back: the target trusts forwarding headers", strings.Join(trusted, ", "), e.primary)
	case len(unproven) > 0:
		return Inconclusive, fmt.Sprintf("no probe forging %s was refused between plain ones refused or provably over the limit (%d plain probes)", strings.Join(unproven, ", "), len(plain))
	}
	return Pass, fmt.Sprintf("probes forging %s were refused like the plain probes beside them", strings.Join(refusedBy, ", "))
}
