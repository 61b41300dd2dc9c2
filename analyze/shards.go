package analyze

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
)

// mergeNotes describes the shards among the input's runs: which were
// merged, how far apart their clocks started (run.json's start: every
// request of a shard, its first included, goes out at that instant plus its
// planned offset, so this is the skew between the shards' requests against
// plan), and, as warnings, shards missing, repeated or of different splits,
// and a skew above 1 % of the window.
func mergeNotes(in *decode.Meta, window time.Duration) (notes, warnings []string) {
	type shard struct {
		i, n  int
		start time.Time
		run   *archive.RunInfo
	}
	var shards []shard
	for k := range in.Runs {
		r := &in.Runs[k]
		var s shard
		if r.Shard == "" {
			continue
		}
		if _, err := fmt.Sscanf(r.Shard, "%d/%d", &s.i, &s.n); err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: run.json shard %q is not i/n", r.Dir, r.Shard))
			continue
		}
		s.start, s.run = r.Start, r
		shards = append(shards, s)
	}
	if len(shards) == 0 {
		return nil, nil
	}
	slices.SortFunc(shards, func(a, b shard) int { return a.i - b.i })
	n := shards[0].n
	seen := map[int]int{}
	lo, hi := shards[0].start, shards[0].start
	var parts []string
	for _, s := range shards {
		if s.n != n {
			warnings = append(warnings, fmt.Sprintf("shards of different splits merged: %d/%d and %d/%d", shards[0].i, n, s.i, s.n))
		}
		if seen[s.i]++; seen[s.i] == 2 {
			warnings = append(warnings, fmt.Sprintf("shard %d/%d is merged more than once: its requests count twice", s.i, s.n))
		}
		if s.start.Before(lo) {
			lo = s.start
		}
		if s.start.After(hi) {
			hi = s.start
		}
		part := fmt.Sprintf("%d/%d", s.i, s.n)
		if at := s.run.StartAt; at != nil {
			part += " " + signed(s.start.Sub(*at).Round(100*time.Microsecond))
		}
		parts = append(parts, part)
	}
	var missing []string
	for i := range n {
		if seen[i] == 0 {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		warnings = append(warnings, fmt.Sprintf("shard %s missing: the totals are only part of the attack", strings.Join(missing, ", ")))
	}
	skew := hi.Sub(lo)
	note := fmt.Sprintf("merged %d shards of %s; their clocks, and so their requests against plan, started %v apart", len(shards), shards[0].run.Profile, skew.Round(100*time.Microsecond))
	if shards[0].run.StartAt != nil {
		note += " (after the agreed start: " + strings.Join(parts, ", ") + ")"
	} else {
		note += " (" + strings.Join(parts, ", ") + ")"
	}
	notes = append(notes, note)
	if window > 0 && skew > window/100 {
		warnings = append(warnings, fmt.Sprintf("the shards started %v apart, more than 1%% of the window: an address shared by shards, and the surface's counts over time, are judged on shifted timing", skew.Round(time.Millisecond)))
	}
	return notes, warnings
}

// signed writes d with its sign, such as +1.2ms.
func signed(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}
