package capacity

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// uslPoints are X(N) of a known law at ns, each times (1 + noise·z).
func uslPoints(lambda, sigma, kappa float64, ns []float64, noise float64, seed uint64) []point {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []point
	for _, n := range ns {
		out = append(out, point{Concurrency: n, Throughput: uslX(lambda, sigma, kappa, n) * (1 + noise*r.NormFloat64())})
	}
	return out
}

// TestFitUSLRecovers: the fit recovers σ and κ of synthetic curves, and
// the bootstrap interval of the peak covers the true peak.
func TestFitUSLRecovers(t *testing.T) {
	t.Parallel()
	ns := []float64{1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128}
	for _, tc := range []struct {
		name                 string
		lambda, sigma, kappa float64
		noise                float64
		tolSigma, tolKappa   float64
	}{
		{"exact", 100, 0.02, 0.0005, 0, 1e-6, 1e-8},
		{"exact, contention only", 250, 0.1, 0, 0, 1e-6, 1e-8},
		{"exact, coherency only", 50, 0, 0.001, 0, 1e-6, 1e-8},
		{"1 % noise", 100, 0.02, 0.0005, 0.01, 0.01, 0.0001},
		{"3 % noise", 1000, 0.05, 0.0002, 0.03, 0.03, 0.0002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, err := FitUSL(uslPoints(tc.lambda, tc.sigma, tc.kappa, ns, tc.noise, 7), 300, 1, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(u.Sigma-tc.sigma) > tc.tolSigma || math.Abs(u.Kappa-tc.kappa) > tc.tolKappa {
				t.Errorf("σ = %.6g, κ = %.6g; want %v ± %v, %v ± %v", u.Sigma, u.Kappa, tc.sigma, tc.tolSigma, tc.kappa, tc.tolKappa)
			}
			if u.Sigma < 0 || u.Kappa < 0 {
				t.Errorf("negative σ %v or κ %v", u.Sigma, u.Kappa)
			}
			n, x, ok := peak(tc.lambda, tc.sigma, tc.kappa)
			if !ok {
				return
			}
			if math.IsInf(n, 1) {
				// The curve only nears its ceiling λ/σ as N grows: exact
				// data leave no interval below it, so no measured
				// concurrency reaches it.
				if u.PeakStatus != PeakUnbounded || u.PeakReason == nil || !strings.Contains(*u.PeakReason, "only as concurrency grows") {
					t.Errorf("ceiling approached, never reached: status %s, reason %v; want unbounded, only as concurrency grows", u.PeakStatus, fmtReason(u.PeakReason))
				}
				return
			}
			if u.PeakConcurrency == nil || u.PeakConcurrencyLow == nil || u.PeakConcurrencyHigh == nil || u.PeakLowRPS == nil || u.PeakHighRPS == nil {
				t.Fatalf("no peak or interval: %+v", u)
			}
			slack := 1e-6 * n
			if *u.PeakConcurrencyLow > n+slack || *u.PeakConcurrencyHigh < n-slack {
				t.Errorf("N* interval [%v, %v] misses the true %v", *u.PeakConcurrencyLow, *u.PeakConcurrencyHigh, n)
			}
			if *u.PeakLowRPS > x*(1+1e-6) || *u.PeakHighRPS < x*(1-1e-6) {
				t.Errorf("X(N*) interval [%v, %v] misses the true %v", *u.PeakLowRPS, *u.PeakHighRPS, x)
			}
		})
	}
}

// TestFitUSLConstrained: data that would want negative σ or κ get them
// at 0, and a linear curve has no peak.
func TestFitUSLConstrained(t *testing.T) {
	t.Parallel()
	var super, linear []point
	for _, n := range []float64{1, 2, 4, 8, 16, 32} {
		super = append(super, point{Concurrency: n, Throughput: 10 * math.Pow(n, 1.1)}) // superlinear: σ < 0 unconstrained
		linear = append(linear, point{Concurrency: n, Throughput: 10 * n})
	}
	u, err := FitUSL(super, 50, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if u.Sigma != 0 && u.Sigma > 1e-9 || u.Kappa < 0 {
		t.Errorf("superlinear: σ = %v, κ = %v; want σ = 0, κ ≥ 0", u.Sigma, u.Kappa)
	}
	u, err = FitUSL(linear, 50, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if u.Sigma > 1e-9 || u.Kappa > 1e-12 || math.Abs(u.Lambda-10) > 1e-6 {
		t.Errorf("linear: λ = %v, σ = %v, κ = %v; want 10, 0, 0", u.Lambda, u.Sigma, u.Kappa)
	}
	if u.PeakConcurrency != nil && *u.PeakConcurrency < 1000 {
		t.Errorf("linear: peak at %v", *u.PeakConcurrency)
	}
	if _, err := FitUSL(linear[:3], 10, 1, 0); err == nil {
		t.Error("3 points: no error")
	}
}

// TestFitUSLPeakStatus: a peak is given only where the points bound it,
// and flagged where its whole interval lies above what was measured.
func TestFitUSLPeakStatus(t *testing.T) {
	t.Parallel()
	upTo := func(top float64) []float64 { // 8 concurrencies up to top
		var ns []float64
		for i := 1; i <= 8; i++ {
			ns = append(ns, top*float64(i)/8)
		}
		return ns
	}
	// σ = 0.02, κ = 0.0005: N* = 44.3, X(N*) = 1571 for λ = 100.
	const lambda, sigma, kappa = 100, 0.02, 0.0005
	nStar, xStar, _ := peak(lambda, sigma, kappa)
	saturated := uslPoints(lambda, sigma, kappa, upTo(2*nStar), 0.01, 3)
	// A pool of 10 workers of 20 ms: X = 50N up to N = 10, then 500/s
	// with a queue that grew through the step (behind).
	var pool []point
	for _, n := range []float64{2, 4, 8, 9.5, 9.9} {
		pool = append(pool, point{Concurrency: n, Throughput: 50 * n})
	}
	for _, n := range []float64{75, 240, 1060} {
		pool = append(pool, point{Concurrency: n, Throughput: 500, Behind: true})
	}
	var linear []point
	for _, n := range upTo(40) {
		linear = append(linear, point{Concurrency: n, Throughput: 20 * n})
	}
	for _, tc := range []struct {
		name   string
		pts    []point
		status string
		reason string // in PeakReason
		peak   [2]float64
	}{
		{"past the peak", saturated, PeakWithinData, "", [2]float64{0.95 * xStar, 1.05 * xStar}},
		{"a pool driven past its capacity", pool, PeakWithinData, "", [2]float64{450, 550}},
		{"up to 0.7 N*: bounded, above what was measured", uslPoints(lambda, sigma, kappa, upTo(0.7*nStar), 0.002, 3), PeakAboveMeasured, "not headroom", [2]float64{0.95 * xStar, 1.05 * xStar}},
		{"up to N*/8: far short of the peak", uslPoints(lambda, sigma, kappa, upTo(nStar/8), 0.01, 3), PeakUnbounded, "", [2]float64{}},
		{"linear", linear, PeakUnbounded, "still rises in proportion", [2]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, err := FitUSL(tc.pts, 400, 1, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			reason := ""
			if u.PeakReason != nil {
				reason = *u.PeakReason
			}
			t.Logf("λ %.4g σ %.4g κ %.4g, peak %s [%s, %s] at %s: %s %s", u.Lambda, u.Sigma, u.Kappa, fig(u.PeakRPS), fig(u.PeakLowRPS), fig(u.PeakHighRPS), fig(u.PeakConcurrency), u.PeakStatus, reason)
			if u.PeakStatus != tc.status || !strings.Contains(reason, tc.reason) || (tc.status == PeakWithinData) != (u.PeakReason == nil) {
				t.Fatalf("status %s, reason %q; want %s, %q", u.PeakStatus, reason, tc.status, tc.reason)
			}
			if tc.status == PeakUnbounded {
				if u.PeakRPS != nil || u.PeakLowRPS != nil || u.PeakHighRPS != nil || u.PeakConcurrency != nil {
					t.Errorf("unbounded, yet a peak %s [%s, %s] at %s", fig(u.PeakRPS), fig(u.PeakLowRPS), fig(u.PeakHighRPS), fig(u.PeakConcurrency))
				}
				return
			}
			if u.PeakRPS == nil || u.PeakLowRPS == nil || u.PeakHighRPS == nil {
				t.Fatalf("no peak or interval: %+v", u)
			}
			if p := *u.PeakRPS; p < tc.peak[0] || p > tc.peak[1] {
				t.Errorf("peak %.1f, want in [%.1f, %.1f]", p, tc.peak[0], tc.peak[1])
			}
			if above := *u.PeakLowRPS > u.MaxThroughputRPS; above != (tc.status == PeakAboveMeasured) {
				t.Errorf("interval low %.1f against %.1f measured: above %v, yet status %s", *u.PeakLowRPS, u.MaxThroughputRPS, above, u.PeakStatus)
			}
		})
	}
}

// fig is an optional figure for a log line.
func fig(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64)
}

// fmtReason is an optional reason for a message.
func fmtReason(r *string) string {
	if r == nil {
		return "none"
	}
	return *r
}
