package main

import (
	"fmt"
	"io"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// followUp holds back the follow-up streams of verify's plan until the
// plan is answered; the analysis then says what the plan left open
// (analyze.FollowUpNeeds, judged as the run will be at the end, by
// over), the timeline what to send for it and when, and each decision is
// said on stderr and in run.json.
func followUp(surfaces []string, over analyze.Overrides, until float64, stderr io.Writer) *attack.FollowUp {
	fu := &attack.FollowUp{MaxUntil: until}
	for _, sf := range surfaces {
		fu.Streams = append(fu.Streams, sf+"/"+method.StreamFollowUp, sf+"/"+method.StreamFollowUpBurst)
	}
	fu.Needs = func(info archive.RunInfo, results []archive.Result) []timeline.Need {
		return analyze.FollowUpNeeds(info, results, over, until)
	}
	fu.Say = func(d timeline.Decision) string {
		line := sayFollowUp(d)
		fmt.Fprintf(stderr, "ratecheck verify: follow-up on %s\n", line)
		return line
	}
	return fu
}

// sayFollowUp says a follow-up decision in a line.
func sayFollowUp(d timeline.Decision) string {
	switch {
	case d.AgedOut && d.Sent:
		return fmt.Sprintf("%s: %s: a burst of its limit from the limit address in %v, once the run's requests have aged out", d.Surface, d.Why, d.Wait.Round(100*time.Millisecond))
	case d.AgedOut:
		return fmt.Sprintf("%s: %s: no follow-up burst, as it would end past --max-duration (%.2f windows)", d.Surface, d.Why, d.MaxUntil)
	case d.Sent:
		return fmt.Sprintf("%s: %s: follow-up probes from the limit address until %.2f windows (%v more)", d.Surface, d.Why, d.Until, d.Wait.Round(100*time.Millisecond))
	}
	// The probes tell the rivals apart at their planned times only: late,
	// they would weigh nothing.
	return fmt.Sprintf("%s: %s: no follow-up probes: they were due until %.2f windows, %v before the plan's analysis ended (a busy host; a longer --window leaves it more time)",
		d.Surface, d.Why, d.Until, d.Wait.Round(100*time.Millisecond))
}
