package jitter

import (
	"math"
	"time"
)

// This file holds how the retries of the fleet's first request are laid out
// in attempt waves, each client's on its own timeline.

// point is one client's retry in a wave, on its own timeline.
type point struct {
	client   int
	from, at int64         // its previous answer, and when it sent
	delay    time.Duration // the delay it drew (its label), else the gap observed
	lo, hi   time.Duration // the range the null draws that delay from
	// smear, when set, is how much of that range is the host's noise
	// rather than the client's draw: the null draws over hi−lo−smear and
	// adds a uniform noise of up to smear (a client program judged from
	// the server's records, whose arrivals carry its host's wake-up).
	smear time.Duration
	late  time.Duration // the gap observed minus the delay drawn
}

// wave is the retries of one attempt number.
type wave struct {
	attempt int
	labeled bool // delays are the clients' own draws, not observed gaps
	pts     []point
}

// waves lays out the retries of every fleet client's first request in
// waves of one attempt number (phase 2).
//
// Each client's attempts are placed on its own timeline: attempt 1 at the
// fleet's release (its earliest first send), then each retry its drawn
// delay plus the wave's median latency after the one before. This judges
// the clients' schedule, not the machine: the spread of the first sends
// (goroutines released together start milliseconds apart) and of each
// answer's latency, and timers that run late, are the host's noise, on
// the scale of ε; on observed times they would split lockstep clients
// apart, and move a run's collision count from run to run for one and the
// same set of draws. On this timeline the figures are a function of the
// draws alone. Without delay labels (plain Vegeta results) the observed
// times are used.
func (f *fleetRun) waves(cfg Config) []wave {
	maxAttempt, labeled, release := 0, true, int64(math.MaxInt64)
	for _, c := range f.fleet {
		as := f.requests[c][1]
		maxAttempt = max(maxAttempt, len(as))
		release = min(release, as[0].rec.Start)
		for _, a := range as[1:] {
			labeled = labeled && a.tag.Delay >= 0
		}
	}
	medLat := make([]int64, maxAttempt)
	for n := range medLat {
		var lat []float64
		for _, c := range f.fleet {
			if as := f.requests[c][1]; len(as) > n {
				lat = append(lat, float64(as[n].rec.End-as[n].rec.Start))
			}
		}
		medLat[n] = int64(quantile(lat, 0.5))
	}
	timeline, drawn := f.timelines(labeled, release, medLat)
	var out []wave
	for n := 2; n <= maxAttempt; n++ {
		w := wave{attempt: n, labeled: labeled}
		for _, c := range f.fleet {
			as := f.requests[c][1]
			if len(as) < n {
				continue
			}
			observed := time.Duration(as[n-1].rec.Start - as[n-2].rec.End)
			p := point{client: c, at: timeline[c][n-1], delay: drawn[c][n-1]}
			p.from, p.late = p.at-int64(p.delay), observed-p.delay
			// Retry n−2 (from 0) draws after the delay drawn before
			// the previous attempt (none before the first retry).
			p.lo, p.hi = drawRange(cfg, n-2, drawn[c][n-2])
			w.pts = append(w.pts, p)
		}
		if cfg.Base <= 0 && len(w.pts) > 0 {
			// The clients' backoff is unknown (a client program judged
			// from the server's records): each wave is judged against
			// independent draws over the range it showed, [0, its
			// longest delay]. Lockstep clients show a range as long as
			// their common delay and crowd one end of it.
			var hi time.Duration
			for _, p := range w.pts {
				hi = max(hi, p.delay)
			}
			// The host's noise on each arrival (a process's wake-up, up to
			// about ε) is laid over the null's draws too, so that it does
			// not pass for clustering.
			for i := range w.pts {
				w.pts[i].lo, w.pts[i].hi = 0, max(hi, time.Millisecond)
				w.pts[i].smear = min(cfg.Epsilon, w.pts[i].hi/2)
			}
		}
		if len(w.pts) >= 2 {
			out = append(out, w)
		}
	}
	return out
}

// timelines places each fleet client's attempts on its own timeline (see
// waves): when each attempt was sent, and the delay before it. Without
// delay labels they are the observed sends and gaps.
func (f *fleetRun) timelines(labeled bool, release int64, medLat []int64) (timeline map[int][]int64, drawn map[int][]time.Duration) {
	timeline, drawn = map[int][]int64{}, map[int][]time.Duration{}
	for _, c := range f.fleet {
		as := f.requests[c][1]
		v, d := make([]int64, len(as)), make([]time.Duration, len(as))
		for n, a := range as {
			switch {
			case !labeled:
				v[n] = a.rec.Start
				if n > 0 {
					d[n] = time.Duration(a.rec.Start - as[n-1].rec.End)
				}
			case n == 0:
				v[n] = release
			default:
				d[n] = a.tag.Delay
				v[n] = v[n-1] + medLat[n-1] + int64(d[n])
			}
		}
		timeline[c], drawn[c] = v, d
	}
	return timeline, drawn
}
