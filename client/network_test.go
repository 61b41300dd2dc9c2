package client

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNetworkProtocols(t *testing.T) {
	tests := []struct {
		nw   *Network
		want string
	}{
		{nil, "{HTTP1}"},
		{&Network{}, "{HTTP1}"},
		{&Network{HTTP2: true}, "{HTTP1,HTTP2}"},
		{&Network{H2C: true}, "{HTTP2,UnencryptedHTTP2}"},
	}
	for _, tt := range tests {
		tr := tt.nw.Transport("", 0)
		if got := tr.Protocols.String(); got != tt.want {
			t.Errorf("%+v: protocols %s, want %s", tt.nw, got, tt.want)
		}
		if tr.MaxIdleConnsPerHost != DefaultIdleConnections || tr.MaxConnsPerHost != 0 {
			t.Errorf("%+v: pool %d idle, %d at most", tt.nw, tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost)
		}
	}
	tr := (&Network{Connections: 3, MaxConnections: 5}).Transport("127.0.0.2", 0)
	if tr.MaxIdleConnsPerHost != 3 || tr.MaxConnsPerHost != 5 {
		t.Errorf("pool %d idle, %d at most; want 3, 5", tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost)
	}
}

func TestTLSFilesErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		files      TLSFiles
		role, want string
	}{
		{TLSFiles{CACert: filepath.Join(dir, "none.pem")}, "cacert", "no such file"},
		{TLSFiles{CACert: junk}, "cacert", "no PEM certificate"},
		{TLSFiles{Cert: junk}, "cert", "no PEM certificate"},
		{TLSFiles{Key: junk}, "key", "a key without its certificate"},
	}
	for _, tt := range tests {
		_, err := tt.files.Config()
		var fe *FileError
		if !errors.As(err, &fe) || fe.Role != tt.role || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want a %s error with %q", tt.files, err, tt.role, tt.want)
		}
	}
	c, err := TLSFiles{Insecure: true}.Config()
	if err != nil || !c.InsecureSkipVerify || c.RootCAs != nil {
		t.Errorf("insecure: %+v, %v", c, err)
	}
}

func TestTLSProblemOf(t *testing.T) {
	tlsTS := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsTS.Close()
	plainTS := httptest.NewServer(http.NotFoundHandler())
	defer plainTS.Close()
	var nw *Network
	_, unknown := nw.Client("", 0).Get(tlsTS.URL)
	_, plain := nw.Client("", 0).Get(strings.Replace(plainTS.URL, "http:", "https:", 1))
	tests := []struct {
		err  error
		want TLSProblem
	}{
		{unknown, TLSUntrusted},
		{plain, TLSNotSpoken},
		{errors.New("connection refused"), NotTLS},
		{nil, NotTLS},
	}
	for _, tt := range tests {
		if got := TLSProblemOf(tt.err); got != tt.want {
			t.Errorf("TLSProblemOf(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
