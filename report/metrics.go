package report

import (
	"io"
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// The names of the metrics Metrics writes (docs/metrics.md describes
// them); they are stable: new ones may be added, none is renamed.
const (
	metricVerdict       = "ratecheck_verdict"
	metricObservedLimit = "ratecheck_observed_limit"
	metricExpectedLimit = "ratecheck_expected_limit"
	metricLatency       = "ratecheck_latency_seconds"
	metricErrorRatio    = "ratecheck_error_ratio"
	metricKnee          = "ratecheck_knee_rps"
	metricKneeLow       = "ratecheck_knee_low_rps"
	metricKneeHigh      = "ratecheck_knee_high_rps"
	metricKneeLatency   = "ratecheck_knee_latency_seconds"
	metricRegression    = "ratecheck_regression"
	metricRunTimestamp  = "ratecheck_run_timestamp_seconds"
)

// allChecks is the value of the check label (and of the surface label)
// of a verdict that sums up all checks (or all surfaces).
const allChecks = "all"

// verdictStates are the verdicts a verdict metric has a series for when
// Metrics.States is empty: those of verify's checks.
var verdictStates = []string{"pass", "fail", "inconclusive", "skip"}

// Metrics is what a run (or a history of runs) tells a dashboard, in
// plain figures, so that every command that runs load can fill it without
// depending on how it analyzed its run. The zero value writes only the
// run's timestamp (of the zero time). A figure left nil is not written.
type Metrics struct {
	Kind    string    // verify, attack, fleet, capacity or history
	Label   string    // the run's label (the release under test), or ""
	Target  string    // the target's address
	Start   time.Time // when the run began
	Verdict string    // the run's verdict over all surfaces, or "" for none
	// States are the verdicts a verdict of this kind can take (default
	// verdictStates); a verdict outside them gets a series of its own.
	States   []string
	Surfaces []SurfaceMetrics
}

// SurfaceMetrics are a run's figures on one surface.
type SurfaceMetrics struct {
	Surface       string
	Verdict       string         // the surface's verdict, or "" for none
	Checks        []CheckVerdict // per check
	ObservedLimit *float64       // requests admitted within one window
	ExpectedLimit *float64       // the contract's limit
	Latency       *Latency
	ErrorRatio    *float64 // share of requests that failed, 0 to 1
	Knee          *Knee
	Regressions   []Regression // history's judgement of the surface's series
	// Objective is what the knee and the regressions were measured
	// against, for capacity runs ("p99<=100ms, error budget 1%"), written
	// as their objective label; "" for none.
	Objective string
}

// CheckVerdict is one check's verdict.
type CheckVerdict struct{ Name, Verdict string }

// Latency summarizes a surface's latencies: how many, their sum and some
// quantiles (keyed by the quantile, 0 to 1), in seconds.
type Latency struct {
	Count     uint64
	Sum       float64
	Quantiles map[float64]float64
}

// Knee is capacity's knee and its interval, in requests per second (a
// bound that is NaN, such as the high end when no rate failed, is not
// written), and the objective's quantile measured at the knee, in
// seconds (0: none measured, not written).
type Knee struct{ RPS, Low, High, Latency float64 }

// Regression says whether the newest runs of one figure's series lie after
// a significant change for the worse.
type Regression struct {
	Figure string // as history names it, e.g. "p99_ms"
	Worse  bool
}

// writeMetrics writes m in the Prometheus text exposition format (version
// 0.0.4, which node_exporter's textfile collector and a Pushgateway
// read), with no timestamps, families sorted by name.
func writeMetrics(w io.Writer, m Metrics) error {
	mfs, err := gatherer(m).Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return err
		}
	}
	return nil
}

// WriteMetricsFile writes m to the file at path as WriteMetrics does, by
// way of a temporary file in the same folder renamed at the end, so that
// a textfile collector never reads half a file. node_exporter reads only
// files named *.prom.
func WriteMetricsFile(path string, m Metrics) error {
	return prometheus.WriteToTextfile(path, gatherer(m))
}

// gatherer returns a registry that holds m's metrics (a pedantic one: it
// checks that each metric is consistent with its description).
func gatherer(ms ...Metrics) prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{ms})
	return reg
}

// collector is a prometheus.Collector of Metrics values.
type collector struct{ ms []Metrics }

// The labels every metric has, and the descriptions.
var (
	runLabels = []string{"kind", "label", "target"}
	descs     = map[string]*prometheus.Desc{
		metricVerdict: prometheus.NewDesc(metricVerdict,
			"1 for the verdict the run reached, 0 for each other it could have (check and surface \"all\": the verdict over all).",
			append(slices.Clone(runLabels), "surface", "check", "verdict"), nil),
		metricObservedLimit: prometheus.NewDesc(metricObservedLimit, "The most requests admitted within one window before a refusal.", append(slices.Clone(runLabels), "surface"), nil),
		metricExpectedLimit: prometheus.NewDesc(metricExpectedLimit, "The contract's limit: requests per window.", append(slices.Clone(runLabels), "surface"), nil),
		metricLatency:       prometheus.NewDesc(metricLatency, "Latency of the surface's requests, in seconds.", append(slices.Clone(runLabels), "surface"), nil),
		metricErrorRatio:    prometheus.NewDesc(metricErrorRatio, "Share of the surface's requests that failed (0 to 1).", append(slices.Clone(runLabels), "surface"), nil),
		metricKnee:          prometheus.NewDesc(metricKnee, "The offered rate past which the surface stops keeping its objective, in requests per second.", append(slices.Clone(runLabels), "surface", "objective"), nil),
		metricKneeLow:       prometheus.NewDesc(metricKneeLow, "Low end of the knee's interval, in requests per second.", append(slices.Clone(runLabels), "surface", "objective"), nil),
		metricKneeHigh:      prometheus.NewDesc(metricKneeHigh, "High end of the knee's interval, in requests per second.", append(slices.Clone(runLabels), "surface", "objective"), nil),
		metricKneeLatency: prometheus.NewDesc(metricKneeLatency, "The latency quantile of the objective measured at the knee, from each request's intended send time, in seconds.",
			append(slices.Clone(runLabels), "surface", "objective"), nil),
		metricRegression: prometheus.NewDesc(metricRegression,
			"1 when the newest runs of the figure's series lie after a significant change for the worse, else 0.",
			append(slices.Clone(runLabels), "surface", "figure", "objective"), nil),
		metricRunTimestamp: prometheus.NewDesc(metricRunTimestamp, "When the run began, in seconds since the Unix epoch.", runLabels, nil),
	}
)

// Describe sends the descriptions of every metric collector writes.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// Collect sends the metrics of every Metrics value.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.ms {
		collect(ch, m)
	}
}

// collect sends m's metrics.
func collect(ch chan<- prometheus.Metric, m Metrics) {
	run := []string{m.Kind, m.Label, m.Target}
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(descs[name], prometheus.GaugeValue, v, append(slices.Clone(run), labels...)...)
	}
	verdict := func(surface, check, got string) {
		for _, s := range states(m.States, got) {
			gauge(metricVerdict, b2f(s == got), surface, check, s)
		}
	}
	gauge(metricRunTimestamp, float64(m.Start.UnixNano())/1e9)
	if m.Verdict != "" {
		verdict(allChecks, allChecks, m.Verdict)
	}
	for _, s := range m.Surfaces {
		if s.Verdict != "" {
			verdict(s.Surface, allChecks, s.Verdict)
		}
		for _, k := range s.Checks {
			verdict(s.Surface, k.Name, k.Verdict)
		}
		for name, v := range map[string]*float64{metricObservedLimit: s.ObservedLimit, metricExpectedLimit: s.ExpectedLimit, metricErrorRatio: s.ErrorRatio} {
			if v != nil {
				gauge(name, *v, s.Surface)
			}
		}
		if l := s.Latency; l != nil {
			ch <- prometheus.MustNewConstSummary(descs[metricLatency], l.Count, l.Sum, l.Quantiles, append(slices.Clone(run), s.Surface)...)
		}
		if k := s.Knee; k != nil {
			gauge(metricKnee, k.RPS, s.Surface, s.Objective)
			for name, v := range map[string]float64{metricKneeLow: k.Low, metricKneeHigh: k.High} {
				if !math.IsNaN(v) {
					gauge(name, v, s.Surface, s.Objective)
				}
			}
			if k.Latency > 0 {
				gauge(metricKneeLatency, k.Latency, s.Surface, s.Objective)
			}
		}
		for _, r := range s.Regressions {
			gauge(metricRegression, b2f(r.Worse), s.Surface, r.Figure, s.Objective)
		}
	}
}

// states returns the verdicts to write a series for: those given (or
// verdictStates) and got, if it is not among them.
func states(given []string, got string) []string {
	s := given
	if len(s) == 0 {
		s = verdictStates
	}
	if !slices.Contains(s, got) {
		s = append(slices.Clone(s), got)
	}
	return s
}

// b2f returns 1 for true and 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
