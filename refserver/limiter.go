package refserver

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// LimiterMode names a limiting algorithm of the reference target. Only
// [Rolling] is the documented one; every other mode is deliberately wrong so
// that the verifier can be shown to fail.
type LimiterMode string

// The limiter modes of the reference target.
const (
	// Rolling is the documented limiter: at most L requests in any rolling
	// window of length W, refused requests counted.
	Rolling LimiterMode = "rolling"
	// FixedWindow counts admitted requests in windows aligned to multiples
	// of W since the server started.
	FixedWindow LimiterMode = "fixed-window"
	// TokenBucket holds L tokens and refills L tokens per W; refused
	// requests cost nothing.
	TokenBucket LimiterMode = "token-bucket"
	// AdmittedOnly is a rolling window that forgets refused requests.
	AdmittedOnly LimiterMode = "admitted-only"
	// OffByOne is a rolling window that admits L+1 requests.
	OffByOne LimiterMode = "off-by-one"
	// SlidingWindowCounter estimates the rolling window from two fixed
	// windows aligned to multiples of W since the server started: the
	// previous window's admissions weighted by the share of it still
	// inside the rolling window, plus the current window's; refused
	// requests are not counted.
	SlidingWindowCounter LimiterMode = "sliding-window-counter"
	// SharedBudget is the documented rolling window, but with one budget
	// for every client address: isolation is broken.
	SharedBudget LimiterMode = "shared-budget"
	// FixedWindowPerAddress counts admitted requests in windows of W, each
	// opened by the address's first request after its last window ended,
	// as a counter that expires W after its first increment does (Redis
	// INCR and EXPIRE, as many gateways count).
	FixedWindowPerAddress LimiterMode = "fixed-window-per-address"
	// LeakyBucket is nginx's limit_req (ngx_http_limit_req_module) at a
	// rate of L per W with burst L−1 and delay L/2: the first request and
	// L−1 more at once, then one per W/L as the bucket drains; a request
	// admitted with an excess past L/2 is held until the bucket has
	// drained to L/2 (Config.Sleep), and a refused request costs nothing.
	LeakyBucket LimiterMode = "leaky-bucket"
	// CounterWithRefusals is HAProxy's stick-table http_req_rate over W
	// (its freq_ctr): the current period's requests plus the previous
	// period's weighted by the share of the current one still to run,
	// every request counted, refused or not, periods starting at each
	// address's first request (and again there after two idle periods);
	// a request is refused when that reading, itself included, passes L.
	CounterWithRefusals LimiterMode = "counter-with-refusals"
)

// LimiterModes lists every mode, the documented one first.
var LimiterModes = []LimiterMode{Rolling, FixedWindow, TokenBucket, AdmittedOnly, OffByOne, SlidingWindowCounter, SharedBudget,
	FixedWindowPerAddress, LeakyBucket, CounterWithRefusals}

// ParseLimiterMode returns the mode named s, or an error listing the valid names.
func ParseLimiterMode(s string) (LimiterMode, error) {
	for _, m := range LimiterModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown limiter %q (want one of %v)", s, LimiterModes)
}

// Limiter decides, per client key, whether a request arriving at now is
// admitted. now is monotonic time elapsed since an arbitrary origin (the
// server's start); it must not decrease between calls.
//
// The zero value is not usable; make one with [NewLimiter]. A Limiter is
// safe for concurrent use.
type Limiter struct {
	mode   LimiterMode
	limit  int
	window time.Duration

	mu        sync.Mutex
	clients   map[string]*bucket
	lastSweep time.Duration
}

// bucket is the state of one client. For the rolling modes ring holds the
// arrival times of the newest requests that count (at most L, or L+1 for
// off-by-one), oldest at head once full. For fixed-window, n counts the
// admitted requests of window index idx, and for the sliding-window
// counter prev those of the window before it; the modes whose windows
// start at the address's first request count them from origin. For the
// token bucket, tokens were last refilled at last; for the leaky bucket,
// tokens is nginx's excess, last drained at last.
type bucket struct {
	ring   []time.Duration
	head   int
	n      int
	prev   int
	idx    int64
	origin time.Duration
	tokens float64
	last   time.Duration
}

// NewLimiter returns a limiter of the given mode admitting limit requests per
// window for each key.
func NewLimiter(mode LimiterMode, limit int, window time.Duration) (*Limiter, error) {
	if limit < 1 {
		return nil, fmt.Errorf("limit must be at least 1, got %d", limit)
	}
	if window <= 0 {
		return nil, fmt.Errorf("window must be positive, got %v", window)
	}
	if _, err := ParseLimiterMode(string(mode)); err != nil {
		return nil, err
	}
	return &Limiter{mode: mode, limit: limit, window: window, clients: make(map[string]*bucket)}, nil
}

// Limit returns the number of requests per window that the documented
// contract allows (the configured limit, whatever the mode).
func (l *Limiter) Limit() int { return l.limit }

// Window returns the window length.
func (l *Limiter) Window() time.Duration { return l.window }

// Allow reports whether a request from key arriving at now is admitted, and
// records it as the mode requires.
//
// The rolling modes keep only the newest L (or L+1) arrival times per key:
// a request is refused exactly when L others arrived in (now−W, now), which
// the L-th newest arrival alone decides. Memory per key is therefore bounded
// by L timestamps however hard the key floods.
func (l *Limiter) Allow(key string, now time.Duration) bool {
	ok, _, _ := l.decide(key, now, false)
	return ok
}

// Decide is Allow, and how long an admitted request is held before it is
// served (only the leaky bucket holds any).
func (l *Limiter) Decide(key string, now time.Duration) (ok bool, hold time.Duration) {
	ok, hold, _ = l.decide(key, now, false)
	return ok, hold
}

// A limitState is what a key's limiter holds after a decision: the
// requests it counts in the window, the requests left, and the time until
// one more is admitted (0: now).
type limitState struct {
	count, remaining int
	reset            time.Duration
}

// decide is Decide, and the key's state after it when state is set.
func (l *Limiter) decide(key string, now time.Duration, state bool) (bool, time.Duration, limitState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok, hold, b := l.allow(key, now)
	if !state {
		return ok, hold, limitState{}
	}
	return ok, hold, b.state(l, b.last)
}

// allow decides under the lock, and returns the bucket that decided, at
// its last time.
//
// Callers read the clock before they take the lock, so a request that
// waited for it carries an older time than one decided before it: it is
// decided at the key's last time instead, so a key's time never runs
// backwards. Otherwise a log's arrivals fall out of order (its oldest is
// no longer at the head, and it refuses with part of its window already
// aged out) and a stale time resets a fixed window's count to the window
// before.
func (l *Limiter) allow(key string, now time.Duration) (bool, time.Duration, *bucket) {
	if now-l.lastSweep >= l.window {
		l.sweep(now)
	}
	if l.mode == SharedBudget {
		key = "" // every address alike
	}
	b := l.clients[key]
	if b == nil {
		b = l.newBucket(now)
		l.clients[key] = b
	}
	now = max(now, b.last)
	switch l.mode {
	case FixedWindow:
		idx := int64(now / l.window)
		if idx != b.idx {
			b.idx, b.n = idx, 0
		}
		b.last = now
		if b.n >= l.limit {
			return false, 0, b
		}
		b.n++
		return true, 0, b
	case FixedWindowPerAddress:
		if now-b.origin >= l.window {
			b.origin, b.n = now, 0 // the counter expired: a new window
		}
		b.last = now
		if b.n >= l.limit {
			return false, 0, b
		}
		b.n++
		return true, 0, b
	case SlidingWindowCounter:
		b.roll(int64(now / l.window))
		b.last = now
		if b.estimate(l, now)+1 > float64(l.limit) {
			return false, 0, b
		}
		b.n++
		return true, 0, b
	case CounterWithRefusals:
		b.rotate(l, now)
		b.last = now
		b.n++ // counted before the limit is read, refused or not
		return b.estimate(l, now) <= float64(l.limit), 0, b
	case TokenBucket:
		b.tokens += float64(now-b.last) * float64(l.limit) / float64(l.window)
		if b.tokens > float64(l.limit) {
			b.tokens = float64(l.limit)
		}
		b.last = now
		if b.tokens < 1 {
			return false, 0, b
		}
		b.tokens--
		return true, 0, b
	case LeakyBucket:
		return l.leak(b, now)
	default: // the rolling family
		b.last = now
		n := l.capacity()
		ok := len(b.ring) < n || b.ring[b.head] <= now-l.window
		if ok || l.mode != AdmittedOnly {
			b.push(now, n)
		}
		return ok, 0, b
	}
}

// leak decides a request at now in nginx's limit_req
// (ngx_http_limit_req_lookup): a key's first request is admitted with an
// excess of 0; each later one drains the excess by the rate since the
// last admission and adds itself, and is refused, changing nothing, when
// that passes the burst (L−1); an admitted request past the delay (L/2)
// is held until the excess it left has drained to the delay.
func (l *Limiter) leak(b *bucket, now time.Duration) (bool, time.Duration, *bucket) {
	rate := float64(l.limit) / float64(l.window) // per nanosecond
	burst, delay := float64(l.limit-1), float64(l.limit/2)
	excess := 0.0
	if b.last >= 0 {
		excess = max(0, b.tokens-rate*float64(now-b.last)) + 1
	}
	if excess > burst {
		return false, 0, b
	}
	b.tokens, b.last = excess, now
	if excess <= delay {
		return true, 0, b
	}
	return true, time.Duration((excess - delay) / rate), b
}

// state returns what b holds at now: for the rolling modes the arrivals
// in the window (the oldest of them ages out first), for the fixed window
// the window's admissions (more at its end), for the bucket its tokens.
func (b *bucket) state(l *Limiter, now time.Duration) limitState {
	var st limitState
	switch l.mode {
	case FixedWindow:
		st.count = b.n
		if b.n >= l.limit {
			st.reset = time.Duration(b.idx+1)*l.window - now
		}
	case FixedWindowPerAddress:
		st.count = b.n
		if b.n >= l.limit {
			st.reset = b.origin + l.window - now
		}
	case CounterWithRefusals:
		est := b.estimate(l, now)
		st.count = int(math.Ceil(est))
		if est+1 > float64(l.limit) {
			st.reset = b.origin + l.window - now // the current period's end, at the least
		}
	case SlidingWindowCounter:
		b.roll(int64(now / l.window))
		est := b.estimate(l, now)
		st.count = int(math.Ceil(est))
		if est+1 > float64(l.limit) {
			// the previous window's weight falls until one more fits
			start := time.Duration(b.idx) * l.window
			if b.n+1 > l.limit || b.prev == 0 {
				st.reset = start + l.window - now
			} else {
				f := 1 - float64(l.limit-1-b.n)/float64(b.prev)
				st.reset = max(0, start+time.Duration(f*float64(l.window))-now)
			}
		}
	case LeakyBucket:
		st.count = int(math.Ceil(b.tokens)) + 1
		if st.count >= l.limit {
			st.reset = time.Duration((b.tokens - float64(l.limit-2)) * float64(l.window) / float64(l.limit))
		}
	case TokenBucket:
		st.count = l.limit - int(b.tokens)
		if b.tokens < float64(l.limit) {
			st.reset = time.Duration((1 - (b.tokens - float64(int(b.tokens)))) * float64(l.window) / float64(l.limit))
		}
	default:
		oldest := now
		for _, t := range b.ring {
			if t > now-l.window {
				st.count++
				oldest = min(oldest, t)
			}
		}
		if st.count > 0 {
			st.reset = oldest + l.window - now
		}
	}
	st.remaining = max(0, l.limit-st.count)
	return st
}

func (l *Limiter) newBucket(now time.Duration) *bucket {
	switch l.mode {
	case FixedWindow, SlidingWindowCounter:
		return &bucket{idx: int64(now / l.window)}
	case FixedWindowPerAddress, CounterWithRefusals:
		return &bucket{origin: now}
	case TokenBucket:
		return &bucket{tokens: float64(l.limit), last: now}
	case LeakyBucket:
		return &bucket{last: -1} // no admission yet
	default:
		return &bucket{} // the ring grows as requests come, up to capacity()
	}
}

// capacity is how many arrivals the rolling modes keep per key.
func (l *Limiter) capacity() int {
	if l.mode == OffByOne {
		return l.limit + 1
	}
	return l.limit
}

// roll moves a sliding-window counter's bucket to window idx: the current
// window becomes the previous one when idx is the next, and both empty when
// a whole window passed without a request.
func (b *bucket) roll(idx int64) {
	switch {
	case idx == b.idx:
	case idx == b.idx+1:
		b.prev, b.n, b.idx = b.n, 0, idx
	default:
		b.prev, b.n, b.idx = 0, 0, idx
	}
}

// rotate moves a counter whose periods start at the address's first
// request (origin) to the period holding now, as HAProxy's
// update_freq_ctr_period does: the next period's start is a period after
// the current one's, and after two idle periods the count starts again
// at now.
func (b *bucket) rotate(l *Limiter, now time.Duration) {
	if now-b.origin < l.window {
		return
	}
	b.prev, b.n, b.origin = b.n, 0, b.origin+l.window
	if now-b.origin >= l.window {
		b.prev, b.origin = 0, now
	}
}

// estimate is a sliding-window counter's count of the rolling window at
// now: the previous window's admissions by the share of it the rolling
// window still covers, plus the current window's (windows from the
// origin for a counter whose periods start at the address's first
// request).
func (b *bucket) estimate(l *Limiter, now time.Duration) float64 {
	start := time.Duration(b.idx) * l.window
	if l.mode == CounterWithRefusals {
		start = b.origin
	}
	f := float64(now-start) / float64(l.window)
	return float64(b.prev)*(1-f) + float64(b.n)
}

// push records an arrival in a ring of at most n, dropping the oldest once
// it is full. The ring grows by appending, so a huge limit costs memory
// only for the requests actually seen.
func (b *bucket) push(t time.Duration, n int) {
	if len(b.ring) < n {
		b.ring = append(b.ring, t)
		return
	}
	b.ring[b.head] = t
	b.head = (b.head + 1) % len(b.ring)
}

// sweep evicts keys whose state is indistinguishable from a fresh key's:
// nothing they sent is still inside the window (or the bucket is full again).
func (l *Limiter) sweep(now time.Duration) {
	for k, b := range l.clients {
		idle := now-b.last >= l.window
		switch l.mode {
		case FixedWindow:
			idle = idle && int64(now/l.window) != b.idx
		case SlidingWindowCounter:
			idle = int64(now/l.window) > b.idx+1 // its window and the next have passed
		case FixedWindowPerAddress:
			idle = now-b.origin >= l.window // its window ended: the next request opens a new one
		case CounterWithRefusals:
			idle = now-b.origin >= 2*l.window // its period and the next have passed
		}
		if idle {
			delete(l.clients, k)
		}
	}
	l.lastSweep = now
}

// Clients returns the number of keys currently held in memory.
func (l *Limiter) Clients() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}
