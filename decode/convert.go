package decode

import vegeta "github.com/tsenart/vegeta/v12/lib"

// What the analyzer reads of a Vegeta result (result), and its conversion
// from one Vegeta's decoder made; the fast gob decoder fills it directly.

// result is what the analyzer reads of a Vegeta result. Its strings and
// body may alias a decoder's buffer: record copies what it keeps.
type result struct {
	Attack, URL, Error string
	Body               []byte
	Code               uint16
	// Start is the timestamp in Unix nanoseconds.
	Start, Latency int64
	// The first values of the Allow, Retry-After, RateLimit,
	// RateLimit-Policy and Content-Type response headers.
	Allow, RetryAfter, RateLimit, RateLimitPolicy, ContentType string
	// Advertised holds the first value of each AdvertFields header, in
	// that order.
	Advertised [len(advertFields)]string
}

// fromVegeta reads a result Vegeta's decoder made.
func fromVegeta(v *vegeta.Result) result {
	r := result{Attack: v.Attack, URL: v.URL, Error: v.Error, Body: v.Body, Code: v.Code,
		Start: v.Timestamp.UnixNano(), Latency: int64(v.Latency)}
	for k, vs := range v.Headers {
		if len(vs) > 0 {
			r.header(k, vs[0])
		}
	}
	return r
}

// header keeps the value of a response header the analyzer reports, by its
// canonical name, as http.Header.Get finds it.
func (r *result) header(key, value string) {
	if i := advertIndex(key); i >= 0 {
		r.Advertised[i] = value
	}
	switch key {
	case "Allow":
		r.Allow = value
	case "Retry-After":
		r.RetryAfter = value
	case "Ratelimit":
		r.RateLimit = value
	case "Ratelimit-Policy":
		r.RateLimitPolicy = value
	case "Content-Type":
		r.ContentType = value
	}
}
