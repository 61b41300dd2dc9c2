package capacity

import (
	"slices"
	"sort"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// StepVerdict is what a step showed (a string in the JSON).
type StepVerdict string

// A step's verdicts.
const (
	// StepPass: both upper bounds (latency quantile, error rate) are within
	// the objective.
	StepPass StepVerdict = "pass"
	// StepFail: a lower bound is beyond the objective.
	StepFail StepVerdict = "fail"
	// StepUndecided: neither proved; the step is to be lengthened, and a
	// step still undecided at its longest counts as not sustained.
	StepUndecided StepVerdict = "undecided"
	// StepClient: the requests did not go out on schedule (the generator
	// is the limit, not the API), or none went out.
	StepClient StepVerdict = "client"
	// StepLimits: a 429 came back: the limiter engaged below its
	// documented rate.
	StepLimits StepVerdict = "limits"
)

// Cause names what limited a step or the search; its zero value (none)
// is JSON null.
type Cause string

// What limits a step or the search.
const (
	// CauseNone: nothing (a passing step, or a search that ran out of steps).
	CauseNone Cause = ""
	// CauseLatency: the latency quantile.
	CauseLatency Cause = "latency"
	// CauseErrors: the error rate.
	CauseErrors Cause = "errors"
	// causeClient: the generator could not keep the schedule.
	causeClient Cause = "client"
	// causeLimits: the rate limiter answered 429.
	causeLimits Cause = "limits"
	// causeMaxRate: the search reached its highest allowed rate, which
	// passed.
	causeMaxRate Cause = "max-rate"
)

// MarshalJSON writes c as a JSON string, or null for CauseNone.
func (c Cause) MarshalJSON() ([]byte, error) {
	if c == CauseNone {
		return []byte("null"), nil
	}
	return []byte(`"` + string(c) + `"`), nil
}

// StepResult is the judgement of one step with the figures it rests on:
// everything the search keeps of a step once its samples are dropped.
// Durations are in milliseconds, rates per second; a bound the samples
// cannot give is nil (JSON null).
type StepResult struct {
	// Phase is the search phase the step belonged to ("ramp", "bisect",
	// "remeasure"); empty for a step judged outside a search.
	Phase string `json:"phase,omitempty"`
	// OfferedRPS is the open-model rate the schedule asked for.
	OfferedRPS float64 `json:"offered_rps"`
	// AchievedRPS is the rate requests went out at: n−1 over the time
	// from the first send to the last.
	AchievedRPS float64 `json:"achieved_rps"`
	// ThroughputRPS is the rate successful responses came back at: n−1
	// over the time from the first response to the last, times the
	// share that succeeded.
	ThroughputRPS float64 `json:"throughput_rps"`
	// DurationMS is the judged length of the step (warm-up excluded,
	// lengthenings included); 0 outside a search.
	DurationMS clock.Millis `json:"duration_ms"`
	// Lengthened counts how many times the step was lengthened.
	Lengthened int `json:"lengthened"`
	// Requests is how many requests were judged.
	Requests int `json:"requests"`
	// Errors is how many of them failed (a 429 included).
	Errors int `json:"errors"`
	// Refused is how many were answered 429.
	Refused int `json:"refused"`
	// Sources is how many source addresses the step was spread over.
	Sources int `json:"sources"`
	// QuantileMS is the objective's quantile of latency measured from the
	// intended send time.
	QuantileMS clock.Millis `json:"quantile_ms"`
	// QuantileLowMS is its lower confidence bound.
	QuantileLowMS *clock.Millis `json:"quantile_low_ms"`
	// QuantileHighMS is its upper confidence bound.
	QuantileHighMS *clock.Millis `json:"quantile_high_ms"`
	// UncorrectedQuantileMS is the same quantile measured from the actual
	// send, as tools that do not correct coordinated omission report it.
	UncorrectedQuantileMS clock.Millis `json:"uncorrected_quantile_ms"`
	// UncorrectedLowMS is its lower confidence bound.
	UncorrectedLowMS *clock.Millis `json:"uncorrected_quantile_low_ms"`
	// UncorrectedHighMS is its upper confidence bound.
	UncorrectedHighMS *clock.Millis `json:"uncorrected_quantile_high_ms"`
	// ErrorRate is Errors / Requests.
	ErrorRate float64 `json:"error_rate"`
	// ErrorRateLow is its exact (Clopper–Pearson) lower confidence bound.
	ErrorRateLow float64 `json:"error_rate_low"`
	// ErrorRateHigh is its upper bound.
	ErrorRateHigh float64 `json:"error_rate_high"`
	// MeanLatencyMS is the mean latency from the actual send: the time a
	// request was in flight.
	MeanLatencyMS clock.Millis `json:"mean_latency_ms"`
	// Concurrency is the mean number of requests in flight by Little's
	// law: the response rate times MeanLatencyMS.
	Concurrency float64 `json:"concurrency"`
	// LatenessP99MS is the p99 of how late requests went out after their
	// intended send time.
	LatenessP99MS clock.Millis `json:"lateness_p99_ms"`
	// HostDelayMS is how long the host can have delayed the answers that
	// missed the objective: the longest wait to run that goroutines of the
	// generator had at least as often as answers (from their intended
	// time) missed it, or at least once when none did (0: none of 1 ms or
	// more measured). Answers may have been read, and a target sharing the
	// host served, that late.
	HostDelayMS clock.Millis `json:"host_delay_ms,omitempty"`
	// Verdict is StepPass, StepFail, StepUndecided, StepClient or StepLimits.
	Verdict StepVerdict `json:"verdict"`
	// LimitedBy is what failed the step, or left it undecided (none when
	// it passed).
	LimitedBy Cause `json:"limited_by"`
}

// judge judges the samples of one step offered at offered requests per
// second. In order:
//   - no sample: client (nothing went out);
//   - no 429 and the error rate's lower bound above the budget: fail
//     (errors) — a figure the generator's lateness cannot inflate, named
//     before latency because it is the more basic failure: the latency of
//     answers that failed (an instant 503 held up on a busy host) says
//     nothing of how fast the API serves;
//   - the quantile's lower bound, measured from the actual send, above
//     the objective by more than twice the delay the host can have added
//     to as many answers as missed it (HostDelayMS), and by more than twice the
//     step's lateness p99 when it did not go out on schedule: fail
//     (latency) — the API failed
//     whatever the generator did (a late generator's catch-up burst may
//     have drawn 429s as well: the step's Refused still counts them). The
//     margin is what a host that stalled the generator for L adds even to
//     that figure: the answers due while it stalled are read up to L late,
//     and its catch-up burst, L of requests at once, queues up to L more
//     at a target that serves the offered rate (busy suite runs, 300/s
//     against a pool of 500/s whose workers kept their 20 ms: 158 ms from
//     the actual send with lateness p99 78 ms, 442 ms with 181 ms);
//   - a 429: limits;
//   - achieved rate below MinAchieved of offered, or lateness p99 above
//     MaxLateness: client;
//   - the quantile's lower bound from the intended time above the
//     objective by more than twice the host's delay: fail (latency);
//   - either lower bound above the objective by less: client — a host
//     that kept the generator from running for D may have read answers
//     D late, and, where the target shares it, served them D late (busy
//     suite runs: 300/s against a pool of 500/s failed with a scheduling
//     delay of tens of milliseconds while its workers kept their 20 ms);
//   - both upper bounds within the objective: pass;
//   - else undecided (latency when the quantile is undecided, else errors).
//
// judge sorts st's samples in place; st stays usable (Add, Merge, Judge).
func judge(st *Stats, offered float64, c criteria) StepResult {
	c = c.withDefaults()
	r := StepResult{OfferedRPS: offered, Requests: st.Len(), Errors: st.failed, Refused: st.refused}
	if r.Requests == 0 {
		r.Verdict, r.LimitedBy = StepClient, causeClient
		return r
	}
	st.figures(&r)
	slo, q := c.Objective.SLO, c.Objective.SLO.Quantile
	slices.Sort(st.corrected)
	slices.Sort(st.uncorrected)
	slices.Sort(st.lateness)
	corr := quantileInterval(st.corrected, q, c.Confidence)
	unc := quantileInterval(st.uncorrected, q, c.Confidence)
	r.QuantileMS, r.QuantileLowMS, r.QuantileHighMS = clock.Ms(corr.Estimate), bound(corr.Low, corr.HasLow), bound(corr.High, corr.HasHigh)
	r.UncorrectedQuantileMS, r.UncorrectedLowMS, r.UncorrectedHighMS = clock.Ms(unc.Estimate), bound(unc.Low, unc.HasLow), bound(unc.High, unc.HasHigh)
	lateness := st.lateness[nearestRank(len(st.lateness), 0.99)-1]
	r.LatenessP99MS = clock.Ms(lateness)
	r.ErrorRate = float64(r.Errors) / float64(r.Requests)
	r.ErrorRateLow, r.ErrorRateHigh = clopperPearson(r.Errors, r.Requests, c.Confidence)

	missed := len(st.corrected) - sort.Search(len(st.corrected), func(i int) bool { return st.corrected[i] > slo.Max })
	hostDelay := st.hostDelay(missed)
	r.HostDelayMS = clock.Ms(hostDelay)

	budget := c.Objective.ErrorBudget
	beyond := func(ci quantileCI, margin time.Duration) bool { return ci.HasLow && ci.Low > slo.Max+margin }
	onSchedule := r.AchievedRPS >= c.MinAchieved*offered && (c.MaxLateness < 0 || lateness <= c.MaxLateness)
	host := 2 * hostDelay
	margin := host
	if !onSchedule {
		margin = max(margin, 2*lateness)
	}
	switch {
	case r.Refused == 0 && r.ErrorRateLow > budget:
		r.Verdict, r.LimitedBy = StepFail, CauseErrors
	case beyond(unc, margin):
		r.Verdict, r.LimitedBy = StepFail, CauseLatency
	case r.Refused > 0:
		r.Verdict, r.LimitedBy = StepLimits, causeLimits
	case !onSchedule:
		r.Verdict, r.LimitedBy = StepClient, causeClient
	case beyond(corr, host):
		r.Verdict, r.LimitedBy = StepFail, CauseLatency
	case beyond(unc, 0) || beyond(corr, 0):
		// Beyond the objective by no more than the host could add.
		r.Verdict, r.LimitedBy = StepClient, causeClient
	case corr.HasHigh && corr.High <= slo.Max && r.ErrorRateHigh <= budget:
		r.Verdict = StepPass
	case !corr.HasHigh || corr.High > slo.Max:
		r.Verdict, r.LimitedBy = StepUndecided, CauseLatency
	default:
		r.Verdict, r.LimitedBy = StepUndecided, CauseErrors
	}
	return r
}

// figures sets the rates, the mean latency and Little's concurrency.
func (s *Stats) figures(r *StepResult) {
	n := float64(s.Len())
	if n < 2 {
		return
	}
	if d := s.lastSent.Sub(s.firstSent); d > 0 {
		r.AchievedRPS = (n - 1) / d.Seconds()
	}
	responses := 0.0
	if d := s.lastDone.Sub(s.firstDone); d > 0 {
		responses = (n - 1) / d.Seconds()
	}
	r.ThroughputRPS = responses * (n - float64(s.failed)) / n
	mean := s.sumUncorr.Seconds() / n
	r.MeanLatencyMS = clock.Millis(mean * 1000)
	r.Concurrency = responses * mean
}

// bound returns d in milliseconds, or nil when it is no bound.
func bound(d time.Duration, ok bool) *clock.Millis {
	if !ok {
		return nil
	}
	v := clock.Ms(d)
	return &v
}

// Passed reports whether the step kept the objective.
func (r StepResult) Passed() bool { return r.Verdict == StepPass }
