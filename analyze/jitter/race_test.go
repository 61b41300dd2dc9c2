//go:build race

package jitter

// raceEnabled is true under the race detector, which slows the
// calibration runs of many simulated fleets several times over.
const raceEnabled = true
