// Package timeline is when a run sends what: the due time of every hit of
// every stream of a plan, the gates that hold a stream until the streams
// it waits for are answered, and, for verify, the follow-up a run decides
// once its plan is answered (which held streams go out, from when and
// until when, the aged-out burst) and the bound --max-duration sets on it.
//
// It is pure: every function takes the time as an argument, a duration
// since the run's start, and none reads a clock. The engine (package
// attack) runs a Timeline on the real clock, asking it when each hit is
// due and telling it when each answer came; the plan's simulation runs the
// same Timeline on a virtual clock, so what is proved there is the plan
// that ships. What is open after the plan (a [Need]) is the analysis's to
// say; when and how long the follow-up runs is the timeline's.
package timeline
