// Package schedule plans when each hit of a stream is due: schedules
// (constant, linear, sine, steps, burst-then-probe) that say the planned
// send time of hit n, and pacers that adapt them to Vegeta's Pacer
// interface, gated (a stream that waits for others' answers) or stoppable.
// Time is always an argument: a schedule is a pure function of n.
package schedule
