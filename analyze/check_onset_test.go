package analyze

import (
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/method"
)

// TestLateRefusalsWeighASharedBudget: requests of the limit address sent
// a window or more into the run, refused with fewer than L of its own in
// their window, fail the onset whatever came before the run. Their cause
// is a limit below L, or one budget for every address, which other
// addresses' requests fill: that is named too unless the run proved
// budgets apart (isolation: another address admitted while the limit
// address was provably over its limit) or the others sent too few to fill
// what the address's own left of the window.
func TestLateRefusalsWeighASharedBudget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name         string
		othersSent   int
		proven       int
		wantBoth     bool
		lateOwn, adm int
	}{
		{"others could fill the window, budgets not proved apart", 240, 0, true, 150, 200},
		{"budgets proved apart", 240, 12, false, 150, 200},
		{"others too few to fill it", 80, 0, false, 150, 200},
		{"just enough", 90, 0, true, 150, 200},
		{"nothing admitted, no other address", 0, 0, false, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			primary := &groupRun{source: srcA, n: 500, answered: 500, refusals: 500 - tt.adm}
			s := &surfaceRun{name: method.REST, primary: primary, groups: map[string]*groupRun{srcA: primary}}
			if tt.othersSent > 0 {
				s.groups[srcB] = &groupRun{source: srcB, n: tt.othersSent}
			}
			s.checks = []surfaceCheck{{Check: method.Check{Name: method.CheckIsolation}, run: &isolationCheck{proven: tt.proven}}}
			e := &evidence{surfaceRun: s, primary: srcA}
			e.L = 240
			c := onsetCheck{lateFalse: 3, late: "+1.2s refused with at most 149 others in its window", lateOwn: tt.lateOwn}
			v, d, ok := c.judgeSpent(e)
			if !ok || v != Fail || !strings.Contains(d, "the limit is not honoured") {
				t.Fatalf("%v %s: %s; want a failure, the limit not honoured", ok, v, d)
			}
			if both := strings.Contains(d, "one budget shared with other addresses"); both != tt.wantBoth {
				t.Errorf("names a shared budget: %v, want %v: %s", both, tt.wantBoth, d)
			}
		})
	}
}
