package analyze

import (
	"testing"

	"github.com/connectbyjbrh/ratecheck/method"
)

// TestCheckRecords: every check of method's list has a record here, and
// every record registered is of a check in the list.
func TestCheckRecords(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range method.Checks() {
		listed[c.Name] = true
		if checkKinds[c.Name] == nil {
			t.Errorf("check %s has no record (register it in its file)", c.Name)
		}
	}
	for name := range checkKinds {
		if !listed[name] {
			t.Errorf("record %s is of no check in method's list", name)
		}
	}
}
