// Command mincount provides the baseline of bench/serve-flood.sh: a minimal
// HTTP handler that only counts requests per client address under a mutex.
// The reference target must answer at least 90 % of its rate under the same
// load.
package main
