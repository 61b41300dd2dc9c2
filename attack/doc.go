// Package attack is the one run engine of ratecheck: Execute runs a Job (a
// Plan of paced streams, a fleet, a capacity search) against a target into a
// new run folder. It checks the source addresses, starts the embedded
// reference target when none is given, checks that the target answers,
// raises the descriptor limit, lets a job settle its MCP revision, archives
// every result as it comes (readable by Vegeta's own tools), stops adding
// load to a failing target and notes a wall-clock step. It prints nothing:
// what it has to say goes out as events (Options.Events) that the command
// renders.
//
// The profile format is package attack/scenario, the pacers attack/schedule,
// fleets of retrying clients and client programs attack/fleet. The probe
// plan of verify is package method's; docs/method.md describes it.
package attack
