package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
)

// TestRenderEvents: a run's events, in the order the engine reports them,
// render as the lines the command line has always printed.
func TestRenderEvents(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	counts := &attack.Counts{}
	counts.Sent.Add(3)
	counts.OK2xx.Add(2)
	counts.TooMany.Add(1)
	events := []attack.Event{
		attack.SourcesUsable{},
		attack.EmbeddedStarted{URL: "http://127.0.0.1:4321"},
		attack.RemoteTarget{Target: "https://api.example.com", Planned: 7140 * time.Millisecond, Wait: 5 * time.Second},
		attack.WaitingForTarget{Target: "http://10.0.0.9", Err: errors.New("connection refused")},
		attack.Negotiated{Negotiation: attack.Negotiation{Want: "auto", Revision: "2025-06-18", From: "127.0.0.3", Requests: 2, Session: true, Settled: 6 * time.Second}},
		attack.Negotiated{Negotiation: attack.Negotiation{Want: "2025-06-18", Revision: "2025-06-18", Requests: 1}},
		attack.Negotiated{Negotiation: attack.Negotiation{Want: "auto", Revision: "2026-07-28", Err: errors.New("404 Not Found")}},
		attack.StartMissed{At: at, Late: 1234567 * time.Microsecond},
		attack.WaitingForStart{At: at, Wait: 2500400 * time.Microsecond},
		attack.Progress{Elapsed: 1260 * time.Millisecond, Planned: 7140 * time.Millisecond, Counts: counts},
		attack.ProgressDone{},
		attack.ClockStepped{Step: -3001400 * time.Microsecond},
	}
	want := strings.Join([]string{
		"ratecheck verify: probing rest for about 7.1s (window 6s)",
		"ratecheck verify: no --target: using the embedded reference target at http://127.0.0.1:4321",
		"ratecheck verify: https://api.example.com is not a loopback address: this sends real load to it for about 7.1s. Starting in 5s; Ctrl-C to cancel.",
		"ratecheck verify: target http://10.0.0.9 is not reachable yet (connection refused): trying again until --start-at",
		"ratecheck verify: MCP revision 2025-06-18 (--mcp-revision auto; negotiated from 127.0.0.3 in 2 requests, session assigned)",
		"ratecheck verify: waited 6s for the handshake to leave the limit address's window (a contract address in --sources saves the wait)",
		"ratecheck verify: MCP revision 2025-06-18 (--mcp-revision 2025-06-18; negotiated from the system's address in 1 request)",
		"ratecheck verify: MCP revision negotiation failed (404 Not Found): speaking 2026-07-28 without a session",
		"ratecheck verify: warning: --start-at 2026-11-30T09:00:00Z passed 1.235s ago: starting now (analyze reports the skew between shards)",
		"ratecheck verify: waiting 2.5s for --start-at 2026-11-30T09:00:00Z",
		"\r\033[K1.3s / 7.1s  sent 3  2xx 2  429 1  other 0  errors 0\r\033[Kratecheck verify: the wall clock stepped by -3.001s during the run (NTP or a manual change): archived timestamps across the step are off by that much; run again for exact windows",
		"",
	}, "\n")
	var out bytes.Buffer
	say := engineEvents(&out, "verify", "probing rest for about 7.1s (window 6s)")
	for _, ev := range events {
		say(ev)
	}
	if out.String() != want {
		t.Errorf("rendered\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	engineEvents(&out, "attack", "")(attack.SourcesUsable{})
	if out.Len() != 0 {
		t.Errorf("no announcement, yet %q", out.String())
	}
}

// TestDescribe: the engine's errors are said with the flag that fixes
// them, as they always were.
func TestDescribe(t *testing.T) {
	run := &attack.Run{Results: 120, Dir: "results/x"}
	tests := []struct {
		err  error
		want string
	}{
		{&attack.RunError{Run: run, Err: &attack.FailingError{Failed: 60, Of: 100, Max: 0.5}},
			"the target is failing: 60 of the last 100 results were transport errors or 5xx (more than 50%), so the attack stopped adding load (--abort-at); the 120 results received are archived in results/x"},
		{&attack.RunError{Run: run, Err: &attack.FailingError{Failed: 120, Of: 120, All: true}},
			"the target is failing: all 120 results were transport errors or 5xx; the 120 results received are archived in results/x"},
		{&attack.RunError{Run: run, Err: attack.ErrInterrupted}, "interrupted; the 120 results received are archived in results/x"},
		{&attack.SetupError{Err: &attack.SourceError{Source: "10.9.9.9", Err: client.ErrNotLocal}},
			"--sources: cannot send from 10.9.9.9: this machine has no such address (on Linux every 127.0.0.x is local; another address must be one of this machine's, or of a prefix routed here: ip route add local 10.9.9.9/32 dev lo)"},
		{&attack.SetupError{Err: &attack.RevisionError{Want: "2025-03-26", Err: errors.New("the server speaks 2025-06-18")}},
			"--mcp-revision 2025-03-26: the server speaks 2025-06-18"},
		{&attack.UnreachableError{Target: "http://a", Err: &attack.RedirectError{Status: 302, To: "https://b/"}},
			`target http://a is unreachable: it redirects to "https://b/" (302): the attack follows no redirect, so every request would get that; pass the URL it redirects to as --target`},
		{&attack.SetupError{Err: &attack.TLSError{Target: "https://a", Err: errors.New("http: server gave HTTP response to HTTPS client")}},
			"TLS with https://a failed: http: server gave HTTP response to HTTPS client: the server does not speak TLS there: use an http:// --target"},
		{attack.ErrCancelled, "cancelled before sending anything"},
	}
	for _, tt := range tests {
		if got := describe(tt.err); got != tt.want {
			t.Errorf("describe(%#v)\n= %q\nwant %q", tt.err, got, tt.want)
		}
	}
}

// TestCeilingMessage: a profile above a ceiling is refused naming the flag
// that raises it.
func TestCeilingMessage(t *testing.T) {
	c := scenario.Ceilings{Rate: 1000, Duration: 15 * time.Minute}
	tests := []struct {
		peak    int
		planned time.Duration
		want    string
	}{
		{1500, time.Minute, "p.yaml at window 1s sends up to 1500 requests in one second, above the ceiling --max-rate 1000: raise --max-rate if you mean it"},
		{10, 20*time.Minute + 400*time.Millisecond, "p.yaml at window 1s runs for 20m0s, above the ceiling --max-duration 15m0s: raise --max-duration if you mean it"},
	}
	for _, tt := range tests {
		if got := ceilingMessage(c.Check("p.yaml", time.Second, tt.peak, tt.planned)); got == nil || got.Error() != tt.want {
			t.Errorf("%d/s for %v: %v, want %s", tt.peak, tt.planned, got, tt.want)
		}
	}
}
