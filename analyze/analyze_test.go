package analyze

import "testing"

// TestAPIAbsent: a run stopped by errors is a target without the API when
// a surface proved it absent and no other surface answered anything else;
// a surface that answered (admitted, refused or any other answer) keeps the
// target's failure the story.
func TestAPIAbsent(t *testing.T) {
	t.Parallel()
	absent := SurfaceDetail{Absent: true, OtherAnswers: 144, Faults: 121}
	silent := SurfaceDetail{Faults: 152}                 // every request a transport error
	answering := SurfaceDetail{Admitted: 3, Faults: 149} // the API there, failing
	for _, tt := range []struct {
		name     string
		surfaces []SurfaceDetail
		want     bool
	}{
		{"both absent", []SurfaceDetail{absent, absent}, true},
		{"one absent, the other silent (a listen backlog dropped its burst)", []SurfaceDetail{absent, silent}, true},
		{"one absent, the other answering", []SurfaceDetail{absent, answering}, false},
		{"both silent", []SurfaceDetail{silent, silent}, false},
		{"none judged", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := (&Report{Surfaces: tt.surfaces}).APIAbsent(); got != tt.want {
				t.Errorf("APIAbsent = %v, want %v", got, tt.want)
			}
		})
	}
}
