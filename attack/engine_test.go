package attack

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestWarnRemote: load for a target off loopback is announced at a terminal,
// with time to cancel; loopback targets and non-terminals go straight on.
func TestWarnRemote(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		terminal bool
		target   string
		wantErr  bool
		wantOut  string
	}{
		{"script", context.Background(), false, "https://api.example.com", false, ""},
		{"loopback", context.Background(), true, "http://127.0.0.2:8080", false, ""},
		{"embedded", context.Background(), true, "", false, ""},
		{"remote", context.Background(), true, "https://api.example.com", false, "https://api.example.com is not a loopback address: this sends real load to it for about 7.1s. Starting in 20ms; Ctrl-C to cancel."},
		{"remote, cancelled", cancelled, true, "https://api.example.com", true, "is not a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			e := &Engine{Command: "verify", Stderr: &out, Terminal: tt.terminal, RemoteWait: 20 * time.Millisecond}
			err := e.warnRemote(tt.ctx, tt.target, 7100*time.Millisecond)
			if (err != nil) != tt.wantErr || !strings.Contains(out.String(), tt.wantOut) || (tt.wantOut == "") != (out.Len() == 0) {
				t.Errorf("err %v, said %q; want error %v, saying %q", err, out.String(), tt.wantErr, tt.wantOut)
			}
		})
	}
}
