package main

import "testing"

// quietTests are the end-to-end tests whose timing the package's other
// tests blur when they all run side by side (eight at once): the fit then
// names another limiter, or a run comes out inconclusive. Each has its
// reason in its comment. TestQuiet runs them before the others, a few at
// a time. (TestVerifyAgainstSDKServers, whose four runs of go-sdk servers
// blurred even beside one of these, runs alone before them.)
var quietTests = []struct {
	name string
	run  func(*testing.T)
}{
	{"VerifyHeaders", testVerifyHeaders},
	{"VerifyAgainstNginxRoundRobin", testVerifyAgainstNginxRoundRobin},
	{"VerifyAgainstNginxBurstDelay", testVerifyAgainstNginxBurstDelay},
	{"VerifyAgainstNginx", testVerifyAgainstNginx},
	{"SDKServerOfRevision20251125", testSDKServerOfRevision20251125},
	{"VerifyEmbeddedPasses", testVerifyEmbeddedPasses},
	{"AttackAbortsOnFailingTarget", testAttackAbortsOnFailingTarget},
	{"CapacityTargetFailing", testCapacityTargetFailing},
	{"ServeWorkerPool", testServeWorkerPool},
}

// quietAtOnce is how many of quietTests run at once (a test's own
// parallel subtests, such as the SDK servers' four runs, count as one).
const quietAtOnce = 2

// TestQuiet runs quietTests, at most quietAtOnce at a time, before the
// package's parallel tests start: it is not parallel itself, so they wait
// for it. Under the race detector -parallel is 1, and they run one after
// another. go test -run 'TestQuiet/VerifyHeaders' runs one of them.
func TestQuiet(t *testing.T) {
	slots := make(chan struct{}, quietAtOnce)
	for _, q := range quietTests {
		t.Run(q.name, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			t.Cleanup(func() { <-slots }) // after its own parallel subtests too, unlike a defer
			q.run(t)
		})
	}
}
