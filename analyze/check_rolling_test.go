package analyze

import (
	"strings"
	"testing"
	"time"
)

// TestRollingDetail: the rolling check's evidence says counts with the
// right plural, no empty parentheses, and for a token bucket its refill
// rather than a window it does not have.
func TestRollingDetail(t *testing.T) {
	for _, tt := range []struct {
		name       string
		c          rollingCheck
		sd         SurfaceDetail
		want, lack []string
	}{
		{"leaks only", rollingCheck{judgedN: 10, leaks: []string{"at 1s admitted with 10 others surely in its window"}},
			SurfaceDetail{Leaks: 1, Fit: Fit{Best: Candidate{Family: familySlidingLog, Limit: 10, Window: time.Second}, EffectiveWindow: time.Second}},
			[]string{"1 leak (at 1s", "0 false throttles against"}, []string{"()", "1 leaks"}},
		{"one request", rollingCheck{judgedN: 1},
			SurfaceDetail{Fit: Fit{Best: Candidate{Family: familySlidingLog, Limit: 10, Window: time.Second}, EffectiveWindow: time.Second}},
			[]string{"only 1 request from 127.0.0.1 was admitted or refused"}, []string{"1 requests"}},
		{"a window's worth", rollingCheck{judgedN: 11},
			SurfaceDetail{Fit: Fit{Best: Candidate{Family: familySlidingLog, Limit: 10, Window: time.Second}, EffectiveWindow: time.Second}},
			[]string{"11 requests from 127.0.0.1: 0 leaks, 0 false throttles (0 indeterminate); effective window 1s"}, []string{"()"}},
		{"token bucket", rollingCheck{judgedN: 50},
			SurfaceDetail{Fit: Fit{Best: Candidate{Family: familyTokenBucket, Limit: 240, Window: 80 * time.Second}, EffectiveWindow: 30 * time.Second}},
			[]string{"token bucket of 240 refilling one token every 333ms (240 per 1m20s)"}, []string{"effective window", "333.33"}},
		// nginx's rate=15r/m burst=239 at W = 4s: refilled 240 in 240 windows
		{"a slowly refilled token bucket", rollingCheck{judgedN: 50},
			SurfaceDetail{Fit: Fit{Best: Candidate{Family: familyTokenBucket, Limit: 240, Window: 4 * time.Second, Refill: 960 * time.Second}, EffectiveWindow: 30 * time.Second}},
			[]string{"token bucket of 240 refilling one token every 4s (240 per 16m0s): a burst of 240, then one every 4s"}, []string{"16.7ms", "effective window"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sd := tt.sd
			e := &evidence{surfaceRun: &surfaceRun{}, sd: &sd, primary: "127.0.0.1"}
			e.L, e.W = 10, time.Second
			_, detail := tt.c.judge(e)
			for _, w := range tt.want {
				if !strings.Contains(detail, w) {
					t.Errorf("%q lacks %q", detail, w)
				}
			}
			for _, l := range tt.lack {
				if strings.Contains(detail, l) {
					t.Errorf("%q holds %q", detail, l)
				}
			}
		})
	}
}
