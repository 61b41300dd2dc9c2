package analyze

import (
	"slices"
	"testing"

	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// TestWindowSeries: with Config.Charts, each surface's window series is
// its primary's answered requests in send order, each as the verdict's
// model judged it: as Model judges the primary's requests with the
// forged-header probes uncertain; without it there is none.
func TestWindowSeries(t *testing.T) {
	t.Parallel()
	in := simulate(documented(1, 0), quiet)
	rep, err := Analyze(in, Config{Window: synthW, Limits: map[string]int{method.REST: 240, method.MCP: 120}, Charts: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Verdict.Surfaces) != 2 {
		t.Fatalf("%d surfaces, want 2", len(rep.Verdict.Surfaces))
	}
	for i, sv := range rep.Verdict.Surfaces {
		sd := rep.Surfaces[i]
		isForged := func(r *decode.Record) bool { return method.IsForged(in.Tables().Labels(r).Stream) }
		grp, forged := Group{Surface: sv.Surface, Source: sd.Primary, Uncertain: isForged}, 0
		for k := range in.Records {
			r := &in.Records[k]
			if l := in.Tables().Labels(r); l.Surface == sv.Surface && l.Source == sd.Primary {
				grp.Records = append(grp.Records, r)
				if method.IsForged(l.Stream) && (r.Admitted() || r.Refused()) {
					forged++
				}
			}
		}
		var want []WindowPoint
		for _, j := range Model(grp, sv.ExpectedLimit, synthW) {
			r := grp.Records[j.Index]
			want = append(want, WindowPoint{Start: r.Start, Definite: j.Definite, Ambiguous: j.Ambiguous, DefiniteAdmitted: j.DefiniteAdmitted,
				Admitted: r.Admitted(), Refused: r.Refused(), Leak: j.Leak, FalseThrottle: j.FalseThrottle})
		}
		switch {
		case forged == 0:
			t.Errorf("%s: no answered forged-header probe from the primary: the test shows nothing of them", sv.Surface)
		case sd.Window == nil:
			t.Errorf("%s: no window series", sv.Surface)
		case len(want) == 0 || !slices.Equal(sd.Window.Points, want):
			t.Errorf("%s: %d points, want the %d Model judges", sv.Surface, len(sd.Window.Points), len(want))
		}
	}
	for i, sd := range judge(in).Surfaces {
		if sd.Window != nil {
			t.Errorf("surface %d: a window series kept unasked", i)
		}
	}
}
