// Package jitter judges a fleet run (ratecheck fleet): whether clients
// retrying after one shared 429 drew their delays independently, as the
// backoff strategy they claim (full, equal or decorrelated jitter) does.
// Judge groups the fleet's attempts into waves (every client's k-th
// attempt), counts each wave's collisions, busiest ε-bin and the
// re-collisions of the pairs that collided at the wave before, and holds
// them to bounds simulated from the strategy's own draws (Monte Carlo
// tests sharing one false-alarm rate); it checks the premise (every first
// attempt refused together) and the clients' retry discipline (answers
// not retried, the attempt cap, a pause after repeated 429s). It never
// prints: the report is data for package report and the command.
package jitter
