// Command ratecheck provides a load generator and rate-limit verifier: it
// attacks an API's documented surfaces with Vegeta and proves, from the
// outside, that 429s begin exactly above the documented limits.
//
// Run "ratecheck help" for the commands. README.md at the root of the
// repository gives a first run; docs/ says how a verdict is reached, what
// the contract is, and what every --json output holds.
package main
