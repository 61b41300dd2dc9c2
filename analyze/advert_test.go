package analyze

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseAdvert(t *testing.T) {
	tests := []struct {
		name, lines                  string
		quota, window, remaining     string // "field=n", empty: none
		reset, retryAfter, malformed string
	}{
		{name: "current draft, as express-rate-limit's draft-8 mode sends", lines: "Ratelimit-Policy: \"default\";q=240;w=60\nRatelimit: \"default\";r=12;t=30\n",
			quota: "RateLimit-Policy q=240", window: "RateLimit-Policy w=60", remaining: "RateLimit r=12", reset: "RateLimit t=30"},
		{name: "spaces after semicolons and a partition key", lines: "Ratelimit-Policy: \"100-in-1min\"; q=100; w=60; pk=:cHsdsRa894==:\nRatelimit: \"100-in-1min\"; r=99; t=60\n",
			quota: "RateLimit-Policy q=100", window: "RateLimit-Policy w=60", remaining: "RateLimit r=99", reset: "RateLimit t=60"},
		{name: "two policies: the least remaining", lines: "Ratelimit: \"permin\";r=5;t=10, \"perhr\";r=0;t=3000\n",
			remaining: "RateLimit r=0", reset: "RateLimit t=3000"},
		{name: "draft 6", lines: "Ratelimit-Limit: 10, 10;w=1\nRatelimit-Remaining: 4\nRatelimit-Reset: 7\n",
			quota: "RateLimit-Limit=10", remaining: "RateLimit-Remaining=4", reset: "RateLimit-Reset=7"},
		{name: "draft 7", lines: "Ratelimit-Policy: 100;w=60\nRatelimit: limit=100, remaining=25, reset=5\n",
			quota: "RateLimit-Policy=100", window: "RateLimit-Policy w=60", remaining: "RateLimit remaining=25", reset: "RateLimit reset=5"},
		{name: "X-RateLimit, as go-chi/httprate sends", lines: "X-Ratelimit-Limit: 240\nX-Ratelimit-Remaining: -1\nX-Ratelimit-Reset: 1764590406\nRetry-After: 60\n",
			quota: "X-RateLimit-Limit=240", remaining: "X-RateLimit-Remaining=-1", reset: "X-RateLimit-Reset 2025-12-01T12:00:06Z", retryAfter: "Retry-After=60"},
		{name: "Retry-After as an HTTP-date", lines: "Retry-After: Mon, 05 Aug 2019 09:27:05 GMT\n", retryAfter: "Retry-After 2019-08-05T09:27:05Z"},
		{name: "malformed fields are named, not read", lines: "Ratelimit-Policy: default;q=240\nRatelimit: \"default\";r=-3\nRetry-After: soon\n",
			malformed: "RateLimit-Policy,RateLimit,Retry-After"},
		{name: "nothing", lines: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := parseAdvert(tt.lines)
			val := func(v adValue) string {
				if v.field == "" {
					return ""
				}
				return v.field + "=" + strconv.FormatInt(v.n, 10)
			}
			mom := func(m adMoment) string {
				if m.field == "" {
					return ""
				}
				return m.String()
			}
			var bad []string
			for _, m := range a.malformed {
				bad = append(bad, m[:strings.Index(m, ":")])
			}
			got := []string{val(a.quota), val(a.window), val(a.remaining), mom(a.reset), mom(a.retryAfter), strings.Join(bad, ",")}
			want := []string{tt.quota, tt.window, tt.remaining, tt.reset, tt.retryAfter, tt.malformed}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d: got %q, want %q (malformed %v)", i, got[i], want[i], a.malformed)
				}
			}
		})
	}
}

// FuzzParseAdvert: whatever a target sends, the parser returns (a
// malformed field is named, never a crash) and names only fields it was
// given.
func FuzzParseAdvert(f *testing.F) {
	for _, s := range []string{
		"Ratelimit-Policy: \"default\";q=240;w=60\nRatelimit: \"default\";r=12;t=30\n",
		"Ratelimit-Limit: 10, 10;w=1\nRatelimit-Remaining: 4\nRatelimit-Reset: 7\n",
		"Ratelimit: limit=100, remaining=25, reset=5\n",
		"X-Ratelimit-Limit: 240\nX-Ratelimit-Remaining: -1\nX-Ratelimit-Reset: 1764590406.5\n",
		"Retry-After: Mon, 05 Aug 2019 09:27:05 GMT\n",
		"Ratelimit-Policy: (\"a\" 1);q=1, ?1;w=@12, %\"x\";q=1.5\nRatelimit: \"a\";r=:AA==:\n",
		"Ratelimit: \"a\\\"b\";r=1, \n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lines string) {
		a := parseAdvert(lines)
		if len(a.fields) > len(fieldOrder) || len(a.malformed) > len(a.fields) {
			t.Fatalf("%d fields, %d malformed of %q", len(a.fields), len(a.malformed), lines)
		}
		for _, m := range a.malformed {
			if !utf8.ValidString(m) && utf8.ValidString(lines) {
				t.Fatalf("malformed note %q is not UTF-8", m)
			}
		}
		if a.remaining.field != "" && a.remaining.n < 0 && a.remaining.field != "X-RateLimit-Remaining" {
			t.Fatalf("negative %s from %q", a.remaining.field, lines)
		}
	})
}
