package attack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/refserver/sdkserver"
)

// TestEndedOncePerSession: a 404 to a request sent before the address's
// last handshake ended asks for no other handshake (that request carried
// the session already replaced); a 404 to one sent after it does. A target
// binding sessions to addresses answers 404 to every request in flight
// when the first comes back, so without the send time an address would
// shake hands once per request then in flight.
func TestEndedOncePerSession(t *testing.T) {
	t.Parallel()
	h, err := sdkserver.Handler(sdkserver.Config{Mode: sdkserver.Stateful20251125})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	m := &MCPSession{HTTP: func(string) *http.Client { return ts.Client() }}
	ctx := context.Background()
	if _, err := m.Negotiate(ctx, ts.URL); err != nil {
		t.Fatal(err)
	}
	const src = "127.0.0.2"
	_, sid := m.Speech(src)
	if sid == nil {
		t.Fatal("no session to carry after negotiating with a stateful server")
	}
	first := sid.Load()
	inFlight := time.Now() // two requests sent now, both carrying the first session
	m.Ended(ctx, src, inFlight)
	m.Ended(ctx, src, inFlight) // while the handshake runs
	m.Wait()
	second := sid.Load()
	m.Ended(ctx, src, inFlight) // answered after it ended
	m.Wait()
	if got := m.Info().Handshakes; got != 2 || second == first || sid.Load() != second {
		t.Fatalf("handshakes %d (session replaced: %v, then kept: %v); want 2: the negotiation and one for %s's first 404",
			got, second != first, sid.Load() == second, src)
	}
	m.Ended(ctx, src, time.Now()) // a request built with the second session
	m.Wait()
	if got := m.Info().Handshakes; got != 3 || sid.Load() == second {
		t.Fatalf("handshakes %d after a 404 to the second session; want 3 and a third session", got)
	}
}
