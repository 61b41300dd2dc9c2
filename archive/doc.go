// Package archive owns what a run folder is: its layout and file names
// (results.bin, run.json), what run.json records (RunInfo), the label every
// archived result carries (surface, source, stream, and a fleet client's
// attempt), the stream names the analyzer keys on, the writer of a run
// folder and the reader of run folders and of any results file Vegeta
// writes (gob, JSON, CSV).
//
// It is where the attack engine and the analyzer meet: attack writes
// through it, analyze reads through it, and neither imports the other.
// Results stay readable by Vegeta's own tools (`vegeta report`,
// `vegeta plot`).
//
// A reader keeps 32 bytes a result and shares the few distinct labels and
// answers of a file in Tables of its own; Open keeps the records in a
// compact temporary file instead of memory, so that any number of results
// is analyzed in memory proportional to one window of them.
package archive
