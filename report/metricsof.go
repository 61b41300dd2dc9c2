package report

import (
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/analyze/jitter"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/history"
)

// runMetrics is the part of Metrics every run has: its kind, label,
// target and start, as run.json recorded them.
func runMetrics(info archive.RunInfo) Metrics {
	target := info.Target
	if info.Embedded {
		target = history.Embedded
	}
	return Metrics{Kind: info.Command, Label: info.Label, Target: target, Start: info.Start}
}

// VerdictMetrics is what a run of verify or attack, analyzed into rep,
// tells a dashboard: per surface its limits, latency and error ratio,
// and for verify (withVerdict) the verdicts of the run, its surfaces and
// their checks (an attack has no verdict of its own).
func VerdictMetrics(info archive.RunInfo, rep *analyze.Report, withVerdict bool) Metrics {
	m := runMetrics(info)
	if withVerdict {
		m.Verdict = rep.Verdict.Verdict
	}
	for i, sv := range rep.Verdict.Surfaces {
		d := rep.Surfaces[i]
		s := SurfaceMetrics{Surface: sv.Surface, ExpectedLimit: f64p(float64(sv.ExpectedLimit))}
		if withVerdict {
			s.Verdict = sv.Verdict
			for _, c := range sv.Checks {
				s.Checks = append(s.Checks, CheckVerdict{Name: c.Name, Verdict: c.Verdict})
			}
		}
		if sv.ObservedLimit != nil {
			s.ObservedLimit = f64p(float64(*sv.ObservedLimit))
		}
		if d.Requests > 0 {
			s.ErrorRatio = f64p(float64(d.Faults) / float64(d.Requests))
		}
		if l := d.Latency; l != nil && l.Count > 0 {
			s.Latency = &Latency{Count: uint64(l.Count), Sum: l.Time.Cumulative.Seconds(),
				Quantiles: map[float64]float64{0.5: l.Time.P50.Seconds(), 0.95: l.Time.P95.Seconds(), 0.99: l.Time.P99.Seconds()}}
		}
		m.Surfaces = append(m.Surfaces, s)
	}
	return m
}

// FleetMetrics is what a fleet run judged into rep tells a dashboard: its
// verdict and those of its checks, on the fleet's surface.
func FleetMetrics(info archive.RunInfo, rep *jitter.Report) Metrics {
	m := runMetrics(info)
	m.Verdict = rep.Verdict
	surface := "rest"
	if info.Fleet != nil {
		surface = info.Fleet.Surface
	}
	s := SurfaceMetrics{Surface: surface, Verdict: rep.Verdict}
	for _, c := range rep.Checks {
		s.Checks = append(s.Checks, CheckVerdict{Name: c.Name, Verdict: c.Verdict})
	}
	m.Surfaces = []SurfaceMetrics{s}
	return m
}

// HistoryMetrics is what a history tells a dashboard: per key of its
// series (kind, target and label scheme; the label is the newest run's),
// when the newest run began and, per surface (and objective, of capacity
// runs), whether each figure's series lies after a change for the worse
// (ratecheck_regression), and the newest run's knee with its interval.
func HistoryMetrics(out history.Output) []Metrics {
	var ms []Metrics
	for _, k := range historyKeys(out) {
		newest := history.PointOut{}
		var regs []Regression
		var knee *Knee
		for _, si := range k.series {
			s := out.Series[si]
			p := s.Points[len(s.Points)-1]
			if p.Start.After(newest.Start) || newest.Run == "" {
				newest = p
			}
			regs = append(regs, Regression{Figure: string(s.Figure), Worse: s.Regression})
			if s.Figure == history.Knee {
				knee = &Knee{RPS: p.Value, Low: orNaN(p.Low), High: orNaN(p.High)}
			}
		}
		// Grouped by contract, the series' target is its newest run's.
		target := cmpOr(k.Target, newest.Target)
		i := slices.IndexFunc(ms, func(m Metrics) bool { return m.Kind == k.Kind && m.Target == target && m.Label == newest.Label })
		if i < 0 {
			ms = append(ms, Metrics{Kind: k.Kind, Target: target, Label: newest.Label})
			i = len(ms) - 1
		}
		if newest.Start.After(ms[i].Start) {
			ms[i].Start = newest.Start
		}
		ms[i].Surfaces = append(ms[i].Surfaces, SurfaceMetrics{Surface: k.Surface, Objective: k.Objective, Regressions: regs, Knee: knee})
	}
	return ms
}

// orNaN is *v, or NaN for nil.
func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// WriteMetricsSetFile writes the metrics of several runs or keys to the
// file at path, as WriteMetricsFile does one: the metrics must differ in
// kind, label or target (the registry refuses a series written twice).
func WriteMetricsSetFile(path string, ms []Metrics) error {
	return prometheus.WriteToTextfile(path, gatherer(ms...))
}

// f64p is a pointer to v.
func f64p(v float64) *float64 { return &v }
