package attack

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Redacted replaces every credential value the tool would otherwise write.
const Redacted = "[redacted]"

// IsCredential reports whether a header carries a credential: Authorization,
// Proxy-Authorization, Cookie, Set-Cookie, or any name ending in -Key or
// -Token. The contract's surfaces authenticate nothing, so such a header
// only leaks.
func IsCredential(name string) bool {
	n := strings.ToLower(http.CanonicalHeaderKey(name))
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	return strings.HasSuffix(n, "-key") || strings.HasSuffix(n, "-token") || n == "apikey" || n == "api_key"
}

// IsCredentialParam reports whether a query parameter carries a
// credential: key, token, password, secret, signature, sig, auth, apikey,
// or a name ending in _key, -key, _token, -token or _secret.
func IsCredentialParam(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "key", "token", "password", "passwd", "secret", "signature", "sig", "auth", "apikey":
		return true
	}
	for _, suffix := range []string{"_key", "-key", "_token", "-token", "_secret", "-secret"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}

// RedactResult removes from r, before it is archived, every credential
// value a result can carry: response headers such as Set-Cookie, and the
// userinfo and credential query parameters of its URL.
func RedactResult(r *vegeta.Result) {
	for k := range r.Headers {
		if IsCredential(k) {
			r.Headers = http.Header(Redact(r.Headers))
			break
		}
	}
	if strings.ContainsAny(r.URL, "?@") {
		r.URL = RedactURL(r.URL)
	}
}

// RedactURL returns raw with its password and the values of its credential
// query parameters replaced by [Redacted]. A URL that does not parse is
// replaced whole: it cannot be shown to be free of credentials.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Redacted
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), Redacted)
	}
	if u.RawQuery != "" {
		q := u.Query()
		redacted := false
		for k := range q {
			if IsCredentialParam(k) {
				q[k] = []string{Redacted}
				redacted = true
			}
		}
		if redacted {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// QueryCredentials returns the names of the credential query parameters of
// p's requests.
func QueryCredentials(p *Profile) []string {
	var names []string
	for _, s := range p.Streams {
		for _, r := range s.Requests {
			for k := range r.Query {
				if IsCredentialParam(k) && !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// Redact returns a copy of h in which every credential value is [Redacted].
func Redact(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		if IsCredential(k) {
			out[k] = []string{Redacted}
			continue
		}
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// Credentials returns the names of the credential headers in h.
func Credentials(h http.Header) []string {
	var names []string
	for k := range h {
		if IsCredential(k) {
			names = append(names, k)
		}
	}
	return names
}
