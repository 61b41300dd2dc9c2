package jitter

import (
	"fmt"
	"math"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// This file holds what a fleet was asked to do (Config, and ε taken from
// the data when the clients' backoff is unknown), the verdict on it
// (Report, with each attempt wave's figures), and Judge, which reaches it.

// Config is what a fleet was asked to do, and how strictly to judge it.
type Config struct {
	// Base and Cap are the backoff's: retry k (from 0) of full jitter
	// draws from [0, min(Cap, Base·2^k)].
	Base, Cap time.Duration
	// Strategy is the backoff the clients claim: full (also ""), equal,
	// decorrelated or none. Every wave is judged against independent
	// draws of that strategy, from the ranges package client draws from;
	// none draws nothing, so it is judged against full jitter, the
	// contract's advice (and fails).
	Strategy string
	// Epsilon is the distance that counts as a collision (0: Base/50).
	Epsilon time.Duration
	// Attempts is the cap on attempts per request (0: 4).
	Attempts int
	// SlowDown is the least pause a client must take before its next
	// request after one ended on repeated 429s (0: not checked).
	SlowDown time.Duration
	// Alpha is the false-alarm rate of the run's timing tests together
	// (0: DefaultAlpha): each of its m tests is held to Alpha/m
	// (Bonferroni).
	Alpha float64
	// Sims is the number of simulated fleets each wave's bounds come
	// from (0: 2·⌈m/Alpha⌉ − 1, so that a bound is the 2nd largest
	// simulated figure); never fewer than ⌈m/Alpha⌉ − 1, the fewest with
	// which a test can fail at all. Seed seeds them.
	Sims int
	Seed uint64
	// Clients and Requests, when set, are the client programs started and
	// the logical requests each was asked to make (fleet --client-cmd): a
	// run with fewer is inconclusive.
	Clients, Requests int
	// Stall is the longest the target stalled while the clients retried
	// (0: not measured); more than ε makes the run inconclusive.
	Stall time.Duration
}

// DefaultAlpha is a fleet's false-alarm rate: the chance that a fleet
// whose clients draw independently by the strategy claimed fails its
// timing tests. A client's retry library draws from its own random
// source, so no run of it can be repeated: each must stand alone, and a
// release gate or test suite that judges a dozen such fleets would fail
// a correct one in about one run of ten at 0.01.
const DefaultAlpha = 1e-4

// withDefaults returns cfg with its zero fields set (Sims is set once the
// number of tests is known).
func (cfg Config) withDefaults() Config {
	if cfg.Epsilon <= 0 {
		cfg.Epsilon = cfg.Base / 50
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 4
	}
	if cfg.Alpha <= 0 {
		cfg.Alpha = DefaultAlpha
	}
	return cfg
}

// epsilonFromRelease returns the collision distance for a fleet judged
// from the server's records (client programs, whose drawn delays are
// unknown): twice the spread over which the fleet's shared 429s were
// written, at least 50 ms, so that clients answered together and retrying
// after the same delay count as colliding however their host scheduled
// them; and how it was reached.
func (f *fleetRun) epsilonFromRelease() (time.Duration, string) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range f.fleet {
		end := f.requests[c][1][0].rec.End
		lo, hi = min(lo, end), max(hi, end)
	}
	spread := time.Duration(max(hi-lo, 0))
	eps := max(50*time.Millisecond, 2*spread)
	return eps, fmt.Sprintf("from the data: the shared 429s were written over %v; ε is twice that, at least 50ms", spread.Round(time.Microsecond))
}

// Wave is the figures of one attempt wave: every client's attempt N of its
// first request.
type Wave struct {
	Attempt int `json:"attempt"`
	Clients int `json:"clients"`
	// RangeLowMS and RangeMS are the least and the greatest delay the
	// null draws from at this wave (for decorrelated jitter, over every
	// client's own range).
	RangeLowMS      clock.Millis `json:"range_low_ms"`
	RangeMS         clock.Millis `json:"range_ms"`
	Collisions      int          `json:"collisions"`
	Expected        float64      `json:"expected"`
	Bound           int          `json:"bound"`
	CollisionRatio  float64      `json:"collision_ratio"`
	Recollided      int          `json:"recollided"`
	RecollisionRate float64      `json:"recollision_rate"`
	RecollisionMax  float64      `json:"recollision_expected"`
	RecollBound     int          `json:"recollision_bound"`
	// KSP is the p-value of a KS test of this wave's delays over their
	// ranges, reported; the run's over every wave is the one judged.
	KSP       float64      `json:"ks_p"`
	PeakBin   int          `json:"peak_bin"`
	PeakBound int          `json:"peak_bound"`
	LateP99MS clock.Millis `json:"late_p99_ms"`
	Verdict   string       `json:"verdict"`

	pairs       [][2]int  // colliding client pairs, for the next wave
	recollPairs int       // of those, how many were both in the next wave
	us          []float64 // each delay's place in its null range, in [0, 1]
}

// Report is the verdict on a fleet (fleet --json).
type Report struct {
	Verdict         string       `json:"verdict"`
	CollisionRatio  float64      `json:"collision_ratio"`
	RecollisionRate float64      `json:"recollision_rate"`
	KSP             float64      `json:"ks_p"`
	EpsilonMS       clock.Millis `json:"epsilon_ms"`
	Alpha           float64      `json:"alpha"`
	// Null is the strategy whose independent draws the waves were judged
	// against; Sims the number of simulated fleets per wave.
	Null string `json:"null"`
	Sims int    `json:"sims"`
	// EpsilonBasis says how ε was reached when it came from the data.
	EpsilonBasis string          `json:"epsilon_basis,omitempty"`
	Clients      int             `json:"clients"`
	Requests     int             `json:"requests"`
	AttemptsMean float64         `json:"attempts_mean"`
	AttemptsMax  int             `json:"attempts_max"`
	Waves        []Wave          `json:"waves"`
	Checks       []analyze.Check `json:"checks"`
	// Notes say what a person should know beside the checks.
	Notes []string `json:"notes"`
}

// add appends a check: a failed one fails the report, an inconclusive one
// makes it inconclusive unless another failed.
func (rep *Report) add(c analyze.Check) {
	rep.Checks = append(rep.Checks, c)
	rep.Verdict = analyze.Worse(rep.Verdict, c.Verdict)
}

// check builds a check with its evidence formatted.
func check(name, verdict, format string, args ...any) analyze.Check {
	return analyze.Check{Name: name, Verdict: verdict, Detail: fmt.Sprintf(format, args...)}
}

// Jitter judges the retry timing of a fleet's results: it groups the
// attempts by client and request; lays the first request's retries out in
// attempt waves on each client's own timeline; tests every wave against
// simulated fleets whose clients draw independently by the claimed
// strategy (collisions, the busiest ε-bin, the re-collision of the pairs
// that collided at the wave before, and a Kolmogorov–Smirnov test of the
// delays over their ranges); counts each request's retries; then judges
// the fleet's checks (fleetChecks) on that evidence. The timing tests
// together hold a false-alarm rate of at most Alpha.
func Judge(in *decode.Input, cfg Config) *Report {
	cfg = cfg.withDefaults()
	rep := &Report{Verdict: analyze.Pass, Alpha: cfg.Alpha, Null: nullOf(cfg.Strategy), Notes: []string{}}
	f := groupFleet(in)
	if len(f.clients) == 0 {
		rep.EpsilonMS = clock.Ms(cfg.Epsilon)
		if cfg.Clients > 0 { // client programs that sent nothing: no evidence
			v, d := judgeClients(&fleetEvidence{f: f, cfg: cfg, rep: rep, discipline: disciplineCounts{perClient: map[int]int{}}})
			rep.add(analyze.Check{Name: "clients", Verdict: v, Detail: d})
			return rep
		}
		rep.add(check("fleet", analyze.Fail, "no fleet results (labels with client= and attempt=)"))
		return rep
	}
	rep.Clients = len(f.fleet)
	f.splitPolled(cfg)
	if cfg.Base <= 0 && cfg.Epsilon <= 0 { // a client program's records: ε from the data
		cfg.Epsilon, rep.EpsilonBasis = f.epsilonFromRelease()
	}
	rep.EpsilonMS = clock.Ms(cfg.Epsilon)
	e := &fleetEvidence{in: in, f: f, cfg: cfg, rep: rep}
	e.jitter = judgeWaves(rep, f.waves(cfg), cfg)
	e.discipline = f.discipline(cfg)
	rep.Requests, rep.AttemptsMax = e.discipline.total, e.discipline.attemptsMax
	rep.AttemptsMean = float64(e.discipline.attempts) / float64(max(e.discipline.total, 1))
	for _, c := range fleetChecks() {
		if v, d := c.judge(e); v != "" {
			rep.add(analyze.Check{Name: c.name, Verdict: v, Detail: d})
		}
	}
	return rep
}
