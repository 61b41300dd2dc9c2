package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/connectbyjbrh/ratecheck/method"
)

func init() { register(method.CheckSpoof, func() checkRun { return &spoofCheck{} }) }

// spoofAlpha is the spoof check's false-alarm rate: the chance, over every
// header tried together (Holm's correction), that it fails a target that
// treats forged and plain probes alike. A release gate runs verify on every
// release and a test suite runs it dozens of times, so it is held to one
// in ten thousand surfaces: a target that leaves the limit address room
// during the span (faults that kept some of the onset from being counted,
// a refilling bucket) admits a few probes of either kind, and at 0.01 the
// few happening to be forged failed a correct target about once in a few
// hundred such runs. method.spoofPerHeader keeps the power at that rate.
const spoofAlpha = 1e-4

// spoofCheck judges verify's spoof probes: probes with a forged forwarding
// header and plain ones, sent from the limit address in one span in a
// random order (method.SpoofOrder), as a two-sample question per header:
// were the forged ones admitted more often than the plain ones?
type spoofCheck struct {
	plain  probeCount
	forged map[string]*probeCount
	order  []string // the headers, as first seen
}

// probeCount counts the answered probes of one kind: admitted (2xx) and
// refused (429).
type probeCount struct{ admitted, refused int }

func (t probeCount) n() int { return t.admitted + t.refused }

func (c *spoofCheck) judgedPrimary(s *surfaceRun, p sighting) {
	r := &p.Record
	if !(p.forged || p.stream == method.StreamSpoofControl) || method.ForgedHeader(p.stream) == "" && p.forged || !admitted(r) && !refused(r) {
		return // the limit key from another address (isolation), another route (independence)
	}
	t := &c.plain
	if p.forged {
		h := method.ForgedHeader(p.stream)
		if c.forged == nil {
			c.forged = map[string]*probeCount{}
		}
		if c.forged[h] == nil {
			c.forged[h] = &probeCount{}
			c.order = append(c.order, h)
		}
		t = c.forged[h]
	}
	if admitted(r) {
		t.admitted++
	} else {
		t.refused++
	}
}

// spoofTest is the exact one-sided test of one header: forged probes
// against the plain ones of the same span.
type spoofTest struct {
	header string
	forged probeCount
	// p is the chance of so many forged probes admitted, or more, were
	// the header ignored; best is p had every forged probe been admitted
	// (the power the run had).
	p, best float64
	failed  bool
}

// judge asks of each header whether its forged probes were admitted more
// often than the plain probes sent in the same span from the same address
// (Fisher's exact test, one-sided: the hypergeometric tail), correcting
// for the headers tried by Holm's step-down at spoofAlpha. The probes went
// out in a random order at an even pace, so a limiter that ignores the
// headers (a sliding log, a refilling bucket, replicas behind a balancer)
// admits the two kinds alike and fails the check at most at that rate. It
// judges only while the address was refused: with nothing refused, a
// forged header has nothing to win.
func (c *spoofCheck) judge(e *evidence) (string, string) {
	if len(c.order) == 0 {
		return Skip, "no probe with forged forwarding headers"
	}
	refusedN := c.plain.refused
	for _, t := range c.forged {
		refusedN += t.refused
	}
	if refusedN == 0 {
		return Inconclusive, fmt.Sprintf("none of the spoof probes from %s was refused: the address was not over its limit while they went out, so a forged header had nothing to win", e.primary)
	}
	tests := c.tests()
	k := float64(len(tests))
	var trusted, weak, alike []string
	for _, t := range tests {
		switch {
		case t.failed:
			trusted = append(trusted, fmt.Sprintf("%s (%d of %d admitted against %d of %d plain; p = %.2g)", t.header, t.forged.admitted, t.forged.n(), c.plain.admitted, c.plain.n(), t.p))
		case t.best > spoofAlpha/k:
			weak = append(weak, fmt.Sprintf("%s (%d forged, %d plain of which %d refused: p ≥ %.2g even were every forged probe admitted)", t.header, t.forged.n(), c.plain.n(), c.plain.refused, t.best))
		default:
			alike = append(alike, fmt.Sprintf("%s (%d of %d)", t.header, t.forged.admitted, t.forged.n()))
		}
	}
	test := fmt.Sprintf("exact one-sided test, Holm over %d headers, false-alarm rate %g", len(tests), spoofAlpha)
	switch {
	case len(trusted) > 0:
		return Fail, fmt.Sprintf("probes forging %s were admitted more often than the plain probes from %s sent in the same span (%s): the target trusts forwarding headers", strings.Join(trusted, ", "), e.primary, test)
	case len(weak) > 0:
		return Inconclusive, fmt.Sprintf("too few probes answered or plain ones refused to tell for %s (%s)", strings.Join(weak, ", "), test)
	}
	return Pass, fmt.Sprintf("probes forging %s were admitted no more often than the %d plain probes from %s in the same span (%d admitted; %s)", strings.Join(alike, ", "), c.plain.n(), e.primary, c.plain.admitted, test)
}

// tests runs the exact test of every header and Holm's step-down over
// them: the smallest p is held to α/k, the next to α/(k−1), and so on
// until one is not rejected.
func (c *spoofCheck) tests() []spoofTest {
	var tests []spoofTest
	for _, h := range c.order {
		f := *c.forged[h]
		N, K := f.n()+c.plain.n(), f.admitted+c.plain.admitted
		tests = append(tests, spoofTest{header: h, forged: f,
			p:    hyperUpperTail(N, K, f.n(), f.admitted),
			best: hyperUpperTail(N, f.n()+c.plain.admitted, f.n(), f.n())})
	}
	byP := make([]int, len(tests))
	for i := range byP {
		byP[i] = i
	}
	slices.SortStableFunc(byP, func(a, b int) int { return cmp.Compare(tests[a].p, tests[b].p) })
	for rank, i := range byP {
		if tests[i].p > spoofAlpha/float64(len(tests)-rank) {
			break
		}
		tests[i].failed = true
	}
	return tests
}

// hyperUpperTail returns P(X ≥ x) for X hypergeometric: the successes
// among n draws without replacement from N items of which K are
// successes. It sums the exact terms C(K,i)·C(N−K,n−i)/C(N,n), each from
// log-gamma.
func hyperUpperTail(N, K, n, x int) float64 {
	lo, hi := max(0, n-(N-K)), min(n, K)
	x = max(x, lo)
	if x > hi {
		return 0
	}
	p := 0.0
	for i := x; i <= hi; i++ {
		p += math.Exp(logChoose(K, i) + logChoose(N-K, n-i) - logChoose(N, n))
	}
	return min(p, 1)
}

// logChoose returns ln C(n, k).
func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
