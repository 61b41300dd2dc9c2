package attack

import (
	"context"
	"reflect"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/method"
)

// TestWarnRemote: load for a target off loopback is announced (an event)
// when a person is watching, with time to cancel; loopback targets and
// runs no one watches go straight on.
func TestWarnRemote(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		terminal bool
		target   string
		wantErr  bool
		want     []Event
	}{
		{"script", context.Background(), false, "https://api.example.com", false, nil},
		{"loopback", context.Background(), true, "http://127.0.0.2:8080", false, nil},
		{"embedded", context.Background(), true, "", false, nil},
		{"remote", context.Background(), true, "https://api.example.com", false, []Event{RemoteTarget{Target: "https://api.example.com", Planned: 7100 * time.Millisecond, Wait: 20 * time.Millisecond}}},
		{"remote, cancelled", cancelled, true, "https://api.example.com", true, []Event{RemoteTarget{Target: "https://api.example.com", Planned: 7100 * time.Millisecond, Wait: 20 * time.Millisecond}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Event
			e := &engine{Options: Options{Command: "verify", Interactive: tt.terminal, RemoteWait: 20 * time.Millisecond, Events: func(ev Event) { got = append(got, ev) }}}
			err := e.warnRemote(tt.ctx, tt.target, 7100*time.Millisecond)
			if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("err %v, events %v; want error %v, events %v", err, got, tt.wantErr, tt.want)
			}
		})
	}
}

// TestNeedsBody: the bodies a check reads are those of refusals, of other
// answers outside 2xx and of the failure-table probes; no other 2xx body.
func TestNeedsBody(t *testing.T) {
	for _, tc := range []struct {
		code   uint16
		stream string
		want   bool
	}{
		{200, "onset", false}, {204, "flood", false}, {429, "onset", true}, {503, "onset", true},
		{404, "over", true}, {0, "onset", true}, {200, method.ContractRows[0].Stream, true},
	} {
		l := archive.Labels{Surface: method.REST, Source: "127.0.0.1", Stream: tc.stream}
		if got := needsBody(archive.Result{Result: &vegeta.Result{Code: tc.code, Attack: l.String()}, Labels: l}); got != tc.want {
			t.Errorf("NeedsBody(%d, %s) = %v, want %v", tc.code, tc.stream, got, tc.want)
		}
	}
}
