package capacity

import (
	"math"
	"math/rand/v2"
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
		super = append(super, point{n, 10 * math.Pow(n, 1.1)}) // superlinear: σ < 0 unconstrained
		linear = append(linear, point{n, 10 * n})
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
