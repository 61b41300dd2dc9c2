package main

import (
	"fmt"
	"testing"
)

// quietTests are the end-to-end tests whose timing the package's other
// tests blur when they all run side by side (eight at once): the fit then
// names another limiter, or a run comes out inconclusive. Each has its
// reason in its comment. TestQuiet runs them before the others, in pairs. (TestVerifyAgainstSDKServers, whose four
// runs of go-sdk servers blurred even beside one of these, runs alone
// before them.)
var quietTests = []struct {
	name string
	run  func(*testing.T)
}{
	// in pairs, in this order: each test that must pass verify beside one
	// that does not (side by side, the embedded target's and the 2025-11-25
	// server's runs blurred each other into inconclusive)
	{"VerifyEmbeddedPasses", testVerifyEmbeddedPasses},
	{"CapacityTargetFailing", testCapacityTargetFailing},
	{"SDKServerOfRevision20251125", testSDKServerOfRevision20251125},
	{"ServeWorkerPool", testServeWorkerPool},
	{"AttackAbortsOnFailingTarget", testAttackAbortsOnFailingTarget},
	{"VerifyAgainstNginxRoundRobin", testVerifyAgainstNginxRoundRobin},
	{"VerifyAgainstNginx", testVerifyAgainstNginx},
	{"VerifyAgainstNginxBurstDelay", testVerifyAgainstNginxBurstDelay},
	{"CapacityShards", testCapacityShards},
}

// quietAtOnce is how many of quietTests run at once (a test's own
// parallel subtests, such as the headers test's four runs, count as one).
const quietAtOnce = 2

// TestQuiet runs quietTests quietAtOnce at a time, one group after
// another, before the package's parallel tests start: it is not parallel
// itself, so they wait for it. A group is a subtest that ends when its
// members do, so no test waits for a slot another holds (under the race
// detector, with -parallel 1, a semaphore held across a test's own
// parallel subtests deadlocked). go test -run 'TestQuiet//VerifyHeaders'
// runs one of them.
func TestQuiet(t *testing.T) {
	for i := 0; i < len(quietTests); i += quietAtOnce {
		group := quietTests[i:min(i+quietAtOnce, len(quietTests))]
		t.Run(fmt.Sprint("group", 1+i/quietAtOnce), func(t *testing.T) {
			for _, q := range group {
				t.Run(q.name, func(t *testing.T) {
					t.Parallel()
					q.run(t)
				})
			}
		})
	}
}
