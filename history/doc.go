// Package history finds where a benchmark's figures changed over a series
// of archived runs: it groups runs' figures into series (one figure of one
// kind of run on one target and surface, over time), finds the change
// points of each series with E-divisive means and a permutation test, says
// how large each change is and whether it is for the worse (a change
// smaller than its figure's floor is not one), and reports changes of
// verdict and model as events.
//
// The package takes plain values: reading run folders is the caller's.
// It never prints.
package history
