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
	if e.Fresh <= 0 {
		return nil
	}
	dir, end := archive.LastSent(e.Out, target, job.Info().Sources)
	left := time.Until(end.Add(e.Fresh))
	if dir == "" || left <= 0 {
		return nil
	}
	if e.NoWait {
		e.sentBefore = end
		e.emit(NotFresh{Run: dir, End: end, Left: left})
		return nil
	}
	e.emit(WaitingForFresh{Run: dir, End: end, Wait: left})
	return clock.Sleep(ctx, left)
}
