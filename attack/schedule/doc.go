// Package schedule plans when each hit of a stream is due: schedules
// (constant, linear, sine, steps, burst-then-probe) that say the planned
// send time of hit n, and a pacer that adapts them to Vegeta's Pacer
// interface (the engine's streams are paced by their timeline, package
// timeline); and the Waiter with which every pacer that waits for its hits itself
// waits (a timer, then the last 2 ms in nanosleep on Linux). Time is
// always an argument: a schedule is a pure function of n.
package schedule
