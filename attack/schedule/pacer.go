package schedule

import (
	"math"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Schedule gives the planned send time of every hit of a stream: At(n)
// returns when hit n (from 0) is due, relative to the stream's start, and
// false when there is no hit n. Planned times never decrease with n.
type Schedule interface {
	At(n uint64) (time.Duration, bool)
}

// Pacer is a [vegeta.Pacer] driven by a [Schedule], delayed by an offset and
// thinned to every k-th hit (from the j-th) so that k sources split one
// schedule exactly. Its zero value is not usable. It is safe for concurrent
// use (it has no mutable state).
type Pacer struct {
	Sched  Schedule
	Offset time.Duration
	K, J   uint64
}

// Pace implements vegeta.Pacer: time is an argument, so pacers are tested
// without sleeping.
func (p Pacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	t, ok := p.Sched.At(hits*max(p.K, 1) + p.J)
	if !ok {
		return 0, true
	}
	if wait := p.Offset + t - elapsed; wait > 0 {
		return wait, false
	}
	return 0, false
}

// Due returns when hit n of this pacer is planned, from the attack's
// start, and false when there is no hit n.
func (p Pacer) Due(n uint64) (time.Duration, bool) {
	t, ok := p.Sched.At(n*max(p.K, 1) + p.J)
	return p.Offset + t, ok
}

// takes reports whether hit g of the schedule is one of this pacer's.
func (p Pacer) takes(g uint64) bool {
	k := max(p.K, 1)
	return g >= p.J && (g-p.J)%k == 0
}

// Count returns how many hits this pacer sends.
func (p Pacer) Count() uint64 {
	n, k := Count(p.Sched), max(p.K, 1)
	if n <= p.J {
		return 0
	}
	return (n - p.J + k - 1) / k
}

// Rate implements vegeta.Pacer: the planned instantaneous rate (hits per
// second) of this pacer's share around elapsed.
func (p Pacer) Rate(elapsed time.Duration) float64 {
	e := elapsed - p.Offset
	// Find the first hit at or after e by doubling then bisection.
	lo, hi := uint64(0), uint64(1)
	for {
		t, ok := p.Sched.At(hi)
		if !ok || hi >= 1<<62 {
			return 0
		}
		if t >= e {
			break
		}
		lo, hi = hi, hi*2
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if t, _ := p.Sched.At(mid); t >= e {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	t0, ok0 := p.Sched.At(lo)
	t1, ok1 := p.Sched.At(lo + 1)
	if !ok0 || !ok1 || t1 <= t0 {
		return 0
	}
	return float64(time.Second) / float64(t1-t0) / float64(max(p.K, 1))
}

var _ vegeta.Pacer = Pacer{}

// Planned returns the planned time of the last hit of s (zero if none).
func Planned(s Schedule) time.Duration {
	_, t := last(s)
	return t
}

// Count returns how many hits s plans.
func Count(s Schedule) uint64 {
	n, _ := last(s)
	return n
}

// last finds, by doubling then bisection, how many hits s plans and when
// the last is due. A schedule of more than 2^63 hits (only an absurd one:
// profiles are bounded far below) counts as 2^63, the last due when the
// schedule ends.
func last(s Schedule) (uint64, time.Duration) {
	if _, ok := s.At(0); !ok {
		return 0, 0
	}
	lo, hi := uint64(0), uint64(1)
	for {
		if _, ok := s.At(hi); !ok {
			break
		}
		if hi >= 1<<63-1 {
			t, _ := s.At(hi)
			if e, ok := s.(interface{ end() time.Duration }); ok {
				t = max(t, e.end())
			}
			return 1 << 63, t
		}
		lo, hi = hi, min(hi*2, 1<<63-1)
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, ok := s.At(mid); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	t, _ := s.At(lo)
	return lo + 1, t
}

// limit ends a schedule after count hits or at duration (zero: no limit).
// span(d) is the most hits its rate, integrated over any d seconds, makes;
// slow says s takes a microsecond or more (a bisection).
type limit struct {
	s        func(n uint64) time.Duration
	count    uint64
	duration time.Duration
	span     func(d float64) float64
	slow     bool
}

func (l limit) At(n uint64) (time.Duration, bool) {
	if l.count > 0 && n >= l.count {
		return 0, false
	}
	t := l.s(n)
	if l.duration > 0 && t >= l.duration {
		return 0, false
	}
	if l.count == 0 && l.duration == 0 {
		return 0, false
	}
	return t, true
}

// Constant sends rate hits per second.
func Constant(rate float64, duration time.Duration, count uint64) Schedule {
	return limit{s: func(n uint64) time.Duration { return seconds(float64(n) / rate) }, count: count, duration: duration,
		span: func(d float64) float64 { return rate * d }}
}

// Linear ramps from one rate to another over duration: the cumulative hits
// by t are from·t + (to−from)·t²/(2·duration), inverted in closed form.
func Linear(from, to float64, duration time.Duration, count uint64) Schedule {
	slope := (to - from) / duration.Seconds()
	return limit{s: func(n uint64) time.Duration {
		if math.Abs(slope) < 1e-12 {
			return seconds(float64(n) / from)
		}
		disc := from*from + 2*slope*float64(n)
		if disc < 0 {
			return time.Duration(math.MaxInt64)
		}
		return seconds((-from + math.Sqrt(disc)) / slope)
	}, count: count, duration: duration, span: func(d float64) float64 {
		// The busiest d seconds are the last (a rising ramp) or the first.
		if T := duration.Seconds(); d < T {
			return d*max(from, to) - math.Abs(to-from)*d*d/(2*T)
		}
		return (from + to) / 2 * d
	}}
}

// Sine oscillates around mean with the given amplitude and period, starting
// at the mean and rising: the cumulative hits by t are
// mean·t + amp·period/(2π)·(1 − cos(2πt/period)), inverted by bisection.
func Sine(mean, amp float64, period, duration time.Duration, count uint64) Schedule {
	p := period.Seconds()
	hits := func(t float64) float64 { return mean*t + amp*p/(2*math.Pi)*(1-math.Cos(2*math.Pi*t/p)) }
	return limit{s: func(n uint64) time.Duration {
		target := float64(n)
		lo, hi := 0.0, 1.0
		for hits(hi) < target {
			hi *= 2
		}
		for range 60 {
			mid := (lo + hi) / 2
			if hits(mid) < target {
				lo = mid
			} else {
				hi = mid
			}
		}
		return seconds(hi)
	}, count: count, duration: duration, slow: true, span: func(d float64) float64 {
		// hits(t+d) − hits(t) is at most mean·d + amp·p/π·|sin(πd/p)|.
		return mean*d + amp*p/math.Pi*math.Abs(math.Sin(math.Pi*d/p))
	}}
}

// StepSpec is one constant-rate step of [Steps].
type StepSpec struct {
	Rate     float64 // hits per second
	Duration time.Duration
}

// stepSched runs constant-rate steps one after another.
type stepSched struct {
	steps []StepSpec
	count uint64
}

// Steps runs each step's constant rate for its duration, in order.
func Steps(steps []StepSpec, count uint64) Schedule { return stepSched{steps, count} }

func (s stepSched) At(n uint64) (time.Duration, bool) {
	if s.count > 0 && n >= s.count {
		return 0, false
	}
	var start time.Duration
	for _, st := range s.steps {
		k := uint64(math.Ceil(st.Rate * st.Duration.Seconds()))
		if t := seconds(float64(n) / st.Rate); st.Rate > 0 && n < k && t < st.Duration {
			return start + t, true
		}
		if st.Rate > 0 {
			n -= min(n, k)
		}
		start += st.Duration
	}
	return 0, false
}

// burstProbe sends burst hits evenly over [0, over], then one probe every
// probeEvery from probeFrom until until (inclusive).
type burstProbe struct {
	burst                    uint64
	over, from, every, until time.Duration
}

// BurstThenProbe sends burst hits spread evenly over [0, over] (all at once
// when over is zero), then one probe every probeEvery from probeFrom up to
// and including until. With probeEvery zero there are no probes.
func BurstThenProbe(burst int, over, probeFrom, probeEvery, until time.Duration) Schedule {
	return burstProbe{uint64(burst), over, probeFrom, probeEvery, until}
}

func (b burstProbe) At(n uint64) (time.Duration, bool) {
	if n < b.burst {
		if b.burst == 1 {
			return 0, true
		}
		return time.Duration(float64(b.over) * float64(n) / float64(b.burst-1)), true
	}
	if b.every <= 0 {
		return 0, false
	}
	from := b.from
	if from < b.over {
		from = b.over + b.every
	}
	t := from + time.Duration(n-b.burst)*b.every
	if t > b.until {
		return 0, false
	}
	return t, true
}

func seconds(s float64) time.Duration {
	if s > float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

// mostIn is implemented by the schedules built here: most(d) bounds from
// above the hits planned in any span of length d, from the schedule's
// highest rate, without enumerating them.
type mostIn interface {
	most(d time.Duration) uint64
}

// hitsIn bounds the hits of a schedule whose rate, integrated over the
// span, makes x: a send time rounded down may bring in one more.
func hitsIn(x float64) uint64 {
	x = math.Ceil(x) + 1
	if !(x < 1<<63) { // NaN too
		return 1 << 63
	}
	return uint64(x)
}

// addU adds two counts, saturating at 2^63.
func addU(a, b uint64) uint64 {
	return min(a+b, 1<<63) // both are at most 2^63: no wrap-around
}

func (l limit) most(d time.Duration) uint64 { return hitsIn(l.span(d.Seconds())) }

// end returns when the schedule ends at the latest (for last).
func (l limit) end() time.Duration { return l.duration }

func (s stepSched) end() time.Duration {
	var d time.Duration
	for _, st := range s.steps {
		d = SatAdd(d, st.Duration)
	}
	return d
}

// piece is a stretch [a, b] of a schedule (in seconds) with a constant
// rate, planning at most n hits; a == b is n hits at once.
type piece struct {
	a, b, rate float64
	n          uint64
}

// piecewiseMost bounds the hits of pieces in any span of d seconds. The
// hits a span [t, t+d] takes from the pieces grow linearly with t between
// the instants where t or t+d crosses an end of a piece, so the busiest
// span starts or ends at one: each is tried.
func piecewiseMost(pieces []piece, d float64) uint64 {
	var best uint64
	for _, p := range pieces {
		for _, t := range []float64{p.a, p.b, p.a - d, p.b - d} {
			var n uint64
			for _, q := range pieces {
				lo, hi := max(t, q.a), min(t+d, q.b)
				switch {
				case lo > hi || q.n == 0:
				case q.a == q.b:
					n = addU(n, q.n)
				default:
					n = addU(n, min(q.n, hitsIn(q.rate*(hi-lo))))
				}
			}
			best = max(best, n)
		}
	}
	return best
}

func (s stepSched) most(d time.Duration) uint64 {
	var pieces []piece
	var start time.Duration
	for _, st := range s.steps {
		end := SatAdd(start, st.Duration)
		if st.Rate > 0 {
			pieces = append(pieces, piece{start.Seconds(), end.Seconds(), st.Rate, hitsIn(st.Rate * st.Duration.Seconds())})
		}
		start = end
	}
	return piecewiseMost(pieces, d.Seconds())
}

func (b burstProbe) most(d time.Duration) uint64 {
	pieces := []piece{{0, b.over.Seconds(), 0, b.burst}}
	if b.burst > 1 && b.over > 0 {
		pieces[0].rate = float64(b.burst-1) / b.over.Seconds()
	} else {
		pieces[0].b = 0
	}
	if b.every > 0 {
		from := b.from
		if from < b.over {
			from = b.over + b.every
		}
		if from <= b.until {
			pieces = append(pieces, piece{from.Seconds(), b.until.Seconds(), 1 / b.every.Seconds(), uint64((b.until-from)/b.every) + 1})
		}
	}
	return piecewiseMost(pieces, d.Seconds())
}

// walkUpTo is the most hits a schedule may plan for [Busiest] to walk them
// one by one (an eighth of it for a slow schedule, a sine: a walk takes
// well under a second); a longer one is bounded by its rate (see mostIn).
const walkUpTo = 1 << 20

// Busiest returns the most hits the parts of one schedule (pacers all
// sharing one Sched) send in any span of length d: exactly, by sliding a window over
// the schedule, when it plans at most walkUpTo hits; otherwise an upper
// bound from the schedule's highest rate, found without enumerating.
func Busiest(parts []Pacer, d time.Duration) int {
	sched := parts[0].Sched
	n := Count(sched)
	budget := uint64(walkUpTo)
	if l, ok := sched.(limit); ok && l.slow {
		budget /= 8
	}
	if m, ok := sched.(mostIn); ok && n > budget {
		c := min(n, m.most(d))
		var sum uint64
		for _, u := range parts {
			k := max(u.K, 1)
			sum = addU(sum, c/k)
			if c%k != 0 {
				sum = addU(sum, 1)
			}
		}
		return int(min(c, sum, math.MaxInt))
	}
	// Count only the hits these parts send (all of them, unless the plan
	// is a shard).
	sends := func(g uint64) int {
		for _, u := range parts {
			if u.takes(g) {
				return 1
			}
		}
		return 0
	}
	// Slide a window over the schedule: ts holds the times of hits lo..hi,
	// so each hit's time is computed once.
	best, in := 0, 0
	var lo uint64
	var ts []time.Duration
	for hi := uint64(0); hi < n; hi++ {
		t, _ := sched.At(hi)
		ts = append(ts, t)
		in += sends(hi)
		for t-ts[0] >= d {
			in -= sends(lo)
			lo, ts = lo+1, ts[1:]
		}
		best = max(best, in)
	}
	return best
}

// SatAdd adds two non-negative durations, saturating at the longest.
func SatAdd(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
