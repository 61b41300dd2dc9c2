package analyze

import (
	"math"
)

// This file holds the families the replay runs: a sliding log, replicas
// behind a balancer, a token bucket, a fixed window and a sliding-window
// counter, each told one request at a time whether it would admit it.

// slidingLog admits a request when fewer than L counted requests arrived in
// (t − W, t): the L-th newest counted arrival decides. This one counts
// only the requests it admits (a log forgetting refusals); the logs that
// count every request are countingLogs.
type slidingLog struct {
	score
	W    int64
	ring logRing
}

func newSlidingLog(limit int, W int64) slidingLog {
	return slidingLog{W: W, ring: newLogRing(limit)}
}

func (l *slidingLog) add(t int64) {
	ok := l.W <= l.ring.age(t)
	if ok {
		l.ring.push(t)
	}
	l.admit(ok)
}

// countingLogs are sliding logs of one limit that count every request,
// refused or not, at several window lengths. Each keeps every request, so
// all hold the same L newest arrivals: one ring serves them all, and the
// log of window W admits when the oldest of them is at least W old. (One
// ring a log cost the replay of a flood a fifth of its time.)
type countingLogs struct {
	ring logRing
	logs []windowScore
}

// windowScore is a window length and the score of a log of it.
type windowScore struct {
	score
	W int64
}

func (c *countingLogs) add(t int64) {
	age := c.ring.age(t)
	for i := range c.logs {
		c.logs[i].admit(c.logs[i].W <= age)
	}
	c.ring.push(t)
}

// logRing holds the newest arrivals of a log, up to its limit.
type logRing struct {
	at   []int64 // grows up to limit
	head int     // the oldest, once full
}

func newLogRing(limit int) logRing { return logRing{at: make([]int64, 0, limit)} }

// age is how long before t the oldest arrival held came, once the ring
// holds its limit; before, no window is too short to admit (MaxInt64).
func (r *logRing) age(t int64) int64 {
	if len(r.at) < cap(r.at) {
		return math.MaxInt64
	}
	return t - r.at[r.head]
}

// push adds the arrival at t, in place of the oldest once full.
func (r *logRing) push(t int64) {
	if len(r.at) < cap(r.at) {
		r.at = append(r.at, t)
		return
	}
	r.at[r.head] = t
	if r.head++; r.head == len(r.at) { // (head+1) % limit, without a division
		r.head = 0
	}
}

// maxReplicas is the most replicas behind a balancer the fit considers.
const maxReplicas = 4

// replicas is k limiters of L, each a sliding log counting refusals,
// behind an assignment the client cannot predict: each request goes to
// one of them at random, alike and independently (a balancer
// interleaving every client's requests looks so to one client). Its
// score is exact and needs no seed: a replica counts every request
// assigned to it, admitted or not, so the count a request meets is
// Binomial(n, 1/k) over the n others of the last window whatever was
// decided before, and the request is admitted with probability
// P(Binomial(n, 1/k) ≤ L − 1). Its admissions per bin are the expected
// ones (a sum of those probabilities), with their variance (the sum of
// p(1 − p)), and a bin costs what the observed admissions lie beyond one
// standard deviation of the expected: what the assignment's chance alone
// produces costs nothing, as what the timing allows costs a candidate
// nothing. This is what the candidate predicts, not the luckiest of
// some seeded assignments, which would fit noise and favour replicas
// over one limiter. (Replicas forgetting refusals have no such closed
// form, and are not replayed.)
type replicas struct {
	k, limit       int
	cdf            []float64 // P(Binomial(n, 1/k) ≤ L − 1) for n = L, L+1, …
	tail           bool      // cdf reached 0: every n past it is 0 too
	adm, vari, mis float64
	// chanceMean and chanceVar are the mean and variance of mis were the
	// run drawn from these replicas (see close).
	chanceMean, chanceVar float64
	last                  float64 // the probability the last request was admitted
}

func newReplicas(k, limit int) replicas { return replicas{k: k, limit: limit} }

// admitP is P(Binomial(n, 1/k) ≤ L − 1), the table grown as needed:
// F(n+1) = F(n) − p·P(Binomial(n, p) = L − 1).
func (r *replicas) admitP(n int) float64 {
	m := r.limit - 1
	if n <= m {
		return 1
	}
	p := 1 / float64(r.k)
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	for len(r.cdf) < n-m && !r.tail {
		j := m + len(r.cdf) // F(j) known: 1 for j = m, else the last in cdf
		f := 1.0
		if len(r.cdf) > 0 {
			f = r.cdf[len(r.cdf)-1]
		}
		pmf := math.Exp(lg(j) - lg(m) - lg(j-m) + float64(m)*math.Log(p) + float64(j-m)*math.Log1p(-p))
		step := p * pmf
		f = max(f-step, 0)
		r.cdf = append(r.cdf, f)
		// Past the mode of P(Binomial(j, p) = L − 1), at j = (L − 1)/p,
		// the steps only shrink: once one is below what f can resolve,
		// what is left of f is the rounding of the steps before (it
		// would never reach 1e-12, and the table would grow without end).
		r.tail = f < 1e-12 || float64(j) > float64(m)/p && step < f*1e-15
	}
	if i := n - m - 1; i < len(r.cdf) {
		return r.cdf[i]
	}
	return 0
}

// certain is the fewest others in a window for which a request is
// refused for sure (P(Binomial(n, 1/k) ≤ L − 1) below 1e-12): past it, how
// many more does not matter, so the fit keeps no more of a window.
func (r *replicas) certain() int {
	n := r.limit
	for r.admitP(n) > 0 {
		n++
	}
	return n
}

// add replays a request that met n others in the last window.
func (r *replicas) add(n int) {
	r.last = r.admitP(n)
	r.adm += r.last
	r.vari += r.last * (1 - r.last)
}

// close ends a bin of obs observed admissions. What it costs, the
// observed admissions beyond one standard deviation σ of the expected,
// is itself a chance quantity were the run drawn from these replicas:
// taking the bin's admissions as normal, its mean is σ·E[(|Z| − 1)⁺] =
// 0.1666 σ and its variance σ²·(E[((|Z| − 1)⁺)²] − 0.1666²) = 0.1229 σ².
func (r *replicas) close(obs int) {
	sd := math.Sqrt(r.vari)
	r.mis += max(math.Abs(r.adm-float64(obs))-sd, 0)
	r.chanceMean += 0.1666 * sd
	r.chanceVar += 0.1229 * r.vari
	r.adm, r.vari = 0, 0
}

// chance is the score these replicas reach by chance alone in all but
// one run in forty: the mean of mis and two standard deviations.
func (r *replicas) chance() int {
	return int(math.Ceil(r.chanceMean + 2*math.Sqrt(r.chanceVar)))
}

// window counts the requests of the last w before each, in time order.
type window struct {
	ts   []int64
	head int
}

// add takes a request at t and returns how many others came in (t − w, t],
// or most when more did (0: no bound): a window of a flood holds at most
// most of its requests.
func (q *window) add(t, w int64, most int) int {
	for q.head < len(q.ts) && q.ts[q.head] <= t-w {
		q.head++
	}
	if most > 0 && len(q.ts)-q.head > most {
		q.head = len(q.ts) - most
	}
	if q.head > 1024 && 2*q.head > len(q.ts) { // move what is held to the front
		q.ts = q.ts[:copy(q.ts, q.ts[q.head:])]
		q.head = 0
	}
	n := len(q.ts) - q.head
	q.ts = append(q.ts, t)
	return n
}

// refillScan lists how many windows the token buckets take to refill
// their L tokens: the documented one (1), then 2, 4, 8, … below L, and L
// (one token per window).
func refillScan(limit int) []int64 {
	ks := []int64{1}
	for k := int64(2); k < int64(limit); k *= 2 {
		ks = append(ks, k)
	}
	if limit > 1 {
		ks = append(ks, int64(limit))
	}
	return ks
}

// tokenBucket holds L tokens refilled at L per W; refusals cost nothing.
type tokenBucket struct {
	score
	limit  int
	W      int64
	tokens float64
	at     int64 // the last request's time
}

func (b *tokenBucket) add(t int64) {
	b.tokens = math.Min(float64(b.limit), b.tokens+float64(t-b.at)*float64(b.limit)/float64(b.W))
	b.at = t
	ok := b.tokens >= 1
	if ok {
		b.tokens--
	}
	b.admit(ok)
}

// windowSpan is the span of t − origin the current window idx covers,
// [lo, hi), so that a request in it needs no division to find its window:
// a replay runs hundreds of fixed and sliding windows on every request.
type windowSpan struct{ lo, hi int64 }

// in reports whether d, a time less origin, is in the span.
func (s *windowSpan) in(d int64) bool { return d >= s.lo && d < s.hi }

// set makes the span window idx's, of length W: empty where idx·W
// overflows, so that every request there finds its window by division.
func (s *windowSpan) set(idx, W int64) {
	s.lo = idx * W
	s.hi = s.lo + W
	if s.lo/W != idx || s.hi <= s.lo {
		s.lo, s.hi = 0, 0
	}
}

// windowAt follows which window of a length W, aligned at origin, each
// request falls in.
type windowAt struct {
	origin, idx int64
	span        windowSpan
}

func newWindowAt(origin int64) windowAt { return windowAt{origin: origin, idx: math.MinInt64} }

// How a request's window follows the one before, as windowAt.cross says.
const (
	sameWindow  = iota
	nextWindow  // the window right after it
	laterWindow // a later one (or the first request)
)

// cross places a request at t, outside the current window's span, among
// windows of W, and returns how far into its window it came and how that
// window follows the one before (a request inside the span is sameWindow,
// t − origin − span.lo into it).
func (w *windowAt) cross(t, W int64) (off int64, moved int) {
	d := t - w.origin
	k := floorDiv(d, W)
	switch {
	case k == w.idx:
		moved = sameWindow
	case k == w.idx+1:
		moved = nextWindow
	default:
		moved = laterWindow
	}
	w.idx = k
	w.span.set(k, W)
	return d - k*W, moved
}

// fixedCount is a fixed window's count: it admits limit per window.
type fixedCount struct {
	score
	n int32
}

func (f *fixedCount) add(moved, limit int) {
	if moved != sameWindow {
		f.n = 0
	}
	ok := int(f.n) < limit
	if ok {
		f.n++
	}
	f.admit(ok)
}

// counterCount is a sliding-window counter's count: it estimates the
// rolling count as the previous window's count weighted by its overlap
// plus the current window's, and counts what it admits (one counting
// refusals counts every request).
type counterCount struct {
	score
	cur, prev int32
}

// shift starts the window a request fell in, moved as windowAt.cross says.
func (c *counterCount) shift(moved int) {
	switch moved {
	case nextWindow:
		c.prev, c.cur = c.cur, 0
	case laterWindow:
		c.prev, c.cur = 0, 0
	}
}

// phaseWindows are the limiters of windows at one phase: a fixed window
// and sliding-window counters counting refusals and not, of W aligned at
// one origin. The window a request falls in is found once for all three,
// and the replay's hundreds of them take a third of the memory they took
// each on its own. (Most of the time this saved came from writing the
// counters' common case out in add, not from the memory.)
type phaseWindows struct {
	at                   windowAt
	fixed                fixedCount
	counting, forgetting counterCount
}

func (p *phaseWindows) add(t, W int64, limit int) {
	off, moved := t-p.at.origin-p.at.span.lo, sameWindow
	if !p.at.span.in(t - p.at.origin) {
		off, moved = p.at.cross(t, W)
		p.counting.shift(moved)
		p.forgetting.shift(moved)
	}
	p.fixed.add(moved, limit)
	// Each counter's estimate lies between cur and prev+cur, in floating
	// point too (rounding is monotonic, and the counts are exact): where
	// both bounds decide alike, nothing else is needed. (Written out for
	// both: the compiler inlines no function that holds it, and the calls
	// took a fifth of the replay.)
	c := &p.counting
	ok := int(c.cur) < limit && (int(c.prev+c.cur) < limit || counterRoom(int(c.prev), int(c.cur), limit, off, W))
	c.cur++ // it counts refusals
	c.admit(ok)
	c = &p.forgetting
	ok = int(c.cur) < limit && (int(c.prev+c.cur) < limit || counterRoom(int(c.prev), int(c.cur), limit, off, W))
	if ok {
		c.cur++
	}
	c.admit(ok)
}

// close closes a bin in which obs were admitted, for the three.
func (p *phaseWindows) close(obs int) {
	p.fixed.close(obs)
	p.counting.close(obs)
	p.forgetting.close(obs)
}

// kind is the score of the fixed window (0), the counter counting
// refusals (1) or the one not counting them (2).
func (p *phaseWindows) kind(k int) *score {
	switch k {
	case 0:
		return &p.fixed.score
	case 1:
		return &p.counting.score
	}
	return &p.forgetting.score
}

// counterRoom reports whether a sliding-window counter of limit admits a
// request off into its window of W, with cur counted in it and prev in the
// one before: whether its estimate prev·(1 − off/W) + cur, in floating
// point as counters compute it, leaves room for one more.
func counterRoom(prev, cur, limit int, off, W int64) bool {
	// The same comparison in integers, prev·(W − off) against
	// (limit − cur − 1)·W, decides alike wherever the two sides are
	// further apart than floating point's rounding could move them (a
	// millionth of W, where that rounding is a few 10⁻¹⁶ of it), and costs
	// no division; nearer, and where the products could overflow, the
	// floating point decides.
	if room := int64(limit - cur - 1); W < 1<<40 && int64(prev) < 1<<22 && room < 1<<22 {
		a, b, margin := int64(prev)*(W-off), room*W, W>>20+1
		switch {
		case a < b-margin:
			return true
		case a > b+margin:
			return false
		}
	}
	frac := float64(off) / float64(W)
	est := float64(prev)*(1-frac) + float64(cur)
	return est+1 <= float64(limit)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
