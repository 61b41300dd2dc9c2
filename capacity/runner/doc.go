// Package runner runs the knee search of package capacity against a
// target: a [Job] of the attack engine that sends every step of a
// [capacity.Search] from as many source addresses as the step needs,
// judges it, and asks the search for the next.
//
// One process sends the whole search, and each source address keeps one
// HTTP client, so its connections are reused from step to step. Within a
// step, source j of n sends at rate/n with an offset of j/rate, so the
// sources' requests interleave into one even stream at the step's rate.
// Latency is measured from each request's intended send time: the step's
// schedule (its start, rate and sources, in run.json) and each result's
// Vegeta sequence number give it, so [Replay] recomputes every step's
// statistics from the archive alone. Memory is bounded by steps: only the
// samples of the step being judged are kept; every result streams to the
// archive.
//
// Beyond one machine, the same search is sharded over N processes that
// step in lockstep ([Config].Shard): each runs the same search, sends its
// 1/N of every step from sources of its own (its source j is source
// i + N·j of the step, so the shards' requests interleave into the one
// stream), reports its samples of every segment in a rendezvous folder
// the shards share, and records the merge of every shard's report in its
// search. Every shard thus judges each step alike and picks the same next
// one, which starts at an instant all compute from the same reports.
package runner
