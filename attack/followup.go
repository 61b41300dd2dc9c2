package attack

import (
	"sync"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack/schedule"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// FollowUp holds some streams of a plan back until every other stream's
// requests have their results, then asks which of them to send, and for how
// long: a sequential design, whose second stage is chosen from what the
// first left open. verify's follow-up probes are sent this way.
type FollowUp struct {
	// Streams are the held streams, each as "surface/name".
	Streams []string
	// Decide is called once, from the run's result loop, with every result
	// of the other streams. It returns when to send each held stream it
	// wants sent, from the moment of the decision (a stream keeps its own
	// pacing from its start and stops at its own planned end whatever it
	// is told), and what run.json should record of the decision, a line
	// each. A held stream it leaves out is not sent. It must not block for
	// long: results wait meanwhile.
	Decide func(results []*vegeta.Result) (send map[string]Span, said []string)
	// SentBefore is when an earlier run last sent from the run's sources
	// within the freshness wait, when the run started anyway (NoWait): the
	// engine sets it before the run, for Decide to judge as the archived
	// run will be (archive.RunInfo.SentBefore).
	SentBefore time.Time

	said []string
}

// Span is when a held stream is sent, from the moment of the decision:
// from Start until Stop (0: its own end).
type Span struct{ Start, Stop time.Duration }

// followUps is the state of a plan's FollowUp during one run. Not safe for
// concurrent use but for the pacers' reading of its channels.
type followUps struct {
	fu *FollowUp
	// open is closed when a held stream is to be sent; cut when it is to
	// stop (declined, its time up, or the run stopping).
	open, cut map[string]chan struct{}
	cutOnce   map[string]*sync.Once
	left      uint64 // results of the other streams still due
	kept      []*vegeta.Result
	decided   bool
	timers    []*time.Timer
}

// newFollowUps returns the follow-up state of a run of units (nil when the
// plan holds nothing back).
func newFollowUps(fu *FollowUp, units []unit) *followUps {
	if fu == nil || len(fu.Streams) == 0 {
		return nil
	}
	f := &followUps{fu: fu, open: map[string]chan struct{}{}, cut: map[string]chan struct{}{}, cutOnce: map[string]*sync.Once{}}
	for _, k := range fu.Streams {
		f.open[k], f.cut[k], f.cutOnce[k] = make(chan struct{}), make(chan struct{}), &sync.Once{}
	}
	for _, u := range units {
		if !f.holds(u) {
			f.left += u.pacer.Count()
		}
	}
	return f
}

// key is the "surface/name" of u's stream.
func unitKey(u unit) string { return u.stream.Surface + "/" + u.stream.Name }

// holds reports whether u is a held stream's.
func (f *followUps) holds(u unit) bool {
	_, ok := f.open[unitKey(u)]
	return ok
}

// pacer returns the pacer of a held unit: it waits for its stream to be
// chosen, and stops when the stream is cut.
func (f *followUps) pacer(u unit) vegeta.Pacer {
	k := unitKey(u)
	gated := &schedule.GatedPacer{Pacer: u.pacer, Gate: f.open[k], Abort: f.cut[k]}
	return &schedule.StoppablePacer{Pacer: gated, Stop: f.cut[k]}
}

// answered takes a result in the run's result loop: one of the other
// streams' is kept, and the last of them due makes the decision.
func (f *followUps) answered(r *vegeta.Result) {
	if f == nil || f.decided {
		return
	}
	k := archive.LabelValue(r.Attack, "surface") + "/" + archive.LabelValue(r.Attack, "stream")
	if _, held := f.open[k]; held {
		return
	}
	f.kept = append(f.kept, r)
	if f.left > 0 {
		f.left--
	}
	if f.left == 0 {
		f.decide()
	}
}

// decide asks Decide, then opens the chosen streams, each cut when its
// time is up, and cuts the others.
func (f *followUps) decide() {
	f.decided = true
	send, said := f.fu.Decide(f.kept)
	f.fu.said, f.kept = said, nil
	for k := range f.open {
		sp, ok := send[k]
		if !ok || sp.Stop != 0 && sp.Stop <= sp.Start {
			f.stop(k)
			continue
		}
		if sp.Start > 0 {
			f.timers = append(f.timers, time.AfterFunc(sp.Start, func() { close(f.open[k]) }))
		} else {
			close(f.open[k])
		}
		if sp.Stop > 0 {
			f.timers = append(f.timers, time.AfterFunc(sp.Stop, func() { f.stop(k) }))
		}
	}
}

// stop cuts the held stream k (once).
func (f *followUps) stop(k string) { f.cutOnce[k].Do(func() { close(f.cut[k]) }) }

// stopAll cuts every held stream: the run is stopping.
func (f *followUps) stopAll() {
	if f == nil {
		return
	}
	for _, t := range f.timers {
		t.Stop()
	}
	for k := range f.cut {
		f.stop(k)
	}
}

// held reports whether the plan holds back the stream of surface and name.
func (pl Plan) held(surface, name string) bool {
	if pl.FollowUp == nil {
		return false
	}
	for _, k := range pl.FollowUp.Streams {
		if k == surface+"/"+name {
			return true
		}
	}
	return false
}
