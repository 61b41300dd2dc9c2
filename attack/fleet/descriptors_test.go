package fleet

import (
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
)

// TestDescriptorEstimates: the estimates grow with what a fleet opens, and
// the embedded target doubles them.
func TestDescriptorEstimates(t *testing.T) {
	f := Fleet{Clients: 5000, Window: 2 * time.Second}
	if f.Descriptors(true) < 2*f.Descriptors(false)-attack.DescriptorMargin-4 {
		t.Errorf("the embedded target does not double the estimate: %d, %d", f.Descriptors(true), f.Descriptors(false))
	}
	if got := (&Programs{Clients: 100}).Descriptors(true); got != 400+attack.DescriptorMargin {
		t.Errorf("100 client programs: %d descriptors", got)
	}
	if a, b := (Fleet{Clients: 1000}).Descriptors(true), (Fleet{Clients: 10000}).Descriptors(true); a < 2000 || b < 20000 {
		t.Errorf("fleets of 1000 and 10000 embedded: %d and %d descriptors", a, b)
	}
}
