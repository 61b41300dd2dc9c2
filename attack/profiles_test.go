package attack

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/attack/schedule"
)

// TestShippedProfiles loads every profile under profiles/ strictly.
func TestShippedProfiles(t *testing.T) {
	paths, _ := filepath.Glob("../profiles/*.yaml")
	if len(paths) < 6 {
		t.Fatalf("found %d shipped profiles, want at least 6", len(paths))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			prof, err := scenario.LoadProfile(p)
			if err != nil {
				t.Fatal(err)
			}
			if prof.Policy.Window.In(0) != time.Minute {
				t.Errorf("policy window %v, want the contract's 60s", prof.Policy.Window)
			}
			plan := Plan{Profile: prof, Window: 4 * time.Second}
			if d := plan.Duration(); d < 0 || d > 3*4*time.Second || schedule.Count(prof.Streams[0].Pacer.Schedule(4*time.Second)) == 0 {
				t.Errorf("planned duration %v at a 4s window, want at most 3 windows and some hits", plan.Duration())
			}
		})
	}
}
