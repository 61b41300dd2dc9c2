package scenario

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/connectbyjbrh/ratecheck/redact"
)

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
