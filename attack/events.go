package attack

import "time"

// Event is what Execute reports during a run, through [Options.Events]:
// one of the types below. Execute never prints; the caller renders each
// event as it sees fit (the command line prints a line to stderr for
// each). Events are delivered one at a time, in the order listed here for
// a run that goes through every step, some from a goroutine of Execute's
// own.
type Event interface{ event() }

// SourcesUsable says the job's source addresses are usable: the run is
// about to start the target, reach it and send. It is the moment to say
// what the run will do.
type SourcesUsable struct{}

// EmbeddedStarted says no target was given and the embedded reference
// target was started at URL.
type EmbeddedStarted struct{ URL string }

// RemoteTarget says load is about to go to a target that is not on
// loopback, for about Planned, after a pause of Wait in which the caller
// may cancel the run (only when [Options.Interactive]).
type RemoteTarget struct {
	Target        string
	Planned, Wait time.Duration
}

// WaitingForTarget says the target did not answer (Err) before the agreed
// start ([Options.StartAt]): Execute tries again every second until then.
// It is reported once.
type WaitingForTarget struct {
	Target string
	Err    error
}

// Negotiated says how the job settled the MCP revision (see [Negotiator]).
type Negotiated struct{ Negotiation }

// StartMissed says the agreed start ([Options.StartAt]) At had passed Late
// ago when the run was ready: it starts at once, and analyze reports the
// skew between shards.
type StartMissed struct {
	At   time.Time
	Late time.Duration
}

// WaitingForStart says the run waits Wait for the agreed start At.
type WaitingForStart struct {
	At   time.Time
	Wait time.Duration
}

// Progress is the run's progress, every 250 ms while it sends (only when
// [Options.Interactive]): Elapsed of Planned, and the results so far.
// Counts is live: read it while handling the event.
type Progress struct {
	Elapsed, Planned time.Duration
	Counts           *Counts
}

// ProgressDone says the run stopped sending: no Progress follows.
type ProgressDone struct{}

// ClockStepped says the wall clock stepped by Step during the run (NTP or
// a manual change): archived timestamps across the step are off by that
// much. run.json records it.
type ClockStepped struct{ Step time.Duration }

func (SourcesUsable) event()    {}
func (EmbeddedStarted) event()  {}
func (RemoteTarget) event()     {}
func (WaitingForTarget) event() {}
func (Negotiated) event()       {}
func (StartMissed) event()      {}
func (WaitingForStart) event()  {}
func (Progress) event()         {}
func (ProgressDone) event()     {}
func (ClockStepped) event()     {}
