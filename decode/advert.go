package decode

import "strings"

// advertFields are the response headers that advertise a rate limit, by
// their canonical names (as http.Header keeps them): the IETF httpapi
// RateLimit-Policy and RateLimit fields, drafts 6 and 7's
// RateLimit-Limit, -Remaining and -Reset, the X-RateLimit-* fields many
// limiters send, and Retry-After. A record keeps them of every answer,
// for the analysis to hold them to what the target did.
var advertFields = [...]string{
	"Ratelimit-Policy", "Ratelimit",
	"Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset",
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
	"Retry-After",
}

// maxAdvert caps the bytes of the advertised fields an answer keeps.
const maxAdvert = 1024

// advertIndex returns the index of a canonical header name in
// advertFields (-1: not one).
func advertIndex(key string) int {
	if len(key) < 9 || (key[0] != 'R' && key[0] != 'X') {
		return -1
	}
	for i, f := range advertFields {
		if f == key {
			return i
		}
	}
	return -1
}

// appendAdvert appends the advertised fields of vs (by AdvertFields
// index) to b as Answer.Advert holds them: a field that would take the
// whole past MaxAdvert is left out, and line breaks in a value are
// spaces.
func appendAdvert(b []byte, vs *[len(advertFields)]string) []byte {
	for i, v := range vs {
		if v == "" {
			continue
		}
		v = cut(strings.TrimSpace(v), maxText)
		if len(b)+len(advertFields[i])+len(v)+3 > maxAdvert {
			continue
		}
		b = append(append(append(b, advertFields[i]...), ": "...), v...)
		for j := len(b) - len(v); j < len(b); j++ {
			if b[j] == '\n' || b[j] == '\r' {
				b[j] = ' '
			}
		}
		b = append(b, '\n')
	}
	return b
}
