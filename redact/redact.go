// Package redact is ratecheck's one credential policy: which header and
// query parameter names carry credentials, and how their values are
// replaced by redacted wherever the tool would write them (archives,
// run.json, reports, verdicts, terminal output and Go's own log).
//
// The contract's surfaces authenticate nothing, so a credential sent to them
// only leaks. Commands refuse to send one without --allow-credentials (see
// [Names] and [ParamNames]), and even then never write its value.
//
// # Names
//
// A name is split into lowercase words at every character that is not a
// letter or digit and at camelCase humps ("X-Client-Secret" and
// "clientSecret" are both client, secret). It names a credential when one of
// its words
//
//   - contains secret, token, password, passwd, passphrase, cookie,
//     session, sessid, auth, credential, signature, bearer, csrf, xsrf or
//     hmac (so Authorization, WWW-Authenticate, Set-Cookie, X-Auth,
//     X-Session-Id, JSESSIONID, access_token and X-Amz-Signature do);
//   - is jwt, sig, pwd, pass, otp, key or keys;
//   - or ends in key (apikey, accessKey, Ocp-Apim-Subscription-Key).
//
// The same list serves headers and query parameters: a query parameter is
// as readable in an access log as a header.
//
// # False positives
//
// Matching words, not substrings of the whole name, keeps most harmless
// names out: Keep-Alive, Keyboard, keyword, design and signal match
// nothing. The rest are handled in the safe direction: a harmless name that
// matches (Idempotency-Key, Sec-WebSocket-Key, cache_key) is treated as a
// credential — it needs --allow-credentials and its value is written as
// redacted — because refusing a harmless header costs one flag while
// writing a secret cannot be undone. Only these are exempt:
//
//   - words that merely contain a pattern: author, authors, authored,
//     authority (not authorization), and the English words ending in key
//     (monkey, donkey, hockey, jockey, turkey, whiskey, turnkey, hotkey);
//   - Mcp-Session-Id: the MCP revision the contract tests has no sessions,
//     the MCP specification forbids servers to authenticate by session ID,
//     and the failure-table profile sends one on purpose to show it is
//     ignored.
package redact

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// redacted replaces every credential value the tool would otherwise write.
const redacted = "[redacted]"

// Patterns of the policy (see the package documentation).
var (
	containing = []string{"secret", "token", "password", "passwd", "passphrase", "cookie", "session", "sessid",
		"auth", "credential", "signature", "bearer", "csrf", "xsrf", "hmac"}
	whole    = []string{"jwt", "sig", "pwd", "pass", "otp", "key", "keys"}
	notAuth  = []string{"author", "authors", "authored", "authority"}
	notKey   = []string{"monkey", "donkey", "hockey", "jockey", "turkey", "whiskey", "turnkey", "hotkey"}
	notNames = []string{"mcp-session-id"}
)

// words splits name into lowercase words at non-alphanumerics and at
// camelCase humps: "XAuthToken" is x, auth, token.
func words(name string) []string {
	var out []string
	rs := []rune(name)
	start := -1
	for i, r := range rs {
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		if !alnum {
			if start >= 0 {
				out = append(out, strings.ToLower(string(rs[start:i])))
				start = -1
			}
			continue
		}
		hump := start >= 0 && unicode.IsUpper(r) &&
			(unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) || i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsLower(rs[i+1]))
		if hump {
			out = append(out, strings.ToLower(string(rs[start:i])))
			start = -1
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(string(rs[start:])))
	}
	return out
}

// is reports whether a header or query parameter name names a credential
// (see the package documentation for the list and its exemptions).
func is(name string) bool {
	if slices.Contains(notNames, strings.ToLower(name)) {
		return false
	}
	for _, w := range words(name) {
		if slices.Contains(whole, w) || strings.HasSuffix(w, "key") && !slices.Contains(notKey, w) {
			return true
		}
		for _, p := range containing {
			if strings.Contains(w, p) && !(p == "auth" && slices.Contains(notAuth, w)) {
				return true
			}
		}
	}
	return false
}

// Names returns the names of the credential headers of h, sorted.
func Names(h http.Header) []string {
	var names []string
	for k := range h {
		if is(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// ParamNames returns the names of the credential parameters of q, sorted.
func ParamNames(q url.Values) []string {
	var names []string
	for k := range q {
		if is(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// Header returns a copy of h in which the values of every credential
// header are redacted.
func Header(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if is(k) {
			out[k] = []string{redacted}
			continue
		}
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// URL returns raw with its password, the values of its credential query
// parameters and its fragment replaced by redacted. A URL that does not
// parse is replaced whole: it cannot be shown to be free of credentials.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redacted
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), redacted)
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return redacted
		}
		if names := ParamNames(q); len(names) > 0 {
			for _, k := range names {
				q[k] = []string{redacted}
			}
			u.RawQuery = q.Encode()
		}
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = redacted, ""
	}
	return u.String()
}

// Result removes from r, before it is archived, every credential value a
// result can carry: response headers such as Set-Cookie, WWW-Authenticate
// or X-Auth-Secret, and the password, credential query parameters and
// fragment of its URL.
func Result(r *vegeta.Result) {
	for k := range r.Headers {
		if is(k) {
			r.Headers = Header(r.Headers)
			break
		}
	}
	if strings.ContainsAny(r.URL, "?@#") {
		r.URL = URL(r.URL)
	}
}

// CheckBaseURL checks raw as the base URL of a target, such as
// http://127.0.0.1:8080 or https://api.example.com/v2: http or https, a host,
// and no user, password, query or fragment. Every request's path and query
// come from the profile; a query in the base URL would mangle every path
// and, being where keys usually go, leak. The error never holds raw: at
// most its scheme, host and path, with control characters escaped.
func CheckBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: want a base URL such as http://127.0.0.1:8080")
	}
	shown := fmt.Sprintf("%q", (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String())
	switch {
	case u.User != nil:
		return fmt.Errorf("%s carries credentials (user:password@): the contract's surfaces authenticate nothing, so remove them", shown)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%s: want a base URL such as http://127.0.0.1:8080", shown)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("%s: a base URL has no query or fragment (the profile gives each request its path and query; what followed ? or # is not shown, as it may hold a key)", shown)
	}
	return nil
}
