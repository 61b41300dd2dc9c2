package attack

import (
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// FollowUp holds some streams of a plan back until every other stream's
// requests have their results, then asks what the run left open and sends
// what the timeline decides for it (timeline.Timeline.Decide): a
// sequential design, whose second stage is chosen from what the first left
// open. verify's follow-up probes are sent this way.
type FollowUp struct {
	// Streams are the held streams, each as "surface/name".
	Streams []string
	// Needs is called once, from the run's result loop, with run.json as
	// the run started (info) and every result of the other streams, with
	// their labels, and returns what the follow-up is to settle (nil:
	// nothing). It must not block for long: results wait meanwhile.
	Needs func(info archive.RunInfo, results []archive.Result) []timeline.Need
	// MaxUntil is the longest the run may take, in windows from its start
	// (see timeline.MaxUntil).
	MaxUntil float64
	// Say says each decision in a line, which run.json records (nil:
	// nothing is recorded).
	Say func(timeline.Decision) string

	info archive.RunInfo
	said []string
}

// Decide settles the follow-up of tl at now, once its plan is answered
// (timeline.Timeline.Deciding), from results, the plan's: what the
// analysis says is open (Needs), what the timeline sends for it
// (timeline.Timeline.Decide), each decision said (Say) and recorded for
// run.json. The engine calls it on the real clock, a simulation on a
// virtual one.
func (fu *FollowUp) Decide(tl *timeline.Timeline, now time.Duration, results []archive.Result) []timeline.Decision {
	var needs []timeline.Need
	if fu.Needs != nil {
		needs = fu.Needs(fu.info, results)
	}
	decisions := tl.Decide(needs, fu.MaxUntil, now)
	if fu.Say != nil {
		for _, d := range decisions {
			fu.said = append(fu.said, fu.Say(d))
		}
	}
	return decisions
}

// Started implements [Starter]: the follow-up judges the plan's results
// as the run's folder will be judged, by the run.json it starts with.
func (pl Plan) Started(info archive.RunInfo) {
	if pl.FollowUp != nil {
		pl.FollowUp.info = info
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
