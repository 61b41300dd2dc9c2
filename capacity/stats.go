package capacity

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// Sample is one request of a step, as the generator saw it.
type Sample struct {
	// Intended is when the request was due by the step's schedule.
	Intended time.Time
	// Sent is when it actually went out.
	Sent time.Time
	// Done is when its response (or its transport fault) came back.
	Done time.Time
	// Failed reports whether it counts against the error budget: a
	// transport fault or any non-2xx answer, a 429 included.
	Failed bool
	// Refused reports whether the answer was a 429 (Failed is then true
	// as well; Add makes it so).
	Refused bool
}

// Stats accumulates the samples of one step (with its lengthenings) until
// the step is judged; it holds three durations per request and a few
// sums, nothing of the request itself. The zero value is not ready: use
// [NewStats]. A Stats is not safe for concurrent use; shards each fill
// their own and [Stats.Merge] them.
type Stats struct {
	corrected   []time.Duration // Done − Intended
	uncorrected []time.Duration // Done − Sent
	lateness    []time.Duration // Sent − Intended
	sumUncorr   time.Duration
	failed      int
	refused     int
	firstSent   time.Time
	lastSent    time.Time
	firstDone   time.Time
	lastDone    time.Time
	waits       map[clock.Millis]uint64 // the generator's goroutines' waits to run, by at-least edge (HostWaits)
}

// NewStats returns an empty Stats.
func NewStats() *Stats { return &Stats{} }

// Add records one sample. The caller adds only the judged part of a step:
// samples due during the warm-up are dropped before Add.
func (s *Stats) Add(x Sample) {
	s.corrected = append(s.corrected, x.Done.Sub(x.Intended))
	u := x.Done.Sub(x.Sent)
	s.uncorrected = append(s.uncorrected, u)
	s.lateness = append(s.lateness, x.Sent.Sub(x.Intended))
	s.sumUncorr += u
	if x.Failed || x.Refused {
		s.failed++
	}
	if x.Refused {
		s.refused++
	}
	s.widen(x.Sent, x.Sent, x.Done, x.Done)
}

// widen extends the spans of sends and responses to cover the given ones.
func (s *Stats) widen(firstSent, lastSent, firstDone, lastDone time.Time) {
	if s.firstSent.IsZero() || firstSent.Before(s.firstSent) {
		s.firstSent = firstSent
	}
	if lastSent.After(s.lastSent) {
		s.lastSent = lastSent
	}
	if s.firstDone.IsZero() || firstDone.Before(s.firstDone) {
		s.firstDone = firstDone
	}
	if lastDone.After(s.lastDone) {
		s.lastDone = lastDone
	}
}

// HostWait counts the goroutines of the generator that waited, runnable,
// at least AtLeastMS before they ran while a step was sent and answered:
// a host short of CPU (or a generator short of it) reads answers that
// late, and where the target shares the host, serves them that late.
type HostWait struct {
	// AtLeastMS is the wait's lower edge.
	AtLeastMS clock.Millis `json:"at_least_ms"`
	// Count is how many waits of at least AtLeastMS (and less than the
	// next edge a HostWait of the same measurement names) the runtime
	// recorded.
	Count uint64 `json:"count"`
}

// waitSampling is how many of a goroutine's waits each recorded one
// stands for: the Go runtime records the wait of one transition in eight
// of every goroutine (its gTrackingPeriod).
const waitSampling = 8

// HostWaits adds the waits the host imposed on the generator while the
// samples were taken (capacity/runner measures them per segment).
func (s *Stats) HostWaits(w []HostWait) {
	for _, x := range w {
		if x.Count == 0 {
			continue
		}
		if s.waits == nil {
			s.waits = map[clock.Millis]uint64{}
		}
		s.waits[x.AtLeastMS] += x.Count
	}
}

// hostWaits lists s's waits, longest first.
func (s *Stats) hostWaits() []HostWait {
	var w []HostWait
	for _, at := range slices.Sorted(maps.Keys(s.waits)) {
		w = append(w, HostWait{AtLeastMS: at, Count: s.waits[at]})
	}
	slices.Reverse(w)
	return w
}

// hostDelay is the longest wait d such that the generator's goroutines
// waited d or more at least m times (each recorded wait standing for
// waitSampling): the delay a host can have added to m answers. One
// goroutine's long wait among thousands explains one late answer, not
// the hundreds of a step that failed.
func (s *Stats) hostDelay(m int) time.Duration {
	var n uint64
	for _, w := range s.hostWaits() {
		n += w.Count * waitSampling
		if n >= uint64(max(m, 1)) {
			return w.AtLeastMS.Duration()
		}
	}
	return 0
}

// Merge adds every sample of o to s: the shards of one step, judged as one.
func (s *Stats) Merge(o *Stats) {
	if o == nil {
		return
	}
	s.HostWaits(o.hostWaits())
	if o.Len() == 0 {
		return
	}
	s.corrected = append(s.corrected, o.corrected...)
	s.uncorrected = append(s.uncorrected, o.uncorrected...)
	s.lateness = append(s.lateness, o.lateness...)
	s.sumUncorr += o.sumUncorr
	s.failed += o.failed
	s.refused += o.refused
	s.widen(o.firstSent, o.lastSent, o.firstDone, o.lastDone)
}

// Len returns how many samples s holds.
func (s *Stats) Len() int { return len(s.corrected) }

// criteria is what judge holds a step to. The zero values of the
// optional fields take the defaults documented on each.
type criteria struct {
	// Objective is the latency objective and error budget.
	Objective Objective
	// Confidence of every interval; 0 means defaultConfidence.
	Confidence float64
	// MinAchieved is the share of the offered rate the requests must
	// have gone out at for the step to count; 0 means 0.95.
	MinAchieved float64
	// MaxLateness bounds the p99 of how late requests went out after
	// their intended time; 0 means 10 ms. A negative MaxLateness turns
	// the check off and charges all lateness to the API, as wrk2 does:
	// for a caller that knows its requests were late only because every
	// worker was waiting on the API.
	MaxLateness time.Duration
}

// withDefaults returns c with its zero optional fields set.
func (c criteria) withDefaults() criteria {
	if c.Confidence == 0 {
		c.Confidence = defaultConfidence
	}
	if c.MinAchieved == 0 {
		c.MinAchieved = 0.95
	}
	if c.MaxLateness == 0 {
		c.MaxLateness = 10 * time.Millisecond
	}
	return c
}

// statsJSON is the serialised form of a Stats: every duration in
// nanoseconds, every instant in RFC 3339 with nanoseconds.
type statsJSON struct {
	Corrected      []time.Duration `json:"corrected_ns"`
	Uncorrected    []time.Duration `json:"uncorrected_ns"`
	Lateness       []time.Duration `json:"lateness_ns"`
	SumUncorrected time.Duration   `json:"sum_uncorrected_ns"`
	Failed         int             `json:"failed"`
	Refused        int             `json:"refused"`
	FirstSent      time.Time       `json:"first_sent"`
	LastSent       time.Time       `json:"last_sent"`
	FirstDone      time.Time       `json:"first_done"`
	LastDone       time.Time       `json:"last_done"`
	HostWaits      []HostWait      `json:"host_waits,omitempty"`
}

// MarshalJSON writes every sample and sum of s, so that the shards of a
// step can hand their Stats to each other: a Stats read back with
// [Stats.UnmarshalJSON] is judged, and merges, exactly as s (instants
// keep their nanoseconds, though not their monotonic clock readings).
func (s *Stats) MarshalJSON() ([]byte, error) {
	return json.Marshal(statsJSON{Corrected: s.corrected, Uncorrected: s.uncorrected, Lateness: s.lateness,
		SumUncorrected: s.sumUncorr, Failed: s.failed, Refused: s.refused,
		FirstSent: s.firstSent, LastSent: s.lastSent, FirstDone: s.firstDone, LastDone: s.lastDone, HostWaits: s.hostWaits()})
}

// UnmarshalJSON reads what [Stats.MarshalJSON] wrote into s, replacing
// what s held, and refuses a form whose parts do not agree.
func (s *Stats) UnmarshalJSON(b []byte) error {
	var j statsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	n := len(j.Corrected)
	switch {
	case len(j.Uncorrected) != n || len(j.Lateness) != n:
		return fmt.Errorf("stats: %d corrected, %d uncorrected and %d lateness samples: want as many of each", n, len(j.Uncorrected), len(j.Lateness))
	case j.Failed < 0 || j.Failed > n || j.Refused < 0 || j.Refused > j.Failed:
		return fmt.Errorf("stats: %d failed and %d refused of %d: want 0 <= refused <= failed <= samples", j.Failed, j.Refused, n)
	}
	*s = Stats{corrected: j.Corrected, uncorrected: j.Uncorrected, lateness: j.Lateness, sumUncorr: j.SumUncorrected,
		failed: j.Failed, refused: j.Refused, firstSent: j.FirstSent, lastSent: j.LastSent, firstDone: j.FirstDone, lastDone: j.LastDone}
	s.HostWaits(j.HostWaits)
	return nil
}
