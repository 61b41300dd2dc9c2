package report

import (
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/capacity"
)

// CapacityMetrics is what a capacity run on surface tells a dashboard:
// its verdict, as a state set of capacity's verdicts, and on the surface,
// labelled with the objective, the knee with its interval and the
// objective's quantile measured at the knee (none of them when no rate
// passed; no high end when none failed).
func CapacityMetrics(info archive.RunInfo, surface string, res capacity.Result) Metrics {
	m := runMetrics(info)
	m.Verdict = string(res.Verdict)
	for _, v := range capacity.Verdicts {
		m.States = append(m.States, string(v))
	}
	s := SurfaceMetrics{Surface: surface, Verdict: m.Verdict, Objective: res.Objective()}
	if res.KneeRPS != nil {
		k := &Knee{RPS: *res.KneeRPS, Low: orNaN(res.KneeLowRPS), High: orNaN(res.KneeHighRPS)}
		if st := kneeStep(res); st != nil {
			k.Latency = float64(st.QuantileMS) / 1e3
		}
		s.Knee = k
	}
	m.Surfaces = []SurfaceMetrics{s}
	return m
}

// kneeStep is the last step that passed at the knee's rate (its
// re-measurement, when the search made one), or nil.
func kneeStep(res capacity.Result) *capacity.StepResult {
	for i := len(res.Steps) - 1; i >= 0; i-- {
		if st := &res.Steps[i]; st.Passed() && st.OfferedRPS == *res.KneeRPS {
			return st
		}
	}
	return nil
}
