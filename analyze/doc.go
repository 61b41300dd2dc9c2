// Package analyze provides the verdicts of ratecheck: it judges Vegeta
// results against a documented rate limit, from the outside. For each
// surface it runs the uncertainty-interval model of every (surface, source
// address) group, names the limiter family that fits the observed answers,
// judges the checks of a verdict (schema 1), each check one record that
// owns its evidence (check_*.go), and summarizes latency. It also holds the
// comparison statistics of two runs (compare.go, p99ratio.go); package
// analyze/jitter judges fleets of retrying clients wave by wave.
//
// It judges results, never how they were made: it does not import the
// attack engine or the reference target. How a verdict is reached, and
// what each figure means, is described in docs/method.md at the root of
// the repository.
package analyze
