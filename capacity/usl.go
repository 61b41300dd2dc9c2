package capacity

import (
	"errors"
	"fmt"
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
	// Behind reports whether the API fell behind in the step (its queue
	// grew through it): the step then says only that the API's best at
	// or below Concurrency is Throughput. See [FitUSL].
	Behind bool
}

// The states of a USL peak.
const (
	// PeakWithinData: the steps bound the peak and its interval reaches
	// down to the highest throughput measured.
	PeakWithinData = "within-data"
	// PeakAboveMeasured: the steps bound the peak, but its whole interval
	// lies above the highest throughput measured: the model extrapolates
	// past what the run saw, which is never headroom.
	PeakAboveMeasured = "above-measured"
	// PeakUnbounded: the steps do not bound the peak; the peak's figures
	// are nil and PeakReason says why.
	PeakUnbounded = "unbounded"
)

// reachFactor is how far beyond the highest concurrency measured the
// model may reach its peak for the steps to bound it: a peak the model
// reaches only at more than twice any concurrency measured is an
// extrapolation by as much again as the run covered.
const reachFactor = 2

// USL is Gunther's Universal Scalability Law fitted to throughput
// against concurrency: X(N) = λN / (1 + σ(N−1) + κN(N−1)), with
// contention σ ≥ 0 and coherency κ ≥ 0. It is a model of the curve,
// never the measured knee. Its peak is its highest throughput: X(N*) at
// N* = √((1−σ)/κ) when κ > 0, the ceiling λ/σ it approaches as N grows
// when κ = 0 (N* is then nil), with bootstrap intervals. The peak's
// figures are nil (JSON null) when the steps do not bound it
// (PeakStatus PeakUnbounded, PeakReason says why).
type USL struct {
	// Lambda is λ, the throughput of one request in flight, per second.
	Lambda float64 `json:"lambda"`
	// Sigma is σ, contention (serialization), at least 0.
	Sigma float64 `json:"sigma"`
	// Kappa is κ, coherency (crosstalk), at least 0.
	Kappa float64 `json:"kappa"`
	// Points is how many steps the model was fitted to.
	Points int `json:"points"`
	// BehindPoints is how many of them the API fell behind in: each says
	// only that the API's best at or below its concurrency is its
	// throughput (the model's peak when the step's concurrency is past
	// the model's N*).
	BehindPoints int `json:"behind_points"`
	// ExcludedSteps is how many steps of the search were not fitted:
	// steps the generator could not send on schedule, steps a 429
	// answered (in part), and steps without throughput.
	ExcludedSteps int `json:"excluded_steps"`
	// MaxThroughputRPS is the highest throughput of the fitted steps.
	MaxThroughputRPS float64 `json:"max_throughput_rps"`
	// MaxConcurrency is the highest concurrency of the fitted steps.
	MaxConcurrency float64 `json:"max_concurrency"`
	// Resamples is how many bootstrap resamples the intervals rest on.
	Resamples int `json:"resamples"`
	// PeakStatus is PeakWithinData, PeakAboveMeasured or PeakUnbounded.
	PeakStatus string `json:"peak_status"`
	// PeakReason says why the peak is unbounded or above what was
	// measured; nil when it is within the data.
	PeakReason *string `json:"peak_reason"`
	// PeakConcurrency is N*, where the model's throughput peaks; nil
	// when the model only approaches its peak as concurrency grows, or
	// the peak is unbounded.
	PeakConcurrency *float64 `json:"peak_concurrency"`
	// PeakConcurrencyLow is the lower bound of N*'s interval.
	PeakConcurrencyLow *float64 `json:"peak_concurrency_low"`
	// PeakConcurrencyHigh is the upper bound of N*'s interval.
	PeakConcurrencyHigh *float64 `json:"peak_concurrency_high"`
	// PeakRPS is the model's highest throughput, X(N*) or λ/σ.
	PeakRPS *float64 `json:"peak_rps"`
	// PeakLowRPS is the lower bound of the peak's interval.
	PeakLowRPS *float64 `json:"peak_low_rps"`
	// PeakHighRPS is the upper bound of the peak's interval.
	PeakHighRPS *float64 `json:"peak_high_rps"`
}

// Throughput returns the model's throughput X(n).
func (u *USL) Throughput(n float64) float64 { return uslX(u.Lambda, u.Sigma, u.Kappa, n) }

// uslX is X(n) = λn / (1 + σ(n−1) + κn(n−1)).
func uslX(lambda, sigma, kappa, n float64) float64 {
	return lambda * n / (1 + sigma*(n-1) + kappa*n*(n-1))
}

// peak returns where the model's throughput is highest for n ≥ 1 and
// that throughput: N* and X(N*) when κ > 0, +Inf and λ/σ when only σ
// bends the curve, 1 and λ when σ ≥ 1 (the curve never rises), and false
// for a straight line (σ = κ = 0), which has no peak.
func peak(lambda, sigma, kappa float64) (n, x float64, ok bool) {
	switch {
	case sigma >= 1:
		return 1, lambda, true
	case kappa > 0:
		n = max(1, math.Sqrt((1-sigma)/kappa))
		return n, uslX(lambda, sigma, kappa, n), true
	case sigma > 0:
		return math.Inf(1), lambda / sigma, true
	}
	return math.Inf(1), math.Inf(1), false
}

// best is the model's highest throughput at or below concurrency n: X(n)
// up to the peak, the peak past it.
func best(lambda, sigma, kappa, n float64) float64 {
	if p, _, ok := peak(lambda, sigma, kappa); ok && p < n {
		n = p
	}
	return uslX(lambda, sigma, kappa, n)
}

// reach returns the least concurrency at which the model's throughput
// reaches x (+Inf when it never does).
func reach(lambda, sigma, kappa, x float64) float64 {
	pn, px, ok := peak(lambda, sigma, kappa)
	switch {
	case ok && x >= px:
		return pn
	case sigma >= 1:
		return 1
	case kappa > 0:
		// κx·n² + (x(σ−κ) − λ)·n + x(1−σ) = 0, the smaller root
		a, b, c := x*kappa, x*(sigma-kappa)-lambda, x*(1-sigma)
		d := b*b - 4*a*c
		if d < 0 {
			return pn
		}
		return (-b - math.Sqrt(d)) / (2 * a)
	}
	if gap := lambda - x*sigma; gap > 1e-9*lambda { // x below the ceiling λ/σ by more than rounding
		return x * (1 - sigma) / gap
	}
	return math.Inf(1)
}

// errFewPoints is FitUSL's error with too few points.
var errFewPoints = errors.New("the USL needs at least 4 points of positive concurrency and throughput")

// FitUSL fits the USL to points by least squares of relative residuals,
// with σ, κ ≥ 0 (σ = u², κ = (v/max N)², minimized by Nelder–Mead from
// the constrained linear fit of N/X and from starts peaking at the
// measured concurrencies, λ solved in closed form), and bootstraps the
// peak from resamples resamples of the relative residuals (seeded by
// seed; confidence 0 means defaultConfidence). It needs at least 4
// points of positive concurrency and throughput.
//
// A point the API fell behind in is held to the model's best at or below
// its concurrency, not to X at it: its queue grew through the step, so
// its Little's-law concurrency is the step's length as much as the API's,
// and a longer step would have put the same throughput at a higher one.
// Such points are what place the peak; held to X(N) at their inflated
// concurrency they would have the curve keep rising and the peak
// overshoot.
//
// The peak is then judged against the data: unbounded when the model has
// no peak, when resamples fit curves without one (the interval is
// open-ended), or when the model peaks past reachFactor times the highest
// concurrency measured (for a ceiling only approached as concurrency
// grows: when it reaches the low end of the ceiling's interval only
// there); above-measured when its whole interval lies above the highest
// throughput measured.
func FitUSL(points []point, resamples int, seed uint64, confidence float64) (*USL, error) {
	var ns, xs []float64
	var behind []bool
	for _, p := range points {
		if p.Concurrency > 0 && p.Throughput > 0 {
			ns, xs, behind = append(ns, p.Concurrency), append(xs, p.Throughput), append(behind, p.Behind)
		}
	}
	if len(ns) < 4 {
		return nil, errFewPoints
	}
	if confidence == 0 {
		confidence = defaultConfidence
	}
	d := curve{ns: ns, xs: xs, behind: behind}
	lambda, sigma, kappa := d.fit(d.starts(), true)
	u := &USL{Lambda: lambda, Sigma: sigma, Kappa: kappa, Points: len(ns), Resamples: resamples,
		MaxThroughputRPS: slices.Max(xs), MaxConcurrency: slices.Max(ns)}
	for _, b := range behind {
		if b {
			u.BehindPoints++
		}
	}
	n, x, ok := peak(lambda, sigma, kappa)
	if ok {
		u.PeakRPS = &x
		if !math.IsInf(n, 0) {
			u.PeakConcurrency = &n
		}
	}
	open := 0
	if resamples > 0 {
		open = u.bootstrap(d, resamples, seed, confidence)
	}
	u.judge(ok, open)
	return u, nil
}

// judge sets the peak's status and reason; ok reports whether the model
// has a peak, open how many resamples had none.
func (u *USL) judge(ok bool, open int) {
	unbounded := func(why string) {
		u.PeakStatus, u.PeakReason = PeakUnbounded, &why
		u.PeakConcurrency, u.PeakConcurrencyLow, u.PeakConcurrencyHigh = nil, nil, nil
		u.PeakRPS, u.PeakLowRPS, u.PeakHighRPS = nil, nil, nil
	}
	if !ok {
		unbounded(fmt.Sprintf("the fitted curve still rises in proportion at the highest concurrency measured (%.1f): no step reached the API's limit", u.MaxConcurrency))
		return
	}
	if u.Resamples > 0 && u.PeakHighRPS == nil {
		unbounded(fmt.Sprintf("%d of %d resamples fit a curve with no peak: the interval is open-ended", open, u.Resamples))
		return
	}
	low := *u.PeakRPS
	if u.PeakLowRPS != nil {
		low = min(low, *u.PeakLowRPS)
	}
	if u.PeakConcurrency != nil && *u.PeakConcurrency > reachFactor*u.MaxConcurrency {
		unbounded(fmt.Sprintf("the model peaks at concurrency %.1f, past %d times the highest measured (%.1f): the steps do not reach it",
			*u.PeakConcurrency, reachFactor, u.MaxConcurrency))
		return
	}
	if at := reach(u.Lambda, u.Sigma, u.Kappa, low); u.PeakConcurrency == nil && at > reachFactor*u.MaxConcurrency {
		unbounded(fmt.Sprintf("the model nears its ceiling only as concurrency grows: it reaches %.1f/s, the low end of the ceiling's interval, at concurrency %s, past %d times the highest measured (%.1f)",
			low, concurrencyText(at), reachFactor, u.MaxConcurrency))
		return
	}
	if low > u.MaxThroughputRPS {
		why := fmt.Sprintf("the peak's whole interval lies above the highest throughput measured (%.1f/s): an extrapolation, not headroom", u.MaxThroughputRPS)
		u.PeakStatus, u.PeakReason = PeakAboveMeasured, &why
		return
	}
	u.PeakStatus = PeakWithinData
}

// concurrencyText is a concurrency as a sentence gives it.
func concurrencyText(n float64) string {
	if math.IsInf(n, 1) {
		return "without bound"
	}
	return fmt.Sprintf("%.1f", n)
}

// bootstrap sets the peak's intervals from resamples of the relative
// residuals around the fit, and returns how many resamples had no peak.
func (u *USL) bootstrap(d curve, resamples int, seed uint64, confidence float64) (open int) {
	rnd := rand.New(rand.NewPCG(seed, 0x75736c))
	fitted := make([]float64, len(d.ns))
	ratio := make([]float64, len(d.ns))
	for i := range d.ns {
		fitted[i] = d.model(u.Lambda, u.Sigma, u.Kappa, i)
		ratio[i] = d.xs[i] / fitted[i]
	}
	starN, starX := make([]float64, 0, resamples), make([]float64, 0, resamples)
	r := curve{ns: d.ns, xs: make([]float64, len(d.ns)), behind: d.behind}
	for range resamples {
		for i := range d.ns {
			r.xs[i] = fitted[i] * ratio[rnd.IntN(len(ratio))]
		}
		l, s, k := r.fit([][2]float64{{u.Sigma, u.Kappa}}, false)
		n, x, ok := peak(l, s, k)
		if !ok {
			open++
		}
		starN, starX = append(starN, n), append(starX, x)
	}
	tail := (1 - confidence) / 2
	u.PeakConcurrencyLow, u.PeakConcurrencyHigh = percentiles(starN, tail)
	u.PeakLowRPS, u.PeakHighRPS = percentiles(starX, tail)
	return open
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

// curve is the data a fit is held to: throughput xs at concurrency ns,
// and which points the API fell behind in.
type curve struct {
	ns, xs []float64
	behind []bool
}

// model is the model's figure for point i: X(n_i), or the best at or
// below n_i for a point the API fell behind in.
func (d curve) model(lambda, sigma, kappa float64, i int) float64 {
	if d.behind[i] {
		return best(lambda, sigma, kappa, d.ns[i])
	}
	return uslX(lambda, sigma, kappa, d.ns[i])
}

// starts are the (σ, κ) the full fit starts from: the constrained linear
// fit of N/X, a mild curve, and curves peaking at each concurrency
// measured in a step the API kept up with (a peak past the points that
// fell behind is a minimum the optimizer cannot leave by small moves).
func (d curve) starts() [][2]float64 {
	out := [][2]float64{linearStart(d.ns, d.xs), {0.01, 0.01 / (slices.Max(d.ns) * slices.Max(d.ns))}}
	for i, n := range d.ns {
		if !d.behind[i] && n > 1 {
			out = append(out, [2]float64{0.01, 0.99 / (n * n)})
		}
	}
	return out
}

// fit minimizes the relative squared residuals over σ, κ ≥ 0 from each
// start (σ, κ), and from a generic start as well when generic, λ solved
// for each.
func (d curve) fit(starts [][2]float64, generic bool) (lambda, sigma, kappa float64) {
	scale := slices.Max(d.ns)
	toParams := func(p []float64) (float64, float64) { return p[0] * p[0], (p[1] / scale) * (p[1] / scale) }
	cost := func(p []float64) float64 {
		s, k := toParams(p)
		_, sse := d.bestLambda(s, k)
		return sse
	}
	var x0s [][]float64
	for _, st := range starts {
		x0s = append(x0s, []float64{math.Sqrt(max(st[0], 0)), math.Sqrt(max(st[1], 0)) * scale})
	}
	if generic {
		x0s = append(x0s, []float64{0.1, 0.1})
	}
	at, atCost := x0s[0], math.Inf(1)
	for _, x0 := range x0s {
		if c := cost(x0); c < atCost {
			at, atCost = x0, c
		}
		res, err := optimize.Minimize(optimize.Problem{Func: cost}, x0, nil, &optimize.NelderMead{SimplexSize: 0.1})
		if err == nil && res.F < atCost {
			at, atCost = res.X, res.F
		}
	}
	sigma, kappa = toParams(at)
	// What the optimizer leaves of a term that is not there is rounding:
	// below a billionth of the model at the largest concurrency, it is 0.
	if sigma*scale < 1e-9 {
		sigma = 0
	}
	if kappa*scale*scale < 1e-9 {
		kappa = 0
	}
	lambda, _ = d.bestLambda(sigma, kappa)
	return lambda, sigma, kappa
}

// bestLambda returns the λ minimizing Σ(1 − λg_i/x_i)², g_i the model's
// figure for point i at λ = 1, and that minimum.
func (d curve) bestLambda(sigma, kappa float64) (lambda, sse float64) {
	var sr, srr float64
	for i := range d.ns {
		r := d.model(1, sigma, kappa, i) / d.xs[i]
		sr += r
		srr += r * r
	}
	lambda = sr / srr
	for i := range d.ns {
		e := 1 - lambda*d.model(1, sigma, kappa, i)/d.xs[i]
		sse += e * e
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
