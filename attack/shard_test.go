package attack

import (
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/profiles"
)

// TestShardsSplitExactly: for every shipped profile, and for profiles with
// fewer sources than shards, N shards together send every planned request
// exactly once, at its planned time; with at least N sources each source
// is on one shard only.
func TestShardsSplitExactly(t *testing.T) {
	var plans []*scenario.Profile
	names, _ := fs.Glob(profiles.FS, "*.yaml")
	for _, name := range names {
		b, _ := profiles.FS.ReadFile(name)
		p, err := scenario.ParseProfile(name, b)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, p)
	}
	for _, srcs := range [][]string{nil, {"127.0.0.2", "127.0.0.3"}} {
		p := &scenario.Profile{Name: fmt.Sprintf("%d-sources", len(srcs)), Policy: scenario.Policy{Surface: method.REST, Limit: 240, Window: scenario.Span{D: time.Minute}}, Sources: srcs,
			Streams: []scenario.Stream{{Name: "s", Surface: method.REST, Requests: []scenario.Request{{Path: "/"}},
				Pacer: scenario.PacerSpec{Type: "constant", Rate: scenario.Rate{N: 97, Per: scenario.Span{D: time.Second}}, Duration: scenario.Span{D: 3 * time.Second}}}}}
		plans = append(plans, p)
	}
	type hit struct {
		stream string
		g      uint64
	}
	for _, p := range plans {
		whole := Plan{Profile: p, Window: 4 * time.Second}
		want := map[hit]string{}
		for _, u := range whole.units() {
			for h := uint64(0); h < u.pacer.Count(); h++ {
				want[hit{u.stream.Name, u.pacer.J + u.pacer.K*h}] = u.source
			}
		}
		for n := 2; n <= 5; n++ {
			got := map[hit]int{}
			onShard := map[string][]int{}
			var planned uint64
			peak := 0
			for i := range n {
				pl := whole
				pl.Shard = Shard{I: i, N: n}
				for _, u := range pl.units() {
					onShard[u.stream.Name+" "+u.source] = append(onShard[u.stream.Name+" "+u.source], i)
					for h := uint64(0); h < u.pacer.Count(); h++ {
						g := u.pacer.J + u.pacer.K*h
						if _, ok := u.pacer.Pace(0, h); ok {
							t.Fatalf("%s %d/%d: hit %d of %d is past the schedule", p.Name, i, n, h, u.pacer.Count())
						}
						if src := want[hit{u.stream.Name, g}]; src != u.source {
							t.Errorf("%s %d/%d: hit %d of %s from %q, unsharded from %q", p.Name, i, n, g, u.stream.Name, u.source, src)
						}
						got[hit{u.stream.Name, g}]++
					}
				}
				for _, s := range pl.Info().Streams {
					planned += s.Planned
				}
				peak = max(peak, pl.PeakRate())
			}
			var wantPlanned uint64
			for _, s := range whole.Info().Streams {
				wantPlanned += s.Planned
			}
			if len(got) != len(want) || planned != wantPlanned || planned != uint64(len(want)) {
				t.Errorf("%s over %d shards: %d distinct hits planned %d, want %d", p.Name, n, len(got), planned, len(want))
			}
			for h, c := range got {
				if c != 1 {
					t.Errorf("%s over %d shards: hit %v sent %d times", p.Name, n, h, c)
				}
			}
			for _, s := range p.Streams {
				if srcs := p.StreamSources(&s); len(srcs) >= n {
					for _, src := range srcs {
						if shards := onShard[s.Name+" "+src]; len(shards) != 1 {
							t.Errorf("%s over %d shards: source %s of %s on shards %v, want one", p.Name, n, src, s.Name, shards)
						}
					}
				}
			}
			if peak > whole.PeakRate() {
				t.Errorf("%s over %d shards: a shard peaks at %d/s, above the whole's %d/s", p.Name, n, peak, whole.PeakRate())
			}
		}
	}
}
