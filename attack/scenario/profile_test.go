package scenario

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// TestBadProfiles checks the exact message of every malformed profile under
// testdata/bad against testdata/bad/messages.golden (refresh with -update).
func TestBadProfiles(t *testing.T) {
	paths, _ := filepath.Glob("testdata/bad/*.yaml")
	var got strings.Builder
	for _, p := range paths {
		_, err := LoadProfile(p)
		if err == nil {
			t.Errorf("%s: loaded without error", p)
			continue
		}
		got.WriteString(err.Error() + "\n")
	}
	golden := "testdata/bad/messages.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("messages differ (-want +got):\n%s", diff)
	}
}

func TestParseSpanAndRate(t *testing.T) {
	const w = 4 * time.Second
	spans := map[string]time.Duration{"1.1w": 4400 * time.Millisecond, "0.02w": 80 * time.Millisecond, "500ms": 500 * time.Millisecond, "0": 0}
	for in, want := range spans {
		s, err := ParseSpan(in)
		if err != nil || s.In(w) != want {
			t.Errorf("ParseSpan(%q).In(4s) = %v, %v; want %v", in, s.In(w), err, want)
		}
	}
	rates := map[string]float64{"100/s": 100, "6000/m": 100, "216/w": 54, "10/500ms": 20, "7": 7}
	for in, want := range rates {
		r, err := ParseRate(in)
		if err != nil || r.PerSecond(w) != want {
			t.Errorf("ParseRate(%q).PerSecond(4s) = %v, %v; want %v", in, r.PerSecond(w), err, want)
		}
	}
	for _, bad := range []string{"w", "-1w", "soon", "1/x", "/s", "-5/s"} {
		if _, err := ParseRate(bad); err == nil {
			if _, err := ParseSpan(bad); err == nil {
				t.Errorf("%q parsed as a rate and a span", bad)
			}
		}
	}
}

// TestProfileSourceRanges: a profile's sources, and a stream's, may be
// ranges and prefixes, IPv4 and IPv6; once loaded each is its addresses in
// the pool's order and canonical form, so the stream's rate is split over
// every one of them.
func TestProfileSourceRanges(t *testing.T) {
	t.Parallel()
	p, err := ParseProfile("ranges.yaml", []byte(`policy: {surface: rest}
sources: [10.1.0.5, 198.18.0.0/30, "2001:DB8:2::10-2001:db8:2::12"]
streams:
  - surface: rest
    requests: [{path: /api/public/search}]
    pacer: {type: constant, rate: 6/s, count: 12}
  - name: own
    surface: rest
    sources: [2001:db8:2::/126]
    requests: [{path: /api/public/search}]
    pacer: {type: constant, rate: 6/s, count: 12}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.1.0.5", "198.18.0.1", "198.18.0.2", "2001:db8:2::10", "2001:db8:2::11", "2001:db8:2::12"}
	if diff := cmp.Diff(want, p.StreamSources(&p.Streams[0])); diff != "" {
		t.Errorf("the profile's sources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"2001:db8:2::1", "2001:db8:2::2", "2001:db8:2::3"}, p.StreamSources(&p.Streams[1])); diff != "" {
		t.Errorf("the stream's own sources (-want +got):\n%s", diff)
	}
}

// TestProfileOfContract: a stream that names a contract's route sends the
// route's request on the route's surface, and one that sends as an
// identity carries the identity's credentials once bound, read from the
// environment or the file the contract names, never before (so the
// profile itself holds no credential to refuse or archive).
func TestProfileOfContract(t *testing.T) {
	t.Parallel()
	p, err := ParseProfile("testdata/p.yaml", []byte(`policy: {surface: both}
contract: contracts/api.yaml
streams:
  - {name: a, route: search, as: key-a, pacer: {type: constant, rate: 5/s, count: 1}}
  - {name: b, route: search, as: key-b, pacer: {type: constant, rate: 5/s, count: 1}}
  - {name: anon, route: ask, pacer: {type: constant, rate: 5/s, count: 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	search := Request{Path: "/v1/search", Query: map[string]string{"q": "rate limits"}}
	ask := Request{RPC: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits"}}}
	for i, want := range []struct {
		surface string
		req     Request
	}{{"rest", search}, {"rest", search}, {"mcp", ask}} {
		if s := p.Streams[i]; s.Surface != want.surface || !cmp.Equal(s.Requests, []Request{want.req}) {
			t.Errorf("stream %s: surface %s, requests %+v; want %s, %+v", s.Name, s.Surface, s.Requests, want.surface, want.req)
		}
	}
	if names := p.HeaderCredentials(); len(names) != 0 {
		t.Errorf("the profile holds credentials %q before its identities are bound", names)
	}
	if err := p.BindIdentities(func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), `stream a: identity "key-a": header X-Api-Key reads ${RC_TEST_KEY_A}, which is empty or not set`) {
		t.Errorf("binding with RC_TEST_KEY_A unset: %v", err)
	}
	env := func(k string) (string, bool) {
		return map[string]string{"RC_TEST_KEY_A": "secret-a"}[k], k == "RC_TEST_KEY_A"
	}
	if err := p.BindIdentities(env); err != nil {
		t.Fatal(err)
	}
	for i, want := range []map[string]string{{"X-Api-Key": "secret-a"}, {"X-Api-Key": "secret-b"}, nil} {
		if got := p.Streams[i].Requests[0].Headers; !cmp.Equal(got, want) {
			t.Errorf("stream %s sends headers %v, want %v", p.Streams[i].Name, got, want)
		}
	}
}
