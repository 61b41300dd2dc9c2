package method

import (
	"strconv"
	"strings"
)

// Stream names the analyzer keys on. A stream of a profile or of verify's
// plan whose name is none of these, and not a failure-table probe (the
// analyzer's contract rows name those), is counted toward its surface's
// limit like any other but judged by no check of its own.
const (
	// StreamOnset is verify's first L requests from the limit address.
	StreamOnset = "onset"
	// StreamOver is the request sent once the onset is answered: L+1.
	StreamOver = "over"
	// StreamFlood is verify's L refused requests (do refusals count?).
	StreamFlood = "flood"
	// StreamProbe and StreamEdge are verify's sparse probes through the
	// window and its dense probes across the recovery edge.
	StreamProbe = "probe"
	StreamEdge  = "edge"
	// StreamSecond is verify's second burst of L from the limit address,
	// once the first burst and the flood have aged out of a documented
	// window: how many of it are admitted says what the window still
	// holds (the refused probes, if refusals count).
	StreamSecond = "second"
	// The spoof streams are sent from the limit address while it is over
	// its limit: each with one forged forwarding header (StreamSpoof, of
	// runs before the headers were told apart, with any of them), and
	// StreamSpoofControl without, between them: a forged probe proves
	// something only against plain ones sent just before and after it.
	streamSpoof              = "spoof"
	StreamSpoofXForwardedFor = "spoof-x-forwarded-for"
	StreamSpoofForwarded     = "spoof-forwarded"
	StreamSpoofXRealIP       = "spoof-x-real-ip"
	StreamSpoofControl       = "spoof-control"
	// StreamSpoofAddress is sent, on a surface whose limit is counted by
	// an API key, as the limit key from the second address, among the
	// spoof probes: a limit counted by the key refuses it as it refuses
	// the plain ones beside it; one counted per address and key admits
	// it. The isolation check judges it; like a forged probe, it may be
	// counted in another budget, so the model holds it uncertain.
	StreamSpoofAddress = "spoof-address"
	// The shared-route streams (SharedRouteStream) are sent, on a
	// contract's limit over several routes, to each of its routes but the
	// first, among the spoof probes: one budget the routes share refuses
	// them as it refuses the plain ones beside them on the first; a
	// budget per route admits them. The independence check judges them;
	// like a forged probe, they may be counted in another budget, so the
	// model holds them uncertain.
	streamSharedRoute = "shared-route-"
	// StreamIsolation is sent from a second address meanwhile: a burst of
	// L, admitted in full while the limit address is over its limit.
	StreamIsolation = "isolation"
	// StreamRebound is the second address's burst of L once its first
	// has half aged out of the window: how many are admitted tells a
	// sliding log from a fixed window opened at the address's first
	// request, a token bucket and a sliding-window counter, on traffic
	// that carries no refusals.
	StreamRebound = "rebound"
	// StreamStacked is sent, for a contract's limit stacked on another of
	// a shorter window over its route, from an address of its own (the
	// contract address's role): requests paced under the shorter limit
	// until past the stacked one's quota, whose first refusal is the
	// stacked limit's onset.
	StreamStacked = "stacked"
	// StreamFollowUp is verify's follow-up probes from the limit address,
	// sent only when the plan left a question open (FollowUpProbe).
	StreamFollowUp = "follow-up"
	// StreamFollowUpBurst is the follow-up's burst of L, near its end.
	StreamFollowUpBurst = "follow-up-burst"
	// StreamPrime is the fleet's primer: the requests that spend the
	// address's budget before the clients start.
	StreamPrime = "prime"
	// StreamFleet is the fleet clients' requests.
	StreamFleet = "fleet"
)

// SharedRouteStream names the shared-route stream to the i-th (from 1)
// of a limit's routes after its first.
func SharedRouteStream(i int) string { return streamSharedRoute + strconv.Itoa(i) }

// SharedRoute says which of a limit's routes after its first (from 1) a
// shared-route stream is sent to (false: the stream is none).
func SharedRoute(stream string) (int, bool) {
	n, ok := strings.CutPrefix(stream, streamSharedRoute)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	return i, err == nil && i > 0
}
