// Package refserver provides the reference implementation of the documented
// contract (docs/contract.md, at the root of the repository): a REST surface
// under /api/public/ and an MCP endpoint at /mcp, each rate limited per
// client address. It is the embedded default target of ratecheck and the
// fixture of its end-to-end tests; its deliberately wrong limiter modes
// prove that the verifier can fail.
//
// # A target of known capacity
//
// With a [Pool] in its [Config] the target is also a queue whose behaviour
// under load is known in advance, so that a capacity search can be held to
// the truth. A request passes fault injection and the limiter first (a 429
// never takes a worker); then it is served by one of c workers for a
// service time S, fixed or drawn uniformly from [a, b], waiting first come
// first served while all are busy, and answered 503 queue_full when the
// queue already holds its limit. The capacity is μ = c / E[S] requests per
// second (10 workers of 20 ms: 500/s; of 5ms-35ms: 500/s too). Offered a
// steady rate λ below μ, a fixed service time never makes a request wait
// and latency stays at S; above μ the queue grows by λ − μ requests a
// second, so the latency of a request sent t seconds into the load is about
// S + t·(λ − μ)/μ, until the queue is full and the excess is refused. With
// random service times some requests wait below μ too, increasingly as λ
// nears it: the quantiles follow the D/G/c queue, which the package's tests
// simulate.
package refserver
