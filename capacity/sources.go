package capacity

import (
	"fmt"
	"math"
	"time"
)

// defaultShare is the share of its limit one source address may send at
// when none is given: half of L per W.
const defaultShare = 0.5

// SourcesNeeded returns how many source addresses a rate (requests per
// second) must be spread over so that none sends more than share of the
// limit L per window W, that is share·L/W per second: ⌈rate·W / (share·L)⌉,
// at least 1. With no limit (limit or window 0) one address suffices.
// share 0 means defaultShare.
func SourcesNeeded(rate float64, limit int, window time.Duration, share float64) int {
	if limit <= 0 || window <= 0 || rate <= 0 {
		return 1
	}
	if share <= 0 {
		share = defaultShare
	}
	perSource := share * float64(limit) / window.Seconds()
	return max(1, int(math.Ceil(rate/perSource-1e-9)))
}

// maxLoopbackSources is how many addresses [LoopbackSources] can list.
const maxLoopbackSources = 255 * 254

// LoopbackSources lists n loopback source addresses: 127.0.x.y for x from
// 1 to 255 and y from 1 to 254, in that order (127.0.1.1, 127.0.1.2, …,
// 127.0.1.254, 127.0.2.1, …). It leaves out 127.0.0.0/24, where the
// reference target listens and verify and fleet send from, and the .0 and
// .255 of every /24. On Linux every 127.x.y.z is local; elsewhere the
// addresses must be configured on the loopback interface. It returns an
// error when n is above maxLoopbackSources.
func LoopbackSources(n int) ([]string, error) {
	if n > maxLoopbackSources {
		return nil, fmt.Errorf("%d source addresses needed, but 127.0.1.1 to 127.0.255.254 hold %d", n, maxLoopbackSources)
	}
	out := make([]string, 0, max(n, 0))
	for i := range max(n, 0) {
		out = append(out, fmt.Sprintf("127.0.%d.%d", 1+i/254, 1+i%254))
	}
	return out, nil
}

// TooFewSourcesError is the refusal of a search that cannot spread its
// highest rate over the source addresses it has: each would near its limit,
// and the search would measure the limiter, not the API.
type TooFewSourcesError struct {
	// Rate is the highest rate of the search, per second.
	Rate float64
	// Need is how many addresses that rate needs; Have how many the
	// search was given. Of a sharded search, both count one shard's.
	Need, Have int
	// Shards is how many shards send the search (0 or 1: one process).
	Shards int
	// Limit, Window and Share are what each address may send: Share of
	// Limit per Window.
	Limit  int
	Window time.Duration
	Share  float64
}

// Error says how many addresses are needed, each at what share of the
// limit, and how many there are.
func (e *TooFewSourcesError) Error() string {
	each := fmt.Sprintf("each at most %s its limit of %d per %v", shareOf(e.Share), e.Limit, e.Window)
	given := fmt.Sprintf("%d are given", e.Have)
	if e.Have == 1 {
		given = "1 is given"
	}
	if e.Shards > 1 {
		return fmt.Sprintf("%g requests per second over %d shards need %d source addresses a shard (%s), but this shard is given %d",
			e.Rate, e.Shards, e.Need, each, e.Have)
	}
	return fmt.Sprintf("%g requests per second need %d source addresses (%s), but %s", e.Rate, e.Need, each, given)
}

// shareOf says a share of what follows: "half", or a percentage ("25% of").
func shareOf(share float64) string {
	if share == 0.5 {
		return "half"
	}
	return fmt.Sprintf("%g%% of", share*100)
}
