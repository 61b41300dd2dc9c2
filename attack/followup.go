package attack

import (
	vegeta "github.com/tsenart/vegeta/v12/lib"

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
	// the run started (info) and every result of the other streams, and
	// returns what the follow-up is to settle (nil: nothing). It must not
	// block for long: results wait meanwhile.
	Needs func(info archive.RunInfo, results []*vegeta.Result) []timeline.Need
	// MaxUntil is the longest the run may take, in windows from its start
	// (see timeline.MaxUntil).
	MaxUntil float64
	// Say says each decision in a line, which run.json records (nil:
	// nothing is recorded).
	Say func(timeline.Decision) string

	info archive.RunInfo
	said []string
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
