package analyze

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/refserver"
)

// randomReplicasSim is replicas behind a balancer whose assignment the
// client cannot predict (other clients' requests interleave with its
// own): each request goes to a replica drawn at random.
type randomReplicasSim struct {
	each []limiter
	rng  *rand.Rand
}

func (r *randomReplicasSim) allow(key string, t int64) bool {
	return r.each[r.rng.IntN(len(r.each))].allow(key, t)
}

// TestReplicasAdmitP: the replicas' admission probability is the binomial
// CDF, P(Binomial(n, 1/k) ≤ L − 1), checked against a direct sum.
func TestReplicasAdmitP(t *testing.T) {
	for _, k := range []int{2, 3, 4} {
		r := newReplicas(k, 20)
		for _, n := range []int{0, 19, 20, 25, 40, 60, 80, 200, 30, 21} { // out of order: the table grows and is reread
			want := 0.0
			p := 1 / float64(k)
			for m := 0; m <= 19 && m <= n; m++ {
				lc, _ := math.Lgamma(float64(n + 1))
				la, _ := math.Lgamma(float64(m + 1))
				lb, _ := math.Lgamma(float64(n - m + 1))
				want += math.Exp(lc - la - lb + float64(m)*math.Log(p) + float64(n-m)*math.Log1p(-p))
			}
			if got := r.admitP(n); math.Abs(got-want) > 1e-9 {
				t.Errorf("k %d, n %d: %g, want %g", k, n, got, want)
			}
		}
	}
}

// TestReplicasNamed: two correct sliding logs behind a balancer that
// assigns each request at random are named replicas (k = 2) in most seeds;
// in the others one sliding log of 2L, when the draw happened to leave no
// mixed admissions and refusals that tell them apart; never another
// family. rejected-count never fails (each replica counts refusals).
// Expectation from the construction: about 2L are admitted before
// refusals begin, then admissions and refusals mix.
func TestReplicasNamed(t *testing.T) {
	named, runs := 0, 0
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 21))
		log := func(limit int) limiter { return newLimiter(refserver.Rolling, limit, synthW) }
		srv := server{&randomReplicasSim{[]limiter{log(240), log(240)}, rng}, &randomReplicasSim{[]limiter{log(120), log(120)}, rng}, perAddress}
		rep := judge(simulate(srv, quiet))
		for i, s := range rep.Verdict.Surfaces {
			runs++
			if s.ModelReplicas == 2 {
				named++
			}
			if b := rep.Surfaces[i].Fit.Best; s.Model != familySlidingLog || s.ModelReplicas != 2 && b.Limit < 2*s.ExpectedLimit-10 {
				t.Errorf("seed %d, %s: model %s ×%d, want sliding-log ×2; fit %v of %v", seed, s.Surface, s.Model, s.ModelReplicas, rep.Surfaces[i].Fit.Best, rep.Surfaces[i].Fit.Candidates[7:])
			}
			for _, c := range s.Checks {
				if c.Name == "rejected-count" && (c.Verdict == Fail || strings.Contains(c.Detail, "do not count")) {
					t.Errorf("seed %d, %s: rejected-count %s: %s", seed, s.Surface, c.Verdict, c.Detail)
				}
			}
		}
	}
	if 4*named < 3*runs {
		t.Errorf("replicas named in %d of %d surfaces, want three quarters at least", named, runs)
	}
}
