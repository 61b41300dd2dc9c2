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

// TestVerifyProfileOfAKeyedLimit: a contract's limit counted by an API key
// sends its probes as the first key, labelled by it; its isolation burst
// and rebound as the second key from the limit address, carrying the
// second key's request alone (none of the first identity's headers); and
// ten of the first key from the second address among the spoof probes.
// A limit over two routes sends ten probes to the second among them.
func TestVerifyProfileOfAKeyedLimit(t *testing.T) {
	t.Parallel()
	first := Request{Path: "/v1/search", Headers: map[string]string{"X-Api-Key": "k1", "X-Team": "t1"}}
	second := Request{Path: "/v1/search", Headers: map[string]string{"X-Api-Key": "k2"}}
	list := Request{Path: "/v1/items", Headers: first.Headers}
	p, err := VerifyProfile(VerifyOptions{Limits: true, Isolation: true, Surfaces: []string{"search"}, Sources: []string{"127.0.0.1", "127.0.0.2"},
		Named: map[string]NamedLimit{"search": {Request: first, Wire: method.REST, Quota: 30, Keys: [2]string{"key-1", "key-2"}, Second: second, Others: []Request{list}}}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range p.Streams {
		seen[s.Name] = true
		req := s.Requests[0]
		switch s.Name {
		case method.StreamIsolation, method.StreamRebound:
			if s.Key != "key:key-2" || s.Sources[0] != "127.0.0.1" || !cmp.Equal(req.Headers, second.Headers) {
				t.Errorf("%s: label %q from %v with %v; want key:key-2 from 127.0.0.1 with the second key's headers alone", s.Name, s.Key, s.Sources, req.Headers)
			}
		case method.StreamSpoofAddress:
			if s.Key != "key:key-1" || s.Sources[0] != "127.0.0.2" || req.Headers["X-Api-Key"] != "k1" || s.Pacer.Count != 10 {
				t.Errorf("%s: label %q from %v with %v, %d probes; want 10 as key:key-1 from 127.0.0.2", s.Name, s.Key, s.Sources, req.Headers, s.Pacer.Count)
			}
		case method.SharedRouteStream(1):
			if s.Key != "key:key-1" || req.Path != "/v1/items" || s.Pacer.Count != 10 {
				t.Errorf("%s: label %q to %s, %d probes; want 10 as key:key-1 to /v1/items", s.Name, s.Key, req.Path, s.Pacer.Count)
			}
		default:
			if s.Key != "key:key-1" || req.Headers["X-Api-Key"] != "k1" {
				t.Errorf("%s: label %q with %v; want key:key-1 with the first key", s.Name, s.Key, req.Headers)
			}
		}
	}
	for _, name := range []string{method.StreamIsolation, method.StreamRebound, method.StreamSpoofAddress, method.SharedRouteStream(1), method.StreamSpoofControl} {
		if !seen[name] {
			t.Errorf("no %s stream in the plan", name)
		}
	}
}
