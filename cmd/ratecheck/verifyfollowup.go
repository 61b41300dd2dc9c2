package main

import (
	"fmt"
	"io"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/method"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// defaultMaxDuration is verify's --max-duration when not given, in
// windows: the follow-up of a window twice the documented one (its second
// burst ages out at 3.17 windows) fits in it.
const defaultMaxDuration = 3.5

// followUpUntil is how long verify's run may take, follow-ups included, in
// windows: --max-duration, or the default; 0 when that leaves no room
// for a follow-up, or the limit probes are not sent.
func (o *verifyOptions) followUpUntil(window time.Duration, limits bool) float64 {
	until := defaultMaxDuration
	if o.maxDuration > 0 {
		until = float64(o.maxDuration) / float64(window)
	}
	if !limits || until <= method.FollowUpStart {
		return 0
	}
	return until
}

// followUp holds back the follow-up streams of verify's plan until the
// plan is answered, then sends those of the surfaces whose verdict so far
// leaves a question the follow-up can settle (analyze.Report.FollowUps),
// for as long as it needs, and says so on stderr.
func followUp(v verifyRun, until float64, stderr io.Writer) *attack.FollowUp {
	fu := &attack.FollowUp{}
	for _, sf := range v.surfaces {
		fu.Streams = append(fu.Streams, sf+"/"+method.StreamFollowUp, sf+"/"+method.StreamFollowUpBurst)
	}
	w := v.plan.Window
	fu.Decide = func(results []*vegeta.Result) (map[string]attack.Span, []string) {
		if len(results) == 0 {
			return nil, nil
		}
		last := results[0].Timestamp
		for _, r := range results {
			if end := r.Timestamp.Add(r.Latency); end.After(last) {
				last = end
			}
		}
		in := analyze.FromResults(results)
		rep, err := analyze.Analyze(in, analyze.Config{Window: w, Limits: v.limits, Checks: v.checks, Surfaces: v.surfaces, SentBefore: fu.SentBefore})
		if err != nil || rep.Start.IsZero() {
			return nil, nil
		}
		start := rep.Start
		send, said := map[string]attack.Span{}, []string(nil)
		at := func(windows float64) time.Duration { return time.Until(start.Add(time.Duration(windows * float64(w)))) }
		for _, n := range rep.FollowUps(until) {
			if n.AgedOut {
				// The burst alone, once the run's last answered request
				// has aged out of a window.
				begin := time.Until(last.Add(time.Duration(method.FollowUpAgedOut * float64(w))))
				stop := begin + time.Duration((method.FollowUpBurstSpan+method.FollowUpBurstLead)*float64(w))
				line := fmt.Sprintf("%s: %s: a burst of its limit from the limit address in %v, once the run's requests have aged out", n.Surface, n.Why, max(begin, 0).Round(100*time.Millisecond))
				if stop > at(until) {
					line = fmt.Sprintf("%s: %s: no follow-up burst, as it would end past --max-duration (%.2f windows)", n.Surface, n.Why, until)
				} else {
					// Not cut at its planned end: the burst weighs only
					// whole, and a busy host sends it late.
					send[n.Surface+"/"+method.StreamFollowUpBurst] = attack.Span{Start: max(begin, 0)}
				}
				said = append(said, line)
				fmt.Fprintf(stderr, "ratecheck verify: follow-up on %s\n", line)
				continue
			}
			stop := at(n.Until)
			line := fmt.Sprintf("%s: %s: follow-up probes from the limit address until %.2f windows (%v more)", n.Surface, n.Why, n.Until, stop.Round(100*time.Millisecond))
			if stop > 0 {
				send[n.Surface+"/"+method.StreamFollowUp] = attack.Span{Stop: stop}
				send[n.Surface+"/"+method.StreamFollowUpBurst] = attack.Span{Start: max(at(n.BurstAt), 0), Stop: stop}
			} else {
				// The probes tell the rivals apart at their planned times
				// only: late, they would weigh nothing.
				line = fmt.Sprintf("%s: %s: no follow-up probes: they were due until %.2f windows, %v before the plan's analysis ended (a busy host; a longer --window leaves it more time)",
					n.Surface, n.Why, n.Until, (-stop).Round(100*time.Millisecond))
			}
			said = append(said, line)
			fmt.Fprintf(stderr, "ratecheck verify: follow-up on %s\n", line)
		}
		return send, said
	}
	return fu
}
