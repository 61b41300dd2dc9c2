package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/method"
)

// TestIndependenceWeighsTheObservedLimit: a refusal the other surface's
// traffic could explain, that no candidate replayed on send times refuses,
// is no proof of a shared counter where the address showed a limit below
// the documented one and had that many of its own possibly in the
// window: against `serve --mcp-limit 100` MCP's independence failed 2 of
// 6 runs so ("the surfaces share a counter"), on a request sent as the
// log's oldest aged out.
func TestIndependenceWeighsTheObservedLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		obs  int
		own  int32
		more map[int32]int
		want string
	}{
		{"a lower limit with as many of its own", 100, 100, nil, Inconclusive},
		{"past maxExplained too", 100, 100, map[int32]int{101: 3}, Inconclusive},
		{"fewer of its own than the lower limit", 100, 90, nil, Fail},
		{"one past maxExplained with fewer", 100, 100, map[int32]int{60: 1}, Fail},
		{"the documented limit observed", 120, 110, nil, Fail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &surfaceRun{name: method.MCP, others: []*groupRun{{}}, anyRefused: true, obs: tt.obs, fit: &familyFit{}}
			s.L, s.W = 120, 6*time.Second
			e := &evidence{surfaceRun: s, sd: &SurfaceDetail{}, primary: srcA}
			c := independenceCheck{explained: []int32{5}, own: []int32{tt.own}, moreOwn: tt.more}
			v, d := c.judge(e)
			if v != tt.want {
				t.Errorf("%s, want %s: %s", v, tt.want, d)
			}
			if v == Inconclusive && !strings.Contains(d, "sliding-log") {
				t.Errorf("the limiter of this surface alone is not named: %s", d)
			}
		})
	}
}
