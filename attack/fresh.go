package attack

import (
	"context"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/internal/clock"
)

// WaitingForFresh says an earlier run in Out (Run, its folder) sent to the
// target from one of this run's sources until End, less than
// [Options.Fresh] ago: Execute waits Wait before it sends, so that the
// target's window holds none of it.
type WaitingForFresh struct {
	Run  string
	End  time.Time
	Wait time.Duration
}

// NotFresh says the same when told not to wait ([Options.NoWait]): the run
// starts at once, Left before the earlier run's requests leave the window,
// and its first burst shows whether the budget was whole.
type NotFresh struct {
	Run  string
	End  time.Time
	Left time.Duration
}

func (WaitingForFresh) event() {}
func (NotFresh) event()        {}

// waitFresh waits, when Fresh is set, until no earlier run in Out that
// sent to target from one of the job's sources ended within Fresh of
// now, or says it does not (NoWait).
func (e *engine) waitFresh(ctx context.Context, job Job, target string) error {
	wait, ev := e.Options.Fresher(job, target, time.Now())
	if ev == nil {
		return nil
	}
	e.emit(ev)
	if nf, ok := ev.(NotFresh); ok {
		e.sentBefore = nf.End
		return nil
	}
	return clock.Sleep(ctx, wait)
}

// Fresher says, at now, how long a run of job against target must wait
// for the earlier runs in Out that sent from its sources to leave the
// window (Fresh), and what to report of it: nothing when none is that
// recent (or Fresh is not set), WaitingForFresh, or NotFresh with no wait
// when told not to (NoWait; the run's sentBefore is then its End).
func (o Options) Fresher(job Job, target string, now time.Time) (time.Duration, Event) {
	if o.Fresh <= 0 {
		return 0, nil
	}
	dir, end := archive.LastSent(o.Out, target, job.Info().Sources)
	left := end.Add(o.Fresh).Sub(now)
	if dir == "" || left <= 0 {
		return 0, nil
	}
	if o.NoWait {
		return 0, NotFresh{Run: dir, End: end, Left: left}
	}
	return left, WaitingForFresh{Run: dir, End: end, Wait: left}
}
