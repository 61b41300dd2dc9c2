//go:build !race

package refserver

// raceEnabled is true under the race detector, which slows the HTTP stack
// several times over: too much for the queueing test's real load.
const raceEnabled = false
