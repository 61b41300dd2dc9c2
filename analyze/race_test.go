//go:build race

package analyze

// raceEnabled is true under the race detector, which slows the plan's
// simulated runs (TestPlanConfusion) about ten times over.
const raceEnabled = true
