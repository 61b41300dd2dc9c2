package attack

import (
	"errors"
	"strings"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// TestFailureGuard: the guard trips only once a full window of results
// holds more than the allowed share of failures, and 429s are not failures.
func TestFailureGuard(t *testing.T) {
	codes := func(n int, code uint16) []uint16 {
		out := make([]uint16, n)
		for i := range out {
			out[i] = code
		}
		return out
	}
	tests := []struct {
		name   string
		max    float64
		codes  []uint16
		tripAt int // index of the result that trips it; -1: never
	}{
		{"healthy", 0.5, codes(300, 200), -1},
		{"refusals are answers", 0.5, codes(300, 429), -1},
		{"a dead target", 0.5, codes(300, 0), 9},
		{"turns to 503", 0.5, append(codes(50, 200), codes(100, 503)...), 55}, // the 6th failure of 10
		{"20% faults pass", 0.5, func() []uint16 {
			var c []uint16
			for i := range 300 {
				c = append(c, map[bool]uint16{true: 503, false: 200}[i%5 == 0])
			}
			return c
		}(), -1},
		{"off", 0, codes(300, 0), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := FailureGuard{Window: 10, Max: tt.max}
			at := -1
			for i, c := range tt.codes {
				if err := g.Add(archive.Result{Result: &vegeta.Result{Code: c}}); err != nil {
					var fe *FailingError
					if !errors.As(err, &fe) || fe.Of != 10 {
						t.Fatalf("error %v", err)
					}
					at = i
					break
				}
			}
			if at != tt.tripAt {
				t.Errorf("tripped at %d, want %d", at, tt.tripAt)
			}
		})
	}
}

// TestFailureGuardLocalLimits: transport errors that never left this
// machine (too many open files, no local port) trip the guard as this
// machine's limit, never as a failing target; a run whose every result
// failed is no pass, however few they were (Final).
func TestFailureGuardLocalLimits(t *testing.T) {
	const emfile = `Get "http://127.0.0.1:8080/api/public/search": dial tcp 127.0.0.1:8080: socket: too many open files`
	const ports = `Get "http://127.0.0.1:8080/api/public/search": dial tcp 127.0.0.1:0->127.0.0.1:8080: connect: cannot assign requested address`
	const inUse = `Get "http://127.0.0.1:8080/api/public/search": dial tcp 127.0.0.9:0->127.0.0.1:8080: bind: address already in use`
	const timeout = `Get "http://127.0.0.1:8080/api/public/search": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`
	results := func(n int, code uint16, err string) []vegeta.Result {
		out := make([]vegeta.Result, n)
		for i := range out {
			out[i] = vegeta.Result{Code: code, Error: err}
		}
		return out
	}
	tests := []struct {
		name    string
		max     float64
		results []vegeta.Result
		during  string // the error the guard trips with while adding: "", "failing" or "local"
		final   string // Final's
	}{
		{"out of descriptors", 0.5, results(50, 0, emfile), "local", ""},
		{"out of local ports", 0.5, results(50, 0, ports), "local", ""},
		{"the source's ports held elsewhere", 0.5, results(50, 0, inUse), "local", ""},
		{"a pacing benchmark beside the run", 0.5, append(results(60, 0, inUse), results(40, 200, "")...), "local", ""},
		{"a few binds failed", 0, append(results(15, 0, inUse), results(85, 200, "")...), "", "local"},
		{"a dead target", 0.5, results(50, 0, timeout), "failing", ""},
		{"five requests that all time out", 0.5, results(5, 0, timeout), "", "failing"},
		{"one request that timed out", 0.5, results(1, 0, timeout), "", "failing"},
		{"five that failed here", 0.5, results(5, 0, emfile), "", "local"},
		{"all time out, guard off", 0, results(300, 0, timeout), "", "failing"},
		{"five 503s", 0.5, results(5, 503, ""), "", "failing"},
		{"four timeouts and an answer", 0.5, append(results(4, 0, timeout), vegeta.Result{Code: 200}), "", ""},
		{"five refusals", 0.5, results(5, 429, ""), "", ""},
		{"a fifth failed here, guard off", 0, append(results(20, 0, emfile), results(80, 200, "")...), "", "local"},
		{"a few failed here", 0.5, append(results(5, 0, emfile), results(95, 200, "")...), "", ""},
		{"nothing", 0.5, nil, "", ""},
	}
	kind := func(err error) string {
		switch {
		case err == nil:
			return ""
		case errors.As(err, new(*LocalLimitError)):
			return "local"
		case errors.As(err, new(*FailingError)):
			return "failing"
		}
		return err.Error()
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := FailureGuard{Window: 10, Max: tt.max}
			during := ""
			for i := range tt.results {
				if err := g.Add(archive.Result{Result: &tt.results[i]}); err != nil {
					during = kind(err)
					if during == "local" && (!strings.Contains(err.Error(), "ulimit -n") || strings.Contains(err.Error(), "127.0.0.1")) {
						t.Errorf("%v does not say how to raise the limit, or names the URL (which may carry a credential)", err)
					}
					break
				}
			}
			if during != tt.during {
				t.Errorf("tripped while adding with %q, want %q", during, tt.during)
			}
			if during == "" {
				if got := kind(g.Final()); got != tt.final {
					t.Errorf("Final %q (%v), want %q", got, g.Final(), tt.final)
				}
			}
		})
	}
}
