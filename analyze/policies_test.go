package analyze

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestPolicies: the quota policies an answer advertised, read as
// draft-ietf-httpapi-ratelimit-headers writes them (§3: a List of String
// items with q, w, qu, pk) and as drafts 6–7 and X-RateLimit-* did; a
// field that does not parse is named, never read as a policy.
func TestPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		header    http.Header
		want      []Policy
		malformed string
	}{
		{"the current draft, one policy", http.Header{"Ratelimit-Policy": {`"default";q=100;w=10`}},
			[]Policy{{Name: "default", Quota: 100, Window: 10 * time.Second, Unit: "requests", Field: "RateLimit-Policy"}}, ""},
		{"two policies, a partition key and a unit", http.Header{"Ratelimit-Policy": {`"burst";q=10;w=1;pk=:cHJvamVjdA==:, "day";q=5000;w=86400;qu="requests"`, `"bytes";q=1000000;qu="content-bytes"`}},
			[]Policy{{Name: "burst", Quota: 10, Window: time.Second, Unit: "requests", Partitioned: true, Field: "RateLimit-Policy"},
				{Name: "day", Quota: 5000, Window: 24 * time.Hour, Unit: "requests", Field: "RateLimit-Policy"},
				{Name: "bytes", Quota: 1000000, Unit: "content-bytes", Field: "RateLimit-Policy"}}, ""},
		{"an item without q is named, the others read", http.Header{"Ratelimit-Policy": {`"a";w=10, "b";q=5;w=1`}},
			[]Policy{{Name: "b", Quota: 5, Window: time.Second, Unit: "requests", Field: "RateLimit-Policy"}}, `RateLimit-Policy item 1: policy "a": want the parameter q`},
		{"draft 7's RateLimit-Limit with w", http.Header{"Ratelimit-Limit": {"100;w=60"}, "Ratelimit-Remaining": {"99"}},
			[]Policy{{Quota: 100, Window: time.Minute, Unit: "requests", Field: "RateLimit-Limit"}}, ""},
		{"X-RateLimit-Limit: a quota, no window", http.Header{"X-Ratelimit-Limit": {"60"}, "X-Ratelimit-Remaining": {"59"}},
			[]Policy{{Quota: 60, Unit: "requests", Field: "X-RateLimit-Limit"}}, ""},
		{"a policy that is not a structured field", http.Header{"Ratelimit-Policy": {`q=100, w=ten`}},
			nil, "RateLimit-Policy"},
		{"nothing advertised", http.Header{"Content-Type": {"application/json"}}, nil, ""},
	}
	for _, tt := range tests {
		got, malformed := Policies(tt.header)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
		switch joined := strings.Join(malformed, "; "); {
		case tt.malformed == "" && joined != "":
			t.Errorf("%s: malformed %q, want none", tt.name, joined)
		case !strings.Contains(joined, tt.malformed):
			t.Errorf("%s: malformed %q, want it to say %q", tt.name, joined, tt.malformed)
		}
	}
}
