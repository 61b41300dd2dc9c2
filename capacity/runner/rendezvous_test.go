package runner

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/capacity"
)

// meeting is the rendezvous of shard i of n in dir, on clock now.
func meeting(dir string, i, n int, now func() time.Time) *rendezvous {
	return &rendezvous{dir: dir, shard: attack.Shard{I: i, N: n}, startAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), now: now, poll: time.Millisecond}
}

// stepReport is shard i's report of segment 0 (step 0 at 400/s), with
// one sample, finished at at.
func stepReport(at time.Time) report {
	st := capacity.NewStats()
	st.Add(capacity.Sample{Intended: at.Add(-time.Second), Sent: at.Add(-time.Second), Done: at.Add(-time.Second + 20*time.Millisecond)})
	return report{Segment: 0, Step: 0, Stream: "step-00", RateRPS: 400, Finished: at, Stats: st}
}

// TestRendezvousMeets: once every shard reported a segment, each reads
// them all in shard order, and all agree on the merged samples and on the
// next start, the latest finish plus the gap.
func TestRendezvousMeets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 30, 9, 0, 5, 0, time.UTC)
	for i := range 3 {
		if err := meeting(dir, i, 3, nil).write(stepReport(t0.Add(time.Duration(i) * time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		rv := meeting(dir, i, 3, nil)
		got, err := rv.wait(context.Background(), stepReport(t0), time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range got {
			if r.Shard != (attack.Shard{I: k, N: 3}).String() {
				t.Errorf("report %d is shard %s's", k, r.Shard)
			}
		}
		st, next := merge(got, 250*time.Millisecond)
		if st.Len() != 3 || !next.Equal(t0.Add(252*time.Millisecond)) {
			t.Errorf("shard %d: %d samples, next start %v; want 3 and %v", i, st.Len(), next, t0.Add(252*time.Millisecond))
		}
	}
	entries, _ := os.ReadDir(dir + "/segment-0000")
	if len(entries) != 3 {
		t.Errorf("segment-0000 holds %d entries, want the 3 reports and no temporary file", len(entries))
	}
}

// TestRendezvousFaults: a shard missing at the deadline (its only report
// an earlier search's), one that stopped, and one that ran another step
// are each an error naming the shard and the step; an ended context ends
// the wait.
func TestRendezvousFaults(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 9, 0, 5, 0, time.UTC)
	fake := t0
	clock := func() time.Time { fake = fake.Add(10 * time.Millisecond); return fake }
	for _, tc := range []struct {
		name  string
		other func(dir string) error
		want  string
	}{
		{"missing", func(dir string) error {
			old := meeting(dir, 1, 2, nil)
			old.startAt = old.startAt.Add(-time.Hour) // an earlier run's report, in the same folder
			return old.write(stepReport(t0))
		}, "shard 1/2, step 0 (segment step-00): no report in "},
		{"stopped", func(dir string) error {
			return meeting(dir, 1, 2, nil).write(report{Segment: 0, Error: "interrupted"})
		}, "shard 1/2, step 0 (segment step-00): stopped: interrupted"},
		{"another search", func(dir string) error {
			r := stepReport(t0)
			r.RateRPS = 380
			return meeting(dir, 1, 2, nil).write(r)
		}, "shard 1/2, step 0 (segment step-00): it ran step 0 at 380/s (segment step-00), this shard step 0 at 400/s: the shards run other searches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rv := meeting(dir, 0, 2, clock)
			own := stepReport(t0)
			if err := rv.write(own); err != nil {
				t.Fatal(err)
			}
			if err := tc.other(dir); err != nil {
				t.Fatal(err)
			}
			_, err := rv.wait(context.Background(), own, fake.Add(time.Second))
			var se *shardError
			if !errors.As(err, &se) || se.Shard.I != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want a *shardError %q", err, tc.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := meeting(t.TempDir(), 0, 2, nil).wait(ctx, stepReport(t0), time.Now().Add(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("wait after the context ended: %v", err)
	}
}

// TestAbandonTellsTheOthers: a shard that stops before the search is done
// leaves, in place of the report it owed, why it stopped; the others read
// it as a *shardError with that reason.
func TestAbandonTellsTheOthers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reported int // segments reported before it stopped, of 2 run
		err      error
		want     string
	}{
		{"interrupted while sending", 1, nil, "shard 0/2, step 1 (segment step-01): stopped: interrupted"},
		{"failed while waiting", 2, errors.New("shard 1/2, step 1: no report"), "stopped: shard 1/2, step 1: no report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := poolSearch(t)
			c.Shard, c.Rendezvous, c.StartAt = attack.Shard{I: 0, N: 2}, t.TempDir(), time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
			j, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			j.segments = []archive.CapacitySegment{{Step: 0, Stream: "step-00", RateRPS: 300}, {Step: 1, Stream: "step-01", RateRPS: 600}}
			j.reported = tc.reported
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			j.abandon(ctx, tc.err)
			other := &rendezvous{dir: c.Rendezvous, shard: attack.Shard{I: 1, N: 2}, startAt: c.StartAt}
			own := report{Segment: tc.reported, Step: 1, Stream: "step-01", RateRPS: 600}
			if _, _, err := other.read(own, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the other shard reads %v, want %q", err, tc.want)
			}
		})
	}
}
