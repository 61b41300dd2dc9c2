package main

import (
	"testing"

	"github.com/connectbyjbrh/ratecheck/analyze"
)

// TestAllAbsent: a run stopped by errors is a target without the API when
// a surface proved it absent and no other surface answered anything else;
// a surface that answered (admitted, refused or any other answer) keeps the
// target's failure the story.
func TestAllAbsent(t *testing.T) {
	t.Parallel()
	absent := analyze.SurfaceDetail{Absent: true, OtherAnswers: 144, Faults: 121}
	silent := analyze.SurfaceDetail{Faults: 152}                 // every request a transport error
	answering := analyze.SurfaceDetail{Admitted: 3, Faults: 149} // the API there, failing
	for _, tt := range []struct {
		name     string
		surfaces []analyze.SurfaceDetail
		want     bool
	}{
		{"both absent", []analyze.SurfaceDetail{absent, absent}, true},
		{"one absent, the other silent (a listen backlog dropped its burst)", []analyze.SurfaceDetail{absent, silent}, true},
		{"one absent, the other answering", []analyze.SurfaceDetail{absent, answering}, false},
		{"both silent", []analyze.SurfaceDetail{silent, silent}, false},
		{"none judged", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := allAbsent(&analyze.Report{Surfaces: tt.surfaces}); got != tt.want {
				t.Errorf("allAbsent = %v, want %v", got, tt.want)
			}
		})
	}
}
