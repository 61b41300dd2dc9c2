// Package human formats numbers for people: durations rounded to the
// digits the timing supports, counts with the right plural.
package human

import (
	"strconv"
	"time"
)

// round is d rounded to three significant digits, never finer than a
// microsecond (the timing of a request is no finer): 333.333333ms is
// 333ms, 1.9902s is 1.99s, 44.2µs is 44µs. Durations of an hour or more
// are rounded to the second.
func round(d time.Duration) time.Duration {
	if d < 0 {
		return -round(-d)
	}
	for u := time.Microsecond; u < time.Second; u *= 10 {
		if d < 1000*u {
			return d.Round(u)
		}
	}
	return d.Round(time.Second)
}

// Duration is Round(d) as text.
func Duration(d time.Duration) string { return round(d).String() }

// Count is n with noun, plural unless n is 1: "1 request", "2 requests".
// plural is the plural form, or "" for noun+"s".
func Count(n int, noun, plural string) string {
	if n == 1 {
		return "1 " + noun
	}
	if plural == "" {
		plural = noun + "s"
	}
	return strconv.Itoa(n) + " " + plural
}
