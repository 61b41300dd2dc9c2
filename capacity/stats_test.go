package capacity

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestStatsJSONRoundTrip: a Stats read back from its JSON is judged as the
// original, alone and merged with another shard's, and writes the same
// JSON again.
func TestStatsJSONRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := func(i int, _ time.Time) (time.Duration, time.Duration, bool, bool) {
		lat := time.Duration(5e6 + rng.Int64N(60e6)) // 5 ms to 65 ms, to the nanosecond
		return time.Duration(rng.Int64N(2e6)), lat, i%97 == 0, i == 500
	}
	a, b := synth(400, 3*time.Second, noisy), synth(400, 3*time.Second, noisy)
	slo, _ := ParseSLO("p99<=60ms")
	crit := criteria{Objective: Objective{SLO: slo, ErrorBudget: 0.05}}
	for _, st := range []*Stats{NewStats(), a} {
		text, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		back := NewStats()
		if err := json.Unmarshal(text, back); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(text) {
			t.Errorf("JSON differs once read back:\n%.200s\n%.200s", text, again)
		}
		want, got := judge(clone(st), 400, crit), judge(back, 400, crit)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("judged otherwise once read back:\n got %+v\nwant %+v", got, want)
		}
	}
	// Merged in shard order from their JSON, as the shards of a step do.
	whole := clone(a)
	whole.Merge(b)
	merged := NewStats()
	for _, st := range []*Stats{a, b} {
		text, _ := json.Marshal(st)
		part := NewStats()
		if err := json.Unmarshal(text, part); err != nil {
			t.Fatal(err)
		}
		merged.Merge(part)
	}
	if got, want := judge(merged, 800, crit), judge(whole, 800, crit); !reflect.DeepEqual(got, want) {
		t.Errorf("merged from JSON judged otherwise:\n got %+v\nwant %+v", got, want)
	}
}

// clone is a copy of st through Merge.
func clone(st *Stats) *Stats {
	c := NewStats()
	c.Merge(st)
	return c
}

func TestStatsJSONRefusesDisagreeingParts(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		`{"corrected_ns":[1,2],"uncorrected_ns":[1],"lateness_ns":[0,0]}`:         "2 corrected, 1 uncorrected and 2 lateness samples",
		`{"corrected_ns":[1],"uncorrected_ns":[1],"lateness_ns":[0],"failed":2}`:  "2 failed and 0 refused of 1",
		`{"corrected_ns":[1],"uncorrected_ns":[1],"lateness_ns":[0],"refused":1}`: "0 failed and 1 refused of 1",
		`{"corrected_ns":"x"}`: "cannot unmarshal",
	} {
		if err := json.Unmarshal([]byte(text), NewStats()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}
