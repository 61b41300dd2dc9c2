package capacity

import (
	"fmt"
	"os"
	"testing"

	"github.com/connectbyjbrh/ratecheck/internal/background"
)

// TestMain runs this package's tests, simulations on injected clocks, at
// the lowest CPU priority: beside them in go test ./..., the end-to-end
// tests that measure real time get the cores first (package background).
func TestMain(m *testing.M) {
	if err := background.Yield(); err != nil {
		fmt.Fprintln(os.Stderr, "could not lower the CPU priority:", err)
	}
	os.Exit(m.Run())
}
