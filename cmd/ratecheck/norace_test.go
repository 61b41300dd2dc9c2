//go:build !race

package main

// raceEnabled is true under the race detector, which slows this package's
// end-to-end runs several times over.
const raceEnabled = false
