// Package fleet runs the traffic of ratecheck fleet: a primer that spends
// one address's budget, then a fleet of clients released by the shared
// 429 that follows, each retrying with the backoff under test. Fleet runs
// clients of package client in process; Harness stands in front of the
// target for client programs the user brings (Programs runs them, one
// process per client, each told its own URL), and records every attempt
// with its client, request and attempt for package jitter to judge.
package fleet
