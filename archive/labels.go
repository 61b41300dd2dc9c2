package archive

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Every result ratecheck archives carries a label in Vegeta's Result.Attack
// field: "surface=rest source=127.0.0.1 stream=onset", and for a fleet
// client's attempt "… client=3 request=1 attempt=2 delay=41000000".
// Vegeta's own tools ignore it; the analyzer reads it. Results without one
// (the Vegeta CLI's) get their surface from the URL.

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
	StreamSpoof              = "spoof"
	StreamSpoofXForwardedFor = "spoof-x-forwarded-for"
	StreamSpoofForwarded     = "spoof-forwarded"
	StreamSpoofXRealIP       = "spoof-x-real-ip"
	StreamSpoofControl       = "spoof-control"
	// StreamIsolation is sent from a second address meanwhile.
	StreamIsolation = "isolation"
	// StreamDiscriminate is verify's second burst and its dense probes
	// (--discriminate): they tell limiter families apart.
	StreamDiscriminate = "discriminate"
	// StreamPrime is the fleet's primer: the requests that spend the
	// address's budget before the clients start.
	StreamPrime = "prime"
	// StreamFleet is the fleet clients' requests.
	StreamFleet = "fleet"
)

// DefaultSource is the source label of results sent from the system's
// choice of address.
const DefaultSource = "default"

// Labels say where a result belongs: what its label (or its URL) names.
type Labels struct {
	Surface, Source, Stream string
	// Fleet is set on a fleet client's attempt (labels client=, attempt=).
	Fleet *FleetTag
}

// FleetTag is what a fleet result's label says about it: which client,
// which of its logical requests, which attempt, and the backoff the client
// drew before it (negative when the label does not say).
type FleetTag struct {
	Client, Request, Attempt int
	Delay                    time.Duration
}

// Label returns the label of a result: "surface=rest source=127.0.0.1
// stream=onset". An empty source is written as DefaultSource.
func Label(surface, source, stream string) string {
	if source == "" {
		source = DefaultSource
	}
	return "surface=" + surface + " source=" + source + " stream=" + stream
}

// FleetLabel returns the label of a fleet client's attempt.
func FleetLabel(surface, source, stream string, t FleetTag) string {
	return fmt.Sprintf("%s client=%d request=%d attempt=%d delay=%d", Label(surface, source, stream), t.Client, t.Request, t.Attempt, t.Delay.Nanoseconds())
}

// LabelValue returns the value of one key of a label ("" when absent).
func LabelValue(label, key string) string {
	for _, f := range strings.Fields(label) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// ParseLabel reads a label. A label without a surface gets the one of url;
// one without a source gets DefaultSource.
func ParseLabel(label, url string) Labels {
	var l Labels
	for _, f := range strings.Fields(label) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "surface":
			l.Surface = v
		case "source":
			l.Source = v
		case "stream":
			l.Stream = v
		}
	}
	if l.Surface == "" {
		l.Surface = SurfaceOf(url)
	}
	if l.Source == "" {
		l.Source = DefaultSource
	}
	l.Fleet = parseFleetTag(label)
	return l
}

// parseFleetTag reads client=, request=, attempt= and delay= (ns) from a
// label; nil when it has no client.
func parseFleetTag(label string) *FleetTag {
	if !strings.Contains(label, "client=") {
		return nil
	}
	t := &FleetTag{Request: 1, Delay: -1}
	for _, f := range strings.Fields(label) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "client":
			t.Client = int(n)
		case "request":
			t.Request = int(n)
		case "attempt":
			t.Attempt = int(n)
		case "delay":
			t.Delay = time.Duration(n)
		}
	}
	if t.Attempt == 0 {
		return nil
	}
	return t
}
