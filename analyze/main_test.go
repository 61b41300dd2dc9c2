package analyze

import (
	"testing"

	"github.com/connectbyjbrh/ratecheck/internal/background"
)

// TestMain runs this package's tests, simulations on injected clocks, at
// the lowest CPU priority (package background).
func TestMain(m *testing.M) { background.Main(m) }
