package archive

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestScheduleInterleaves: the sources of a segment interleave into one
// even stream at its rate, every hit before the end, none after.
func TestScheduleInterleaves(t *testing.T) {
	g := CapacitySegment{RateRPS: 400, WarmupMS: 250, DurationMS: 1000, Sources: []string{"a", "b", "c"}}
	var due []time.Duration
	judged := 0
	for j := range g.Sources {
		for h := range g.Count(j) {
			due = append(due, g.Due(j, h))
			if g.Judged(j, h) {
				judged++
			}
		}
	}
	slices.Sort(due)
	if len(due) != 500 || judged != 400 {
		t.Fatalf("%d hits, %d judged; want 500 and 400 (400/s over 1.25 s, the first 0.25 s warm-up)", len(due), judged)
	}
	for i, d := range due {
		if want := time.Duration(i) * 2500 * time.Microsecond; d != want {
			t.Fatalf("hit %d due at %v, want %v: the sources do not interleave evenly", i, d, want)
		}
	}
}

// TestReadCapacityWithoutRunJSON: a folder or file without run.json is
// not a capacity run, and saying so does not fail.
func TestReadCapacityWithoutRunJSON(t *testing.T) {
	if _, _, err := ReadCapacity(t.TempDir()); !errors.Is(err, ErrNotCapacity) {
		t.Errorf("ReadCapacity of an empty folder: %v, want ErrNotCapacity", err)
	}
}

// TestShardedScheduleInterleaves: the shards' segments of a step, each
// with its own sources, interleave into the one even stream the step
// would be from one process with all their sources.
func TestShardedScheduleInterleaves(t *testing.T) {
	whole := CapacitySegment{RateRPS: 600, WarmupMS: 250, DurationMS: 1000, Sources: []string{"a", "b", "c", "d", "e", "f"}}
	var want, got []time.Duration
	for j := range whole.Sources {
		for h := range whole.Count(j) {
			want = append(want, whole.Due(j, h))
		}
	}
	for i := range 3 {
		g := whole
		g.ShardIndex, g.Shards, g.Sources = i, 3, []string{"x", "y"}
		for j := range g.Sources {
			for h := range g.Count(j) {
				got = append(got, g.Due(j, h))
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) != 750 || !slices.Equal(got, want) {
		t.Errorf("three shards of two sources: %d hits, one process of six: %d (want 750, the same instants)", len(got), len(want))
	}
}
