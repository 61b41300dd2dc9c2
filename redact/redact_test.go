package redact

import (
	"bytes"
	"fmt"
	"log"
	"net/http"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestIs(t *testing.T) {
	credentials := []string{
		// request headers
		"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "X-API-KEY", "X-Auth-Token", "X-Client-Secret",
		"X-Auth", "X-Session-Id", "X-Session-Token", "X-CSRF-Token", "X-XSRF-TOKEN", "X-Amz-Security-Token",
		"X-Goog-Api-Key", "Ocp-Apim-Subscription-Key", "X-Hub-Signature-256", "X-Amz-Signature", "Idempotency-Key",
		// response headers
		"Set-Cookie", "Set-Cookie2", "WWW-Authenticate", "Proxy-Authenticate", "Authentication-Info", "X-Auth-Secret",
		// query parameters
		"key", "token", "password", "passwd", "pwd", "pass", "secret", "client_secret", "signature", "sig", "jwt",
		"api_key", "apikey", "apiKey", "accessKey", "access_token", "id_token", "refresh_token", "auth", "oauth_token",
		"sessionid", "JSESSIONID", "PHPSESSID", "otp", "hmac", "keys", "X-Key-Id",
	}
	harmless := []string{
		"Keep-Alive", "Keyboard", "keyword", "monkey", "Accept", "Accept-Ranges", "Content-Type", "Content-Length",
		"X-Request-Id", "X-Request-Source", "Mcp-Name", "Mcp-Method", "Mcp-Session-Id", "MCP-Protocol-Version",
		"Last-Event-ID", "Origin", "Retry-After", "RateLimit-Policy", "X-RateLimit-Remaining", "Vary", "ETag",
		"q", "limit", "page", "cursor", "author", "Authority", "design", "signal", "passenger", "bypass", "code", "",
	}
	for _, n := range credentials {
		if !is(n) {
			t.Errorf("Is(%q) = false, want true", n)
		}
	}
	for _, n := range harmless {
		if is(n) {
			t.Errorf("Is(%q) = true, want false", n)
		}
	}
}

func TestWords(t *testing.T) {
	for in, want := range map[string][]string{
		"X-Client-Secret":     {"x", "client", "secret"},
		"clientSecret":        {"client", "secret"},
		"XAuthToken":          {"x", "auth", "token"},
		"api_key.v2":          {"api", "key", "v2"},
		"JSESSIONID":          {"jsessionid"},
		"X-Hub-Signature-256": {"x", "hub", "signature", "256"},
		"--":                  nil,
	} {
		if diff := cmp.Diff(want, words(in)); diff != "" {
			t.Errorf("words(%q) (-want +got):\n%s", in, diff)
		}
	}
}

func TestHeaderAndNames(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer S3CRET"}, "X-Client-Secret": {"S3CRET"}, "Accept": {"a"}, "Mcp-Session-Id": {"abc"}}
	got := Header(h)
	want := http.Header{"Authorization": {redacted}, "X-Client-Secret": {redacted}, "Accept": {"a"}, "Mcp-Session-Id": {"abc"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Header (-want +got):\n%s", diff)
	}
	if h.Get("Authorization") != "Bearer S3CRET" {
		t.Error("Header changed its argument")
	}
	if diff := cmp.Diff([]string{"Authorization", "X-Client-Secret"}, Names(h)); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestResult(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://h:1/api/public/search?q=rate", "http://h:1/api/public/search?q=rate"},
		{"http://h:1/a?q=x&api_key=S3CRET", "http://h:1/a?api_key=%5Bredacted%5D&q=x"},
		{"http://h:1/a?Token=S3CRET&sig=S3CRET", "http://h:1/a?Token=%5Bredacted%5D&sig=%5Bredacted%5D"},
		{"http://h:1/a?jwt=S3CRET", "http://h:1/a?jwt=%5Bredacted%5D"},
		{"http://u:S3CRET@h:1/a", "http://u:%5Bredacted%5D@h:1/a"},
		{"http://u@h:1/a?monkey=1", "http://u@h:1/a?monkey=1"},
		{"http://h:1/a#S3CRET", "http://h:1/a#%5Bredacted%5D"},
		{"http://h:1/%zz?key=S3CRET", redacted},
		{"http://h:1/a?key=%zzS3CRET", redacted},
	} {
		r := vegeta.Result{URL: tc.url, Headers: http.Header{
			"Set-Cookie": {"s=S3CRET"}, "Www-Authenticate": {"Bearer realm=S3CRET"}, "X-Auth-Secret": {"S3CRET"}, "Content-Type": {"a"}}}
		Result(&r)
		if r.URL != tc.want {
			t.Errorf("%s: redacted to %s, want %s", tc.url, r.URL, tc.want)
		}
		if fmt.Sprint(r.Headers) != fmt.Sprint(http.Header{"Set-Cookie": {redacted}, "Www-Authenticate": {redacted}, "X-Auth-Secret": {redacted}, "Content-Type": {"a"}}) {
			t.Errorf("headers %v", r.Headers)
		}
	}
}

func TestCheckBaseURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:8080":               "",
		"https://api.example.com/v2/":         "",
		"http://127.0.0.1:8080/?token=S3CRET": `"http://127.0.0.1:8080/": a base URL has no query or fragment`,
		"http://h/?":                          `"http://h/": a base URL has no query or fragment`,
		"http://h/#S3CRET":                    `"http://h/": a base URL has no query or fragment`,
		"http://admin:S3CRET@h:1?x=S3CRET":    `"http://h:1" carries credentials (user:password@)`,
		"ftp://h?S3CRET":                      `"ftp://h": want a base URL such as http://127.0.0.1:8080`,
		"http:S3CRET":                         `"http:": want a base URL`,
		"/api?S3CRET":                         `"/api": want a base URL`,
		"http://h/\x1b[31m?S3CRET":            "not a URL",
		"http://h/%zz":                        "not a URL",
	} {
		err := CheckBaseURL(raw)
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckBaseURL(%q) = %v, want nil", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("CheckBaseURL(%q) = %v, want %q", raw, err, want)
		case err != nil && (strings.Contains(err.Error(), "S3CRET") || strings.ContainsAny(err.Error(), "\x1b")):
			t.Errorf("CheckBaseURL(%q) echoes it: %v", raw, err)
		}
	}
}

func TestText(t *testing.T) {
	// What net/http logs when a hostile target answers on an idle connection.
	unsolicited := fmt.Sprintf("Unsolicited response received on idle HTTP channel starting with %q; err=%v",
		"HTTP/1.1 200 OK\r\nSet-Cookie: session=S3CRET; Path=/\r\nX-Auth-Secret: \"S3CRET\"\r\nContent-Length: 0\r\n\r\n", nil)
	for in, want := range map[string]string{
		unsolicited:                    `Unsolicited response received on idle HTTP channel starting with "HTTP/1.1 200 OK\r\nSet-Cookie: [redacted]\r\nX-Auth-Secret: [redacted]\r\nContent-Length: 0\r\n\r\n"; err=<nil>`,
		"Authorization: Bearer S3CRET": "Authorization: [redacted]",
		"a\nWWW-Authenticate: Basic realm=\"S3CRET\"\nb":      "a\nWWW-Authenticate: [redacted]\nb",
		`Get "http://h/a?q=1&token=S3CRET&jwt=S3CRET": EOF`:   `Get "http://h/a?q=1&token=[redacted]&jwt=[redacted]": EOF`,
		"dial http://admin:S3CRET@h:1/: refused":              "dial http://admin:[redacted]@h:1/: refused",
		"sent bearer S3CRET.x-y to h":                         "sent bearer [redacted] to h",
		`cookie sid="S3CRET" and session_id=S3CRET;x=1`:       `cookie sid="S3CRET" and session_id=[redacted];x=1`,
		"Content-Type: text/plain, limit=5, window 60s: fine": "Content-Type: text/plain, limit=5, window 60s: fine",
	} {
		if got := text(in); got != want {
			t.Errorf("Text(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestWriterRedactsTheStandardLog: the standard logger, routed through
// Writer as main does, writes net/http's unsolicited-response line without
// the cookie it quotes.
func TestWriterRedactsTheStandardLog(t *testing.T) {
	var buf bytes.Buffer
	l := log.New(Writer(&buf), "", log.LstdFlags)
	l.Printf("Unsolicited response received on idle HTTP channel starting with %q; err=%v", "HTTP/1.1 200 OK\r\nSet-Cookie: a=S3CRET\r\n\r\n", nil)
	if out := buf.String(); strings.Contains(out, "S3CRET") || !strings.Contains(out, "Set-Cookie: [redacted]") || !strings.HasSuffix(out, "\n") {
		t.Errorf("logged %q", out)
	}
}

// FuzzText: a credential header or pair, with any value, quoted or not,
// inside any text, never survives Text.
func FuzzText(f *testing.F) {
	f.Add("HTTP/1.1 200 OK", "Set-Cookie", "session=S3CRETVALUE; Path=/", true)
	f.Add("GET /", "X-Api-Key", "S3CRETVALUE", false)
	f.Add("x", "jwt", "eyJhbGciOi.S3CRET", true)
	f.Fuzz(func(t *testing.T, before, name, value string, quote bool) {
		// A name holds none of the delimiters of a header line or a query
		// (it could not be one), nor a space.
		if !is(name) || strings.ContainsAny(name, ":=&;,?#/<>'\"\\") || strings.ContainsFunc(name, unicode.IsSpace) || len(value) < 8 || strings.ContainsAny(value, "\r\n") ||
			strings.Contains(before, value) || strings.Contains(name, value) || strings.Contains(redacted, value) {
			return
		}
		for _, line := range []string{
			before + "\r\n" + name + ": " + value + "\r\n\r\n", // a header
			before + "?a=1&" + name + "=" + value,              // a query parameter
		} {
			if strings.HasSuffix(line, value) && strings.ContainsAny(value, "&;, \t\"'\\<>") {
				continue // a pair's value ends at a separator: only its first part is the credential's
			}
			in := line
			if quote {
				in = fmt.Sprintf("logged %q; err=<nil>", line)
			}
			if out := text(in); strings.Contains(out, value) || strings.Contains(out, fmt.Sprintf("%q", value)[1:len(fmt.Sprintf("%q", value))-1]) {
				t.Fatalf("Text(%q) = %q keeps %q", in, out, value)
			}
		}
	})
}
