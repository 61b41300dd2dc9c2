package method

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
	// StreamIsolation is sent from a second address meanwhile.
	StreamIsolation = "isolation"
	// streamDiscriminate is verify's second burst and its dense probes
	// (--discriminate): they tell limiter families apart.
	streamDiscriminate = "discriminate"
	// StreamPrime is the fleet's primer: the requests that spend the
	// address's budget before the clients start.
	StreamPrime = "prime"
	// StreamFleet is the fleet clients' requests.
	StreamFleet = "fleet"
)
