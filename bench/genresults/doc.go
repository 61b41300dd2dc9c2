// Command genresults provides the input of bench/analyze-vs-report.sh: a
// synthetic Vegeta results file (gob) of N results of a flood from a few
// addresses against both surfaces, one request per millisecond, the limit
// enforced by a rolling window, as the reference target would answer. With
// -spread the latencies vary and the file is in completion order, as Vegeta
// writes it.
package main
