package capacity

import (
	"testing"
	"time"
)

func TestSourcesNeeded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate   float64
		limit  int
		window time.Duration
		share  float64
		want   int
	}{
		{rate: 2500, limit: 240, window: time.Minute, share: 0.5, want: 1250}, // 2/s each
		{rate: 2, limit: 240, window: time.Minute, share: 0.5, want: 1},
		{rate: 2.01, limit: 240, window: time.Minute, share: 0.5, want: 2},
		{rate: 100, limit: 120, window: time.Minute, share: 0, want: 100}, // default share: 1/s each
		{rate: 100, limit: 240, window: time.Minute, share: 1, want: 25},
		{rate: 1000, limit: 0, window: time.Minute, share: 0.5, want: 1},
		{rate: 0, limit: 240, window: time.Minute, share: 0.5, want: 1},
	} {
		got := SourcesNeeded(tc.rate, tc.limit, tc.window, tc.share)
		if got != tc.want {
			t.Errorf("SourcesNeeded(%v, %d, %v, %v) = %d, want %d", tc.rate, tc.limit, tc.window, tc.share, got, tc.want)
		}
		// No address sends above its share.
		if tc.limit > 0 && tc.rate > 0 {
			share := tc.share
			if share == 0 {
				share = defaultShare
			}
			if per := tc.rate / float64(got); per > share*float64(tc.limit)/tc.window.Seconds()+1e-9 {
				t.Errorf("rate %v over %d addresses: %v each, above the share", tc.rate, got, per)
			}
		}
	}
}

func TestLoopbackSources(t *testing.T) {
	t.Parallel()
	got, err := LoopbackSources(256)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 256 || got[0] != "127.0.1.1" || got[253] != "127.0.1.254" || got[254] != "127.0.2.1" || got[255] != "127.0.2.2" {
		t.Errorf("LoopbackSources(256) = %v … %v", got[:3], got[250:])
	}
	seen := map[string]bool{}
	all, err := LoopbackSources(maxLoopbackSources)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		if seen[a] {
			t.Fatalf("%s twice", a)
		}
		seen[a] = true
	}
	if all[len(all)-1] != "127.0.255.254" {
		t.Errorf("last %s", all[len(all)-1])
	}
	if _, err := LoopbackSources(maxLoopbackSources + 1); err == nil {
		t.Error("no error above the maximum")
	}
	if got, _ := LoopbackSources(0); len(got) != 0 {
		t.Errorf("LoopbackSources(0) = %v", got)
	}
}
