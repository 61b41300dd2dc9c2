package client

import (
	"fmt"
	"sync"
	"time"
)

// Strategy is a backoff strategy.
type Strategy string

// The strategies. Full is the contract's advice and the default.
const (
	// Full waits random(0, min(cap, base·2^k)) before retry k (from 0).
	Full Strategy = "full"
	// Equal waits half of min(cap, base·2^k) plus a random half.
	Equal Strategy = "equal"
	// Decorrelated waits random(base, 3·previous wait), capped.
	Decorrelated Strategy = "decorrelated"
	// None waits exactly min(cap, base·2^k): clients in lockstep, the
	// control that must re-collide.
	None Strategy = "none"
)

// Strategies lists every strategy.
var Strategies = []Strategy{Full, Equal, Decorrelated, None}

// ParseStrategy returns the strategy named s.
func ParseStrategy(s string) (Strategy, error) {
	for _, st := range Strategies {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("strategy %q: want full, equal, decorrelated or none", s)
}

// Backoff computes retry delays. The zero value is Full with base 1s and
// cap 30s.
type Backoff struct {
	Strategy  Strategy
	Base, Cap time.Duration
}

// Defaults returns b with its zero fields set.
func (b Backoff) Defaults() Backoff {
	if b.Strategy == "" {
		b.Strategy = Full
	}
	if b.Base <= 0 {
		b.Base = time.Second
	}
	if b.Cap <= 0 {
		b.Cap = 30 * time.Second
	}
	return b
}

// Ceiling returns min(cap, base·2^k), the range of full jitter at retry k.
func (b Backoff) Ceiling(k int) time.Duration {
	b = b.Defaults()
	d := b.Base
	for i := 0; i < k && d < b.Cap; i++ {
		d *= 2
	}
	return min(d, b.Cap)
}

// Delay returns the wait before retry k (from 0), given the previous wait
// (zero before the first retry) and a uniform draw u in [0, 1).
func (b Backoff) Delay(k int, prev time.Duration, u float64) time.Duration {
	b = b.Defaults()
	c := b.Ceiling(k)
	switch b.Strategy {
	case Equal:
		return c/2 + time.Duration(u*float64(c-c/2))
	case Decorrelated:
		hi := min(b.Cap, 3*max(prev, b.Base))
		return b.Base + time.Duration(u*float64(hi-b.Base))
	case None:
		return c
	}
	return time.Duration(u * float64(c))
}

// Governor paces a whole client: after repeated 429s it widens the gap it
// keeps between attempts (doubling from Min up to Max), and each success
// halves the gap again (to nothing below Min). Its zero value is a governor
// with Min 1s and Max 30s that has not slowed down. It is safe for
// concurrent use: the clients of one program share one.
type Governor struct {
	Min, Max time.Duration

	mu   sync.Mutex
	gap  time.Duration
	next time.Time
}

// Reserve books the next attempt at or after now and returns how long to
// wait for it.
func (g *Governor) Reserve(now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.next.Before(now) {
		g.next = now
	}
	wait := g.next.Sub(now)
	g.next = g.next.Add(g.gap)
	return wait
}

// SlowDown doubles the gap (from Min, up to Max) and pushes the next
// attempt back by it.
func (g *Governor) SlowDown(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	lo, hi := g.Min, g.Max
	if lo <= 0 {
		lo = time.Second
	}
	if hi <= 0 {
		hi = 30 * time.Second
	}
	g.gap = min(hi, max(lo, 2*g.gap))
	if at := now.Add(g.gap); at.After(g.next) {
		g.next = at
	}
}

// Recover halves the gap after a success.
func (g *Governor) Recover() {
	g.mu.Lock()
	defer g.mu.Unlock()
	lo := g.Min
	if lo <= 0 {
		lo = time.Second
	}
	if g.gap /= 2; g.gap < lo {
		g.gap = 0
	}
}

// Gap returns the current gap between attempts.
func (g *Governor) Gap() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gap
}
