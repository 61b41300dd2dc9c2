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

// EditDistance is the Levenshtein distance between a and b: how many
// bytes to insert, delete or change to make one the other, as a "did you
// mean" hint measures a misspelling.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
