package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/client"
)

// engineEvents renders the events of a run of command name on stderr, as
// they come; announce, when set, is said once the run's source addresses
// are known to be usable: what the run is about to do.
func engineEvents(stderr io.Writer, name, announce string) func(attack.Event) {
	return func(ev attack.Event) { renderEvent(stderr, name, announce, ev) }
}

// renderEvent writes one event of the engine as the command line says it.
func renderEvent(w io.Writer, name, announce string, ev attack.Event) {
	say := func(format string, args ...any) {
		fmt.Fprintf(w, "ratecheck %s: %s\n", name, fmt.Sprintf(format, args...))
	}
	const instant = time.RFC3339Nano
	switch ev := ev.(type) {
	case attack.SourcesUsable:
		if announce != "" {
			say("%s", announce)
		}
	case attack.EmbeddedStarted:
		say("no --target: using the embedded reference target at %s", ev.URL)
	case attack.RemoteTarget:
		say("%s is not a loopback address: this sends real load to it for about %v. Starting in %v; Ctrl-C to cancel.",
			ev.Target, ev.Planned.Round(100*time.Millisecond), ev.Wait)
	case attack.WaitingForTarget:
		say("target %s is not reachable yet (%v): trying again until --start-at", ev.Target, ev.Err)
	case attack.WaitingForFresh:
		say("%s sent to this target from the same addresses until %s: waiting %v for its requests to leave the window (--no-wait starts at once)", ev.Run, ev.End.UTC().Format(instant), ev.Wait.Round(100*time.Millisecond))
	case attack.NotFresh:
		say("warning: %s sent to this target from the same addresses until %s, %v before its requests leave the window: starting anyway (--no-wait); a first burst refused early makes the verdict inconclusive", ev.Run, ev.End.UTC().Format(instant), ev.Left.Round(100*time.Millisecond))
	case attack.Negotiated:
		for _, note := range negotiationNotes(ev.Negotiation) {
			say("%s", note)
		}
	case attack.StartMissed:
		say("warning: --start-at %s passed %v ago: starting now (analyze reports the skew between shards)", ev.At.UTC().Format(instant), ev.Late.Round(time.Millisecond))
	case attack.WaitingForStart:
		say("waiting %v for --start-at %s", ev.Wait.Round(time.Millisecond), ev.At.UTC().Format(instant))
	case attack.Progress:
		fmt.Fprintf(w, "\r\033[K%v / %v  %s", ev.Elapsed.Round(100*time.Millisecond), ev.Planned.Round(100*time.Millisecond), ev.Counts.String())
	case attack.ProgressDone:
		fmt.Fprintf(w, "\r\033[K")
	case attack.ClockStepped:
		say("the wall clock stepped by %v during the run (NTP or a manual change): archived timestamps across the step are off by that much; run again for exact windows", ev.Step.Round(time.Millisecond))
	}
}

// negotiationNotes says how the MCP revision was settled.
func negotiationNotes(n attack.Negotiation) []string {
	if n.Err != nil {
		return []string{fmt.Sprintf("MCP revision negotiation failed (%v): speaking %s without a session", n.Err, n.Revision)}
	}
	from := n.From
	if from == "" {
		from = "the system's address"
	}
	plural := "s"
	if n.Requests == 1 {
		plural = ""
	}
	note := fmt.Sprintf("MCP revision %s (--mcp-revision %s; negotiated from %s in %d request%s", n.Revision, n.Want, from, n.Requests, plural)
	if n.Session {
		note += ", session assigned"
	}
	notes := []string{note + ")"}
	if n.Settled > 0 {
		notes = append(notes, fmt.Sprintf("waited %v for the handshake to leave the limit address's window (a contract address in --sources saves the wait)", n.Settled))
	}
	return notes
}

// describe is what the command line says of an engine's error: its own
// words, with the flag that fixes it where one does.
func describe(err error) string {
	var (
		run      *attack.RunError
		failing  *attack.FailingError
		source   *attack.SourceError
		revision *attack.RevisionError
		tlsErr   *attack.TLSError
		redirect *attack.RedirectError
	)
	switch {
	case errors.As(err, &run) && errors.As(run.Err, &failing) && !failing.All:
		return fmt.Sprintf("%v (--abort-at); the %d results received are archived in %s", run.Err, run.Run.Results, run.Run.Dir)
	case errors.As(err, &source):
		return "--sources: " + err.Error()
	case errors.As(err, &revision):
		return fmt.Sprintf("--mcp-revision %s: %v", revision.Want, revision.Err)
	case errors.As(err, &tlsErr):
		if hint, ok := tlsHints[client.TLSProblemOf(tlsErr.Err)]; ok {
			return fmt.Sprintf("%v: %s", err, hint)
		}
	case errors.As(err, &redirect):
		return err.Error() + "; pass the URL it redirects to as --target"
	}
	return fmt.Sprint(err)
}

// reportMCP says, after a run, what the MCP negotiation cost beyond the
// handshake announced before it: the addresses the target bound its
// sessions to, each given a handshake of its own.
func reportMCP(stderr io.Writer, name string, info archive.RunInfo) {
	m := info.MCP
	if m == nil || m.Handshakes <= 1 {
		return
	}
	if len(m.BoundSources) > 0 {
		fmt.Fprintf(stderr, "ratecheck %s: the target bound its sessions to the address that opened them (a 404 to the shared one): %s each got a handshake of their own\n",
			name, strings.Join(m.BoundSources, ", "))
	}
	fmt.Fprintf(stderr, "ratecheck %s: MCP handshakes: %d, %d requests in all (run.json mcp)\n", name, m.Handshakes, m.Requests)
}

// tlsHints say, per TLS failure, the flags that fix it.
var tlsHints = map[client.TLSProblem]string{
	client.TLSUntrusted:        "the server's certificate is signed by an authority this machine does not trust: use --cacert FILE (the CA's PEM certificate, or set SSL_CERT_FILE) or --insecure",
	client.TLSWrongHost:        "the server's certificate is not for this host name: use the name it was issued for in --target, or --insecure",
	client.TLSInvalid:          "the server's certificate is not valid (expired, or not for serving): fix it, or use --insecure",
	client.TLSClientCertWanted: "the server wants a client certificate it trusts: use --cert FILE and --key FILE",
	client.TLSHandshakeEnded:   "the server ended the TLS handshake: check --cert and --key, or the TLS versions it accepts",
	client.TLSNotSpoken:        "the server does not speak TLS there: use an http:// --target",
	client.TLSUnverified:       "the server's certificate could not be verified: use --cacert FILE or --insecure",
}
