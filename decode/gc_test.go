package decode

import (
	"os"
	"runtime/debug"
)

// The tests allocate far more than a command does (thousands of simulated
// runs), and at GOGC's default the collector took a fifth or more of their
// CPU. Unless GOGC says otherwise, the heap may grow to five times what
// is live.
func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}
