package attack

import (
	"net/http"
	"strings"
)

// Redacted replaces every credential value the tool would otherwise write.
const Redacted = "[redacted]"

// IsCredential reports whether a header carries a credential: Authorization,
// Proxy-Authorization, Cookie, or any name ending in -Key or -Token. The
// contract's surfaces authenticate nothing, so such a header only leaks.
func IsCredential(name string) bool {
	n := strings.ToLower(http.CanonicalHeaderKey(name))
	switch n {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	return strings.HasSuffix(n, "-key") || strings.HasSuffix(n, "-token") || n == "apikey" || n == "api_key"
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
