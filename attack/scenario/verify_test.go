package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/google/go-cmp/cmp"
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

// TestVerifyPlanGolden holds verify's probe plan, for the combinations of
// check groups and source counts that differ, to
// testdata/verify-plan.golden (refresh with -update): a change to the
// plan is a change to the method, made on purpose.
func TestVerifyPlanGolden(t *testing.T) {
	var got []byte
	for _, c := range []struct {
		groups  [3]bool
		sources int
	}{
		{[3]bool{true, true, true}, 3}, {[3]bool{true, true, true}, 1},
		{[3]bool{true, true, true}, 0}, {[3]bool{true, true, false}, 2},
		{[3]bool{true, false, false}, 3}, {[3]bool{false, true, false}, 3}, {[3]bool{false, false, true}, 3},
	} {
		p, err := VerifyProfile(VerifyOptions{RESTLimit: 240, MCPLimit: 120, Sources: []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}[:c.sources],
			Limits: c.groups[0], Isolation: c.groups[1], Contract: c.groups[2]})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Streams {
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			got = fmt.Appendf(got, "%v sources=%d %s\n", c.groups, c.sources, b)
		}
	}
	const file = "testdata/verify-plan.golden"
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("verify's plan changed (-want +got):\n%s", d)
	}
}
