package attack

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/connectbyjbrh/ratecheck/redact"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// The credential policy lives in package redact; the names below forward
// to it for the callers not yet moved there, and go once they are.

// Redacted replaces every credential value the tool would otherwise write.
//
// Deprecated: use redact.Redacted.
const Redacted = redact.Redacted

// IsCredential reports whether a header carries a credential.
//
// Deprecated: use redact.Is.
func IsCredential(name string) bool { return redact.Is(name) }

// IsCredentialParam reports whether a query parameter carries a credential.
//
// Deprecated: use redact.Is.
func IsCredentialParam(name string) bool { return redact.Is(name) }

// RedactResult removes every credential value from r before it is archived.
//
// Deprecated: use redact.Result.
func RedactResult(r *vegeta.Result) { redact.Result(r) }

// RedactURL returns raw with its credential values replaced.
//
// Deprecated: use redact.URL.
func RedactURL(raw string) string { return redact.URL(raw) }

// Redact returns a copy of h in which every credential value is [Redacted].
//
// Deprecated: use redact.Header.
func Redact(h http.Header) map[string][]string { return redact.Header(h) }

// Credentials returns the names of the credential headers in h.
//
// Deprecated: use redact.Names.
func Credentials(h http.Header) []string { return redact.Names(h) }

// QueryCredentials returns the names of the credential query parameters of
// p's requests.
func QueryCredentials(p *Profile) []string {
	var names []string
	for _, s := range p.Streams {
		for _, r := range s.Requests {
			for _, k := range redact.ParamNames(toValues(r.Query)) {
				if !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// HeaderCredentials returns the names of the credential headers p sets, on
// the profile or on any request.
func (p *Profile) HeaderCredentials() []string {
	h := http.Header{}
	for k, v := range p.Headers {
		h.Set(k, v)
	}
	for _, s := range p.Streams {
		for _, r := range s.Requests {
			for k, v := range r.Headers {
				h.Set(k, v)
			}
		}
	}
	return redact.Names(h)
}

func toValues(q map[string]string) url.Values {
	v := make(url.Values, len(q))
	for k, x := range q {
		v[k] = []string{x}
	}
	return v
}
