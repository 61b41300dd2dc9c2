package client

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSendOnce reproduces net/http's silent resend: the second request on a
// keep-alive connection is read by the server, which then drops the
// connection without answering. The plain Transport resends it on a fresh
// connection (the server sees it twice, the caller sees one success);
// SendOnce returns the failure instead, and the server sees it once.
func TestSendOnce(t *testing.T) {
	for _, tc := range []struct {
		name                string
		once                bool
		method, body, idkey string
		wantSeen            int
		wantErr             bool
	}{
		{name: "GET, plain transport resends", method: "GET", wantSeen: 3},
		{name: "GET, SendOnce", once: true, method: "GET", wantSeen: 2, wantErr: true},
		{name: "HEAD, SendOnce", once: true, method: "HEAD", wantSeen: 2, wantErr: true},
		{name: "POST with Idempotency-Key, plain transport resends", method: "POST", body: "{}", idkey: "k", wantSeen: 3},
		{name: "POST with Idempotency-Key, SendOnce", once: true, method: "POST", body: "{}", idkey: "k", wantSeen: 2, wantErr: true},
		{name: "POST, never resent", once: true, method: "POST", body: "{}", wantSeen: 2, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := 0
			perConn := map[string]int{}
			var bodies []string
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b := make([]byte, 16)
				n, _ := r.Body.Read(b)
				mu.Lock()
				seen++
				perConn[r.RemoteAddr]++
				nth := perConn[r.RemoteAddr]
				bodies = append(bodies, string(b[:n]))
				if len(r.TransferEncoding) > 0 {
					t.Errorf("%s sent with Transfer-Encoding %v", r.Method, r.TransferEncoding)
				}
				mu.Unlock()
				if nth == 2 {
					c, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						c.Close()
					}
					return
				}
				w.Write([]byte("ok"))
			}))
			defer ts.Close()
			tr := &http.Transport{MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			var rt http.RoundTripper = tr
			if tc.once {
				rt = SendOnce(tr)
			}
			hc := &http.Client{Transport: rt}
			var errs []error
			for range 2 {
				req, err := http.NewRequest(tc.method, ts.URL, strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				if tc.idkey != "" {
					req.Header.Set("Idempotency-Key", tc.idkey)
				}
				resp, err := hc.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errs = append(errs, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if seen != tc.wantSeen || errs[0] != nil || (errs[1] != nil) != tc.wantErr {
				t.Errorf("server saw %d requests, errors %v; want %d, second failing: %v", seen, errs, tc.wantSeen, tc.wantErr)
			}
			for _, b := range bodies {
				if b != tc.body {
					t.Errorf("server got body %q, want %q", b, tc.body)
				}
			}
		})
	}
}

// TestSendOnceClosesIdleConnections: a client whose transport is wrapped
// by SendOnce still closes its idle keep-alive connections when asked
// (reachability checks and handshakes left one open per call before).
func TestSendOnceClosesIdleConnections(t *testing.T) {
	closed := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	hc := &http.Client{Transport: SendOnce(&http.Transport{})}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	hc.CloseIdleConnections()
	select {
	case <-closed:
	case <-time.After(10 * time.Second): // a bound on waiting, not a figure under test
		t.Fatal("the idle connection was not closed")
	}
}
