// Package archive owns what a run folder is: its layout and file names
// (results.bin, run.json), all that run.json records (RunInfo, a capacity
// search's section with it: CapacityInfo, and a shard's name), the label
// every archived result carries (surface, source, stream, and a fleet
// client's attempt: Labels, which travel with each result the engine sends
// as a Result, and ParseLabel, which reads them from a file), and the
// writer of a run folder. Reading a run folder
// through it links no part of the HTTP engine. Package decode, beside it,
// reads run folders and any results file Vegeta writes.
//
// It is where the attack engine and the analyzer meet: attack writes
// through it, analyze reads through decode, and neither imports the other.
// Results stay readable by Vegeta's own tools (`vegeta report`,
// `vegeta plot`).
package archive
