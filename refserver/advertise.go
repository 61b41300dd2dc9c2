package refserver

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Advertise names what the reference target advertises of its limits in
// every answer of a surface. Only AdvertiseNone is the documented API; the
// others let the verifier's headers check be shown to pass and fail.
type Advertise string

// The advertising modes of the reference target.
const (
	// AdvertiseNone sends no rate-limit field (the documented API).
	AdvertiseNone Advertise = "none"
	// AdvertiseDraft sends the IETF httpapi draft's RateLimit-Policy
	// ("rest";q=240;w=60) and RateLimit ("rest";r=12;t=30) on every
	// answer of a surface: r the requests left in the rolling window, t
	// the seconds (rounded up) until one more is admitted.
	AdvertiseDraft Advertise = "draft"
	// AdvertiseLegacy sends X-RateLimit-Limit, -Remaining and -Reset (a
	// Unix time in seconds, rounded up) on every answer, and Retry-After
	// (seconds, rounded up) on a 429.
	AdvertiseLegacy Advertise = "legacy"
	// AdvertiseLying sends the draft's fields, and Retry-After, wrong: it
	// advertises the configured limit while enforcing five sixths of it,
	// counts the remaining requests against the advertised limit (so a
	// 429 says some are left), and tells a refused client to retry at
	// once (Retry-After: 0).
	AdvertiseLying Advertise = "lying"
)

// Advertisings lists every mode, the documented one first.
var Advertisings = []Advertise{AdvertiseNone, AdvertiseDraft, AdvertiseLegacy, AdvertiseLying}

// ParseAdvertise returns the mode named s ("" is AdvertiseNone).
func ParseAdvertise(s string) (Advertise, error) {
	if s == "" {
		return AdvertiseNone, nil
	}
	for _, m := range Advertisings {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown advertising %q (want one of %v)", s, Advertisings)
}

// enforced is the limit a surface's limiter enforces for a configured
// limit: the configured one, but for the lying mode.
func (a Advertise) enforced(limit int) int {
	if a == AdvertiseLying {
		return max(1, limit*5/6)
	}
	return limit
}

// advertise sets the fields of mode a on an answer of surface sf with the
// configured limit, after a decision of its limiter (ok: admitted) that
// left st.
func (s *Server) advertise(h http.Header, sf surface, limit int, ok bool, st limitState) {
	a := s.cfg.Advertise
	if a == "" || a == AdvertiseNone {
		return
	}
	remaining, reset := st.remaining, ceilSeconds(st.reset)
	switch a {
	case AdvertiseDraft, AdvertiseLying:
		w := max(1, ceilSeconds(s.cfg.Window))
		if a == AdvertiseLying {
			remaining = max(0, limit-st.count)
		}
		h.Set("RateLimit-Policy", fmt.Sprintf("%q;q=%d;w=%d", sf, limit, w))
		h.Set("RateLimit", fmt.Sprintf("%q;r=%d;t=%d", sf, remaining, reset))
		if a == AdvertiseLying && !ok {
			h.Set("Retry-After", "0")
		}
	case AdvertiseLegacy:
		h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		at := time.Now().Add(st.reset)
		h.Set("X-RateLimit-Reset", strconv.FormatInt(at.Add(time.Second-1).Unix(), 10))
		if !ok {
			h.Set("Retry-After", strconv.Itoa(reset))
		}
	}
}

// ceilSeconds returns d in whole seconds, rounded up (0 for no time).
func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}
