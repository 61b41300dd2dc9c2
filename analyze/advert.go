package analyze

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// advertised is what one answer's rate-limit fields said, read from the
// lines decode keeps (decode.Answer.Advert). Each value names the field
// and parameter it came from. Where several families of fields say the
// same thing, the current draft's wins over drafts 6–7's, and those over
// X-RateLimit-*.
//
// The fields, as draft-ietf-httpapi-ratelimit-headers (the IETF httpapi
// working group's current draft) defines them:
//   - RateLimit-Policy (§3): a List of quota policy Items, each a String
//     with the parameters q (§3.1.1: the quota, a non-negative Integer), w
//     (§3.1.3: the window, a positive Integer of seconds) and pk (§3.1.4);
//   - RateLimit (§4): a List of service limit Items, each a String naming
//     a policy with r (§4.1.1: the remaining quota units, a non-negative
//     Integer) and t (§4.1.2: the seconds until more quota is made
//     available);
//   - drafts 6 and 7: RateLimit-Limit (a List whose first Integer is the
//     quota, with w), RateLimit-Remaining and RateLimit-Reset (Integers:
//     units and seconds), RateLimit-Policy as Integers with w, and draft
//     7's RateLimit as a Dictionary (limit, remaining, reset);
//   - X-RateLimit-Limit, -Remaining and -Reset: plain integers (a reset
//     of 10^9 or more is a Unix time in seconds, else delay-seconds);
//   - Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
type advertised struct {
	quota, window, remaining adValue
	reset, retryAfter        adMoment
	// malformed names each field that did not parse, with its value; a
	// client must ignore them (draft §5), and so does the check.
	malformed []string
	fields    []string // the fields present, well formed or not
}

// An adValue is an advertised number and the field it came from (empty:
// not advertised).
type adValue struct {
	n     int64
	field string
}

// An adMoment is an advertised time: seconds after the answer (delta), or
// a wall-clock instant in Unix seconds (absolute).
type adMoment struct {
	secs     int64
	absolute bool
	field    string
}

// set keeps v from field unless a field of higher precedence set it.
func (v *adValue) set(n int64, field string) {
	if v.field == "" {
		*v = adValue{n, field}
	}
}

func (m *adMoment) set(secs int64, absolute bool, field string) {
	if m.field == "" {
		*m = adMoment{secs, absolute, field}
	}
}

// fieldNames spells the canonical header names as the draft does.
var fieldNames = map[string]string{
	"Ratelimit-Policy": "RateLimit-Policy", "Ratelimit": "RateLimit",
	"Ratelimit-Limit": "RateLimit-Limit", "Ratelimit-Remaining": "RateLimit-Remaining", "Ratelimit-Reset": "RateLimit-Reset",
	"X-Ratelimit-Limit": "X-RateLimit-Limit", "X-Ratelimit-Remaining": "X-RateLimit-Remaining", "X-Ratelimit-Reset": "X-RateLimit-Reset",
	"Retry-After": "Retry-After",
}

// fieldOrder is the precedence of the fields: the current draft's first.
var fieldOrder = []string{"Ratelimit-Policy", "Ratelimit", "Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset",
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Retry-After"}

// parseAdvert reads an answer's advertised fields ("Name: value" lines).
// It never fails: a field that does not parse is named in malformed.
func parseAdvert(lines string) advertised {
	vals := map[string]string{}
	for line := range strings.SplitSeq(lines, "\n") {
		name, v, ok := strings.Cut(line, ": ")
		if ok && fieldNames[name] != "" {
			vals[name] = v
		}
	}
	var a advertised
	for _, name := range fieldOrder {
		v, ok := vals[name]
		if !ok {
			continue
		}
		a.fields = append(a.fields, fieldNames[name])
		if err := a.field(name, strings.TrimSpace(v)); err != nil {
			a.malformed = append(a.malformed, fmt.Sprintf("%s: %q (%v)", fieldNames[name], v, err))
		}
	}
	return a
}

// field reads one field's value into a.
func (a *advertised) field(name, v string) error {
	switch name {
	case "Ratelimit-Policy":
		return a.policy(v)
	case "Ratelimit":
		return a.rateLimit(v)
	case "Ratelimit-Limit":
		items, err := parseSFList(v)
		if err != nil || items[0].kind != sfInteger || items[0].num < 0 {
			return errSyntax("a List whose first member is a non-negative Integer", err)
		}
		a.quota.set(items[0].num, "RateLimit-Limit")
		if w := items[0].param("w"); w != nil && w.kind == sfInteger && w.num > 0 {
			a.window.set(w.num, "RateLimit-Limit w")
		}
	case "Ratelimit-Remaining", "Ratelimit-Reset":
		items, err := parseSFList(v)
		if err != nil || len(items) != 1 || items[0].kind != sfInteger || items[0].num < 0 {
			return errSyntax("a non-negative Integer", err)
		}
		if name == "Ratelimit-Remaining" {
			a.remaining.set(items[0].num, "RateLimit-Remaining")
		} else {
			a.reset.set(items[0].num, false, "RateLimit-Reset")
		}
	case "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset":
		return a.legacy(name, v)
	case "Retry-After":
		return a.retry(v)
	}
	return nil
}

// errSyntax says what a field should have been.
func errSyntax(want string, err error) error {
	if err != nil {
		return fmt.Errorf("not a structured field: want %s", want)
	}
	return fmt.Errorf("want %s", want)
}

// policy reads RateLimit-Policy: the current draft's String items with q
// and w (§3.1), or drafts 6–7's Integer items with w.
func (a *advertised) policy(v string) error {
	items, err := parseSFList(v)
	if err != nil {
		return errSyntax("a List of quota policy Items", err)
	}
	it := items[0]
	switch it.kind {
	case sfString:
		q := it.param("q")
		if q == nil || q.kind != sfInteger || q.num < 0 {
			return fmt.Errorf("policy %q: want the parameter q, a non-negative Integer (§3.1.1)", it.text)
		}
		a.quota.set(q.num, "RateLimit-Policy q")
	case sfInteger:
		if it.num < 0 {
			return errSyntax("a non-negative quota", nil)
		}
		a.quota.set(it.num, "RateLimit-Policy")
	default:
		return errSyntax("policy Items that are Strings (§3)", nil)
	}
	if w := it.param("w"); w != nil {
		if w.kind != sfInteger || w.num <= 0 {
			return fmt.Errorf("w: want a positive Integer of seconds (§3.1.3)")
		}
		a.window.set(w.num, "RateLimit-Policy w")
	}
	return nil
}

// rateLimit reads RateLimit: the current draft's service limit Items
// (§4.1; the least r of them, with its t), or draft 7's Dictionary.
func (a *advertised) rateLimit(v string) error {
	items, err := parseSFList(v)
	if err != nil || items[0].kind != sfString {
		return a.rateLimitDict(v)
	}
	best := -1
	for i, it := range items {
		r := it.param("r")
		if it.kind != sfString || r == nil || r.kind != sfInteger || r.num < 0 {
			return fmt.Errorf("item %d: want a String with the parameter r, a non-negative Integer (§4.1.1)", i+1)
		}
		if t := it.param("t"); t != nil && (t.kind != sfInteger || t.num < 0) {
			return fmt.Errorf("item %d: t: want a non-negative Integer of seconds (§4.1.2)", i+1)
		}
		if best < 0 || r.num < items[best].param("r").num {
			best = i
		}
	}
	a.remaining.set(items[best].param("r").num, "RateLimit r")
	if t := items[best].param("t"); t != nil {
		a.reset.set(t.num, false, "RateLimit t")
	}
	return nil
}

// rateLimitDict reads draft 7's RateLimit: limit, remaining, reset.
func (a *advertised) rateLimitDict(v string) error {
	members, err := parseSFDict(v)
	if err != nil {
		return errSyntax("a List of service limit Items (§4)", err)
	}
	seen := 0
	for _, m := range members {
		if m.val.kind != sfInteger || m.val.num < 0 {
			continue
		}
		switch m.key {
		case "limit":
			a.quota.set(m.val.num, "RateLimit limit")
		case "remaining":
			a.remaining.set(m.val.num, "RateLimit remaining")
		case "reset":
			a.reset.set(m.val.num, false, "RateLimit reset")
		default:
			continue
		}
		seen++
	}
	if seen == 0 {
		return errSyntax("a List of service limit Items (§4)", nil)
	}
	return nil
}

// legacy reads X-RateLimit-Limit, -Remaining (which some limiters send
// negative) and -Reset.
func (a *advertised) legacy(name, v string) error {
	if name == "X-Ratelimit-Reset" {
		if i := strings.IndexByte(v, '.'); i > 0 { // a Unix time with a fraction
			v = v[:i]
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || (n < 0 && name != "X-Ratelimit-Remaining") {
		return fmt.Errorf("want an integer")
	}
	switch name {
	case "X-Ratelimit-Limit":
		a.quota.set(n, "X-RateLimit-Limit")
	case "X-Ratelimit-Remaining":
		a.remaining.set(n, "X-RateLimit-Remaining")
	default:
		a.reset.set(n, n >= 1e9, "X-RateLimit-Reset")
	}
	return nil
}

// retry reads Retry-After: delay-seconds or an HTTP-date.
func (a *advertised) retry(v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && v[0] != '+' {
		a.retryAfter.set(n, false, "Retry-After")
		return nil
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return fmt.Errorf("want delay-seconds or an HTTP-date (RFC 9110 §10.2.3)")
	}
	a.retryAfter.set(t.Unix(), true, "Retry-After")
	return nil
}

// any reports whether the answer advertised anything.
func (a *advertised) any() bool { return len(a.fields) > 0 }

// before returns the latest instant (Unix ns) surely before the moment m
// names, for an answer sent at start: an integer of seconds may have
// been rounded up, so a second earlier than the value says.
func (m adMoment) before(start int64) int64 {
	const s = int64(time.Second)
	if m.absolute {
		return m.secs*s - s
	}
	return start + m.secs*s - s
}

// after returns the earliest instant (Unix ns) surely after the moment m
// names, for an answer that arrived at end, as a client that waits as
// told retries: delay-seconds after the answer, or a second after an
// HTTP-date (which has no fraction).
func (m adMoment) after(end int64) int64 {
	const s = int64(time.Second)
	if m.absolute {
		return m.secs*s + s
	}
	return end + m.secs*s
}

// String spells m as the field said it.
func (m adMoment) String() string {
	if m.absolute {
		return fmt.Sprintf("%s %s", m.field, time.Unix(m.secs, 0).UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s=%d", m.field, m.secs)
}

// A Policy is one quota policy an answer advertised: what a contract
// draft can take from it (contract discover).
type Policy struct {
	// Name is the policy's name ("" where the field names none: drafts
	// 6–7, X-RateLimit-Limit).
	Name string
	// Quota is the requests (or Unit) it allows per Window; Window is 0
	// when the answer did not say it.
	Quota  int64
	Window time.Duration
	// Unit is the draft's qu: "requests" unless the policy said another
	// (content-bytes, concurrent-requests).
	Unit string
	// Partitioned is set when the policy carried a partition key (pk): it
	// counts per key, though the key does not say of what.
	Partitioned bool
	// Field is the field it was read from.
	Field string
}

// Policies returns the quota policies an answer's header advertised:
// every item of the current draft's RateLimit-Policy (q, w, qu, pk), else
// the one quota of drafts 6–7 or of X-RateLimit-Limit (with a window where
// the field gives one); and each field that did not parse, named with its
// value and what it should have been, which a caller must not guess from.
func Policies(h http.Header) (ps []Policy, malformed []string) {
	if v := h.Values("Ratelimit-Policy"); len(v) > 0 {
		items, err := parseSFList(strings.Join(v, ", "))
		if err == nil && items[0].kind == sfString {
			for i, it := range items {
				p, err := policyOf(it)
				if err != nil {
					malformed = append(malformed, fmt.Sprintf("RateLimit-Policy item %d: %v", i+1, err))
					continue
				}
				ps = append(ps, p)
			}
			return ps, malformed
		}
	}
	var lines strings.Builder
	for name := range fieldNames {
		for _, v := range h.Values(name) {
			fmt.Fprintf(&lines, "%s: %s\n", name, v)
		}
	}
	a := parseAdvert(lines.String())
	for _, m := range a.malformed {
		if !strings.HasPrefix(m, "Retry-After") && !strings.HasPrefix(m, "RateLimit:") {
			malformed = append(malformed, m)
		}
	}
	if a.quota.field != "" {
		p := Policy{Quota: a.quota.n, Unit: "requests", Field: a.quota.field}
		if a.window.field != "" {
			p.Window = time.Duration(a.window.n) * time.Second
		}
		ps = append(ps, p)
	}
	return ps, malformed
}

// policyOf reads one item of the current draft's RateLimit-Policy: a
// String naming the policy with q (§3.1.1), and optionally w (§3.1.3),
// qu (§3.1.2) and pk (§3.1.4).
func policyOf(it sfItem) (Policy, error) {
	p := Policy{Name: it.text, Unit: "requests", Field: "RateLimit-Policy"}
	if it.kind != sfString {
		return p, fmt.Errorf("want a String naming the policy (§3)")
	}
	q := it.param("q")
	if q == nil || q.kind != sfInteger || q.num < 0 {
		return p, fmt.Errorf("policy %q: want the parameter q, a non-negative Integer (§3.1.1)", it.text)
	}
	p.Quota = q.num
	if w := it.param("w"); w != nil {
		if w.kind != sfInteger || w.num <= 0 {
			return p, fmt.Errorf("policy %q: w: want a positive Integer of seconds (§3.1.3)", it.text)
		}
		p.Window = time.Duration(w.num) * time.Second
	}
	if qu := it.param("qu"); qu != nil {
		if qu.kind != sfString {
			return p, fmt.Errorf("policy %q: qu: want a String such as \"requests\" (§3.1.2)", it.text)
		}
		p.Unit = qu.text
	}
	p.Partitioned = it.param("pk") != nil
	return p, nil
}
