package scenario

import (
	"testing"

	"github.com/connectbyjbrh/ratecheck/method"
)

// TestVerifyProfileProbesOnlyTheSurfacesVerified: verify --surfaces mcp
// sends no REST request, the failure-table rows included (a REST row
// against an MCP-only server would make up a REST verdict).
func TestVerifyProfileProbesOnlyTheSurfacesVerified(t *testing.T) {
	for _, surfaces := range [][]string{{method.MCP}, {method.REST}, nil} {
		p, err := VerifyProfile(VerifyOptions{RESTLimit: 240, MCPLimit: 120, Limits: true, Isolation: true, Contract: true, Surfaces: surfaces,
			Sources: []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, s := range p.Streams {
			seen[s.Surface] = true
		}
		want := map[string]bool{method.REST: true, method.MCP: true}
		if surfaces != nil {
			want = map[string]bool{surfaces[0]: true}
		}
		if len(seen) != len(want) || !seen[method.REST] && want[method.REST] || !seen[method.MCP] && want[method.MCP] {
			t.Errorf("--surfaces %v: the plan probes %v", surfaces, seen)
		}
	}
}
