package capacity

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// point is one step's throughput at its concurrency, a point of the
// curve the Universal Scalability Law is fitted to.
type point struct {
	// Concurrency is the mean number of requests in flight (Little's law).
	Concurrency float64
	// Throughput is the rate of successful responses per second.
	Throughput float64
}

// USL is Gunther's Universal Scalability Law fitted to throughput
// against concurrency: X(N) = λN / (1 + σ(N−1) + κN(N−1)), with
// contention σ ≥ 0 and coherency κ ≥ 0. It is a model of the curve,
// never the measured knee. The peak is N* = √((1−σ)/κ) with X(N*), with
// bootstrap intervals; nil (JSON null) when the model has no peak (κ = 0
// or σ ≥ 1) or the bound is unbounded.
type USL struct {
	// Lambda is λ, the throughput of one request in flight, per second.
	Lambda float64 `json:"lambda"`
	// Sigma is σ, contention (serialization), at least 0.
	Sigma float64 `json:"sigma"`
	// Kappa is κ, coherency (crosstalk), at least 0.
	Kappa float64 `json:"kappa"`
	// Points is how many steps the model was fitted to.
	Points int `json:"points"`
	// Resamples is how many bootstrap resamples the intervals rest on.
	Resamples int `json:"resamples"`
	// PeakConcurrency is N*, where the model's throughput peaks.
	PeakConcurrency *float64 `json:"peak_concurrency"`
	// PeakConcurrencyLow is the lower bound of N*'s interval.
	PeakConcurrencyLow *float64 `json:"peak_concurrency_low"`
	// PeakConcurrencyHigh is the upper bound of N*'s interval.
	PeakConcurrencyHigh *float64 `json:"peak_concurrency_high"`
	// PeakRPS is X(N*), the model's highest throughput.
	PeakRPS *float64 `json:"peak_rps"`
	// PeakLowRPS is the lower bound of X(N*)'s interval.
	PeakLowRPS *float64 `json:"peak_low_rps"`
	// PeakHighRPS is the upper bound of X(N*)'s interval.
	PeakHighRPS *float64 `json:"peak_high_rps"`
}

// Throughput returns the model's throughput X(n).
func (u *USL) Throughput(n float64) float64 { return uslX(u.Lambda, u.Sigma, u.Kappa, n) }

// uslX is X(n) = λn / (1 + σ(n−1) + κn(n−1)).
func uslX(lambda, sigma, kappa, n float64) float64 {
	return lambda * n / (1 + sigma*(n-1) + kappa*n*(n-1))
}

// peak returns N* and X(N*), or false when the model has no peak.
func peak(lambda, sigma, kappa float64) (n, x float64, ok bool) {
	if kappa <= 0 || sigma >= 1 {
		return 0, 0, false
	}
	n = math.Sqrt((1 - sigma) / kappa)
	return n, uslX(lambda, sigma, kappa, n), true
}

// errFewPoints is FitUSL's error with too few points.
var errFewPoints = errors.New("the USL needs at least 4 points of positive concurrency and throughput")

// FitUSL fits the USL to points by least squares of relative residuals,
// with σ, κ ≥ 0 (σ = u², κ = (v/max N)², minimized by Nelder–Mead from
// the constrained linear fit of N/X, λ solved in closed form), and
// bootstraps the peak from resamples resamples of the relative residuals
// (seeded by seed; confidence 0 means defaultConfidence). It needs at
// least 4 points of positive concurrency and throughput.
func FitUSL(points []point, resamples int, seed uint64, confidence float64) (*USL, error) {
	var ns, xs []float64
	for _, p := range points {
		if p.Concurrency > 0 && p.Throughput > 0 {
			ns, xs = append(ns, p.Concurrency), append(xs, p.Throughput)
		}
	}
	if len(ns) < 4 {
		return nil, errFewPoints
	}
	if confidence == 0 {
		confidence = defaultConfidence
	}
	lambda, sigma, kappa := fitUSL(ns, xs, linearStart(ns, xs), true)
	u := &USL{Lambda: lambda, Sigma: sigma, Kappa: kappa, Points: len(ns), Resamples: resamples}
	if n, x, ok := peak(lambda, sigma, kappa); ok {
		u.PeakConcurrency, u.PeakRPS = &n, &x
	}
	if resamples > 0 {
		u.bootstrap(ns, xs, resamples, seed, confidence)
	}
	return u, nil
}

// bootstrap sets the peak's intervals from resamples of the relative
// residuals around the fit.
func (u *USL) bootstrap(ns, xs []float64, resamples int, seed uint64, confidence float64) {
	rnd := rand.New(rand.NewPCG(seed, 0x75736c))
	ratio := make([]float64, len(ns))
	for i := range ns {
		ratio[i] = xs[i] / u.Throughput(ns[i])
	}
	starN, starX := make([]float64, 0, resamples), make([]float64, 0, resamples)
	ys := make([]float64, len(ns))
	for range resamples {
		for i := range ns {
			ys[i] = u.Throughput(ns[i]) * ratio[rnd.IntN(len(ratio))]
		}
		l, s, k := fitUSL(ns, ys, [2]float64{u.Sigma, u.Kappa}, false)
		n, x, ok := peak(l, s, k)
		if !ok {
			n, x = math.Inf(1), math.Inf(1)
		}
		starN, starX = append(starN, n), append(starX, x)
	}
	tail := (1 - confidence) / 2
	u.PeakConcurrencyLow, u.PeakConcurrencyHigh = percentiles(starN, tail)
	u.PeakLowRPS, u.PeakHighRPS = percentiles(starX, tail)
}

// percentiles returns the tail and 1−tail percentiles of v (sorted in
// place), nil for an infinite one.
func percentiles(v []float64, tail float64) (low, high *float64) {
	slices.Sort(v)
	at := func(p float64) *float64 {
		x := v[min(len(v)-1, max(0, int(math.Floor(p*float64(len(v))))))]
		if math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return at(tail), at(1 - tail)
}

// fitUSL minimizes the relative squared residuals over σ, κ ≥ 0 from
// start (σ, κ), and from a second start as well when twice, λ solved for
// each.
func fitUSL(ns, xs []float64, start [2]float64, twice bool) (lambda, sigma, kappa float64) {
	scale := slices.Max(ns)
	toParams := func(p []float64) (float64, float64) { return p[0] * p[0], (p[1] / scale) * (p[1] / scale) }
	cost := func(p []float64) float64 {
		s, k := toParams(p)
		_, sse := bestLambda(ns, xs, s, k)
		return sse
	}
	best := []float64{math.Sqrt(max(start[0], 0)), math.Sqrt(max(start[1], 0)) * scale}
	bestCost := cost(best)
	starts := [][]float64{slices.Clone(best)}
	if twice {
		starts = append(starts, []float64{0.1, 0.1})
	}
	for _, x0 := range starts {
		res, err := optimize.Minimize(optimize.Problem{Func: cost}, x0, nil, &optimize.NelderMead{SimplexSize: 0.1})
		if err == nil && res.F < bestCost {
			best, bestCost = res.X, res.F
		}
	}
	sigma, kappa = toParams(best)
	// What the optimizer leaves of a term that is not there is rounding:
	// below a billionth of the model at the largest concurrency, it is 0.
	if sigma*scale < 1e-9 {
		sigma = 0
	}
	if kappa*scale*scale < 1e-9 {
		kappa = 0
	}
	lambda, _ = bestLambda(ns, xs, sigma, kappa)
	return lambda, sigma, kappa
}

// bestLambda returns the λ minimizing Σ(1 − λg_i/x_i)², g_i = X(n_i) at
// λ = 1, and that minimum.
func bestLambda(ns, xs []float64, sigma, kappa float64) (lambda, sse float64) {
	var sr, srr float64
	for i, n := range ns {
		r := uslX(1, sigma, kappa, n) / xs[i]
		sr += r
		srr += r * r
	}
	lambda = sr / srr
	for i, n := range ns {
		d := 1 - lambda*uslX(1, sigma, kappa, n)/xs[i]
		sse += d * d
	}
	return lambda, sse
}

// linearStart is the start of the fit: N/X = a + b(N−1) + cN(N−1) is
// linear in (a, b, c) = (1/λ, σ/λ, κ/λ); of its least-squares fits with b,
// c free or held at 0, the best with b, c ≥ 0 and a > 0 gives (σ, κ).
func linearStart(ns, xs []float64) [2]float64 {
	bestSSE, best := math.Inf(1), [2]float64{}
	for _, free := range [][2]bool{{true, true}, {true, false}, {false, true}, {false, false}} {
		cols := []func(n float64) float64{func(float64) float64 { return 1 }}
		if free[0] {
			cols = append(cols, func(n float64) float64 { return n - 1 })
		}
		if free[1] {
			cols = append(cols, func(n float64) float64 { return n * (n - 1) })
		}
		a := mat.NewDense(len(ns), len(cols), nil)
		y := mat.NewVecDense(len(ns), nil)
		for i, n := range ns {
			for j, f := range cols {
				a.Set(i, j, f(n))
			}
			y.SetVec(i, n/xs[i])
		}
		var coef mat.VecDense
		if err := coef.SolveVec(a, y); err != nil {
			continue
		}
		c := []float64{coef.AtVec(0), 0, 0}
		for j, k := 1, 1; k < 3; k++ {
			if free[k-1] {
				c[k] = coef.AtVec(j)
				j++
			}
		}
		if c[0] <= 0 || c[1] < 0 || c[2] < 0 {
			continue
		}
		var res mat.VecDense
		res.MulVec(a, &coef)
		res.SubVec(&res, y)
		if sse := mat.Dot(&res, &res); sse < bestSSE {
			bestSSE, best = sse, [2]float64{c[1] / c[0], c[2] / c[0]}
		}
	}
	return best
}
