// Package decode reads results: run folders that ratecheck archived (their
// results.bin and the run.json beside it) and any results file Vegeta
// writes (gob, JSON, CSV), from files or pipes, bounded against hostile
// input; and, with FromResults, a run's own results held in memory, whose
// labels it takes as the engine gave them rather than parsing them again.
//
// A reader keeps 32 bytes a result and shares the few distinct labels and
// answers of a file in Tables of its own; Open keeps the records in a
// compact temporary file instead of memory, so that any number of results
// is analyzed in memory proportional to one window of them.
package decode
