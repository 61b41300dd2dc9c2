package attack

import (
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/schedule"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// BenchmarkPace measures a pacing decision whose hit is due (the attack
// loop's hot path at a high rate): the timeline asked under its lock, the
// lateness recorded.
func BenchmarkPace(b *testing.B) {
	sched := schedule.Pacer{Sched: schedule.Constant(1e9, time.Hour, 0), K: 1}
	c := &clocked{tl: timeline.New(time.Second, []timeline.Stream{{Key: "rest/x", Due: sched.Due, Count: sched.Count()}}),
		changed: make(chan struct{}), stop: make(chan struct{}), origin: time.Now().Add(-time.Hour)}
	var behind Behind
	p := &pacer{c: c, rate: sched, behind: func(lag time.Duration) { behind.add("x", "", lag) }}
	var hits uint64
	for b.Loop() {
		p.Pace(0, hits) // every hit is due
		hits++
	}
}
