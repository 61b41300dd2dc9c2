package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/refserver"
)

// referenceHandler is the reference target's handler with window.
func referenceHandler(t *testing.T, window time.Duration) http.Handler {
	t.Helper()
	cfg := refserver.DefaultConfig()
	cfg.Window = window
	srv, err := refserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// writePEM writes der as a PEM block of type kind into dir/name and
// returns its path.
func writePEM(t *testing.T, dir, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serverCA writes the certificate of a TLS test server as a CA file.
func serverCA(t *testing.T, ts *httptest.Server) string {
	return writePEM(t, t.TempDir(), "ca.pem", "CERTIFICATE", ts.Certificate().Raw)
}

// clientCert makes a self-signed client certificate and writes it and its
// key; it returns their paths and the certificate.
func clientCert(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "ratecheck test client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return writePEM(t, dir, "client.pem", "CERTIFICATE", der), writePEM(t, dir, "client-key.pem", "PRIVATE KEY", keyDER), cert
}

// smallProfile writes a profile of five REST searches.
func smallProfile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "five.yaml")
	const p = `name: five
policy: {surface: rest, limit: 240, window: 60s}
streams:
  - name: five
    surface: rest
    requests: [{path: /api/public/search, query: {q: retry}}]
    pacer: {type: constant, rate: 50/s, count: 5}
    expect: {"200": 5}
`
	if err := os.WriteFile(path, []byte(p), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runAttackOn runs the small profile against url with args.
func runAttackOn(t *testing.T, url string, args ...string) (int, string, string) {
	t.Helper()
	return runCmd(t, append([]string{"attack", "--profile", smallProfile(t), "--out", t.TempDir(), "--target", url, "--window", "2s"}, args...)...)
}

// TestVerifyTLS: verify against the reference target behind TLS passes
// with --cacert (or --insecure), and without either says it is a TLS
// problem that --cacert fixes, not an unreachable target.
func TestVerifyTLS(t *testing.T) {
	t.Parallel()
	ts := httptest.NewTLSServer(referenceHandler(t, verifyWindow))
	defer ts.Close()
	ca := serverCA(t, ts)

	// The contract's probes only: what TLS changes is how each connection
	// is made, the same for every check, and the load checks' hundreds of
	// handshakes at once (X25519MLKEM768 in Go code the race detector
	// instruments) are more than two cores beside other tests make within
	// the timeout. The load over TLS is attack's and fleet's below.
	code, v, stderr := runVerifyJSON(t, verifyWindow, "--target", ts.URL, "--cacert", ca, "--checks", "contract")
	if code != exitOK {
		t.Fatalf("verify --cacert: exit %d, failing %v\n%s", code, failing(v), stderr)
	}
	if len(v.Surfaces) != 2 || v.Target != ts.URL {
		t.Errorf("verdict %+v", v)
	}

	code, stdout, stderr := runCmd(t, "verify", "--out", t.TempDir(), "--target", ts.URL, "--window", "2s", "--checks", "contract")
	if code != exitUsage || !strings.Contains(stderr, "TLS") || !strings.Contains(stderr, "--cacert FILE") || !strings.Contains(stderr, "--insecure") || strings.Contains(stderr, "unreachable") {
		t.Errorf("verify without --cacert: exit %d, want 2 and a TLS message naming --cacert\n%s%s", code, stdout, stderr)
	}

	// A target of its own: verify spent the budgets of the first.
	ts = httptest.NewTLSServer(referenceHandler(t, verifyWindow))
	defer ts.Close()
	ca = serverCA(t, ts)
	if code, stdout, stderr := runAttackOn(t, ts.URL, "--insecure"); code != exitOK {
		t.Errorf("attack --insecure: exit %d\n%s%s", code, stdout, stderr)
	}
	// fleet: the primer, the clients and the rows all go over TLS.
	out := t.TempDir()
	code, stdout, stderr = runCmd(t, "fleet", "--out", out, "--target", ts.URL, "--cacert", ca, "--window", verifyWindow.String(),
		"--clients", "3", "--requests", "1", "--attempts", "2")
	if (code != exitOK && code != exitCheckFailed) || !strings.Contains(stdout, "fleet") || strings.Contains(stdout+stderr, "x509") {
		t.Errorf("fleet --cacert: exit %d\n%s%s", code, stdout, stderr)
	}
	// The verdict line names the run folder it judged.
	if !strings.Contains(stdout, "; run "+out+string(filepath.Separator)) {
		t.Errorf("fleet's verdict line does not name its run folder under %s:\n%s", out, stdout)
	}
}

// TestMutualTLS: a target that requires a client certificate is reached
// with --cert and --key, and without them the message says so.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, cert := clientCert(t)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	ts := httptest.NewUnstartedServer(referenceHandler(t, time.Minute))
	ts.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	ts.StartTLS()
	defer ts.Close()
	ca := serverCA(t, ts)

	if code, stdout, stderr := runAttackOn(t, ts.URL, "--cacert", ca, "--cert", certFile, "--key", keyFile); code != exitOK {
		t.Errorf("attack with a client certificate: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runAttackOn(t, ts.URL, "--cacert", ca)
	if code != exitUsage || !strings.Contains(stderr, "--cert FILE and --key FILE") {
		t.Errorf("attack without a client certificate: exit %d, want 2 naming --cert\n%s%s", code, stdout, stderr)
	}
}

// onlyHTTP2 answers 505 to any request that is not HTTP/2 and counts the
// HTTP/2 ones.
func onlyHTTP2(next http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "HTTP/2 only", http.StatusHTTPVersionNotSupported)
			return
		}
		n.Add(1)
		next.ServeHTTP(w, r)
	})
}

// TestHTTP2: --http2 speaks HTTP/2 to an https target, --h2c to an http
// one; without them the requests are HTTP/1.1.
func TestHTTP2(t *testing.T) {
	t.Parallel()
	var tlsN, h2cN atomic.Int64
	tlsTS := httptest.NewUnstartedServer(onlyHTTP2(referenceHandler(t, time.Minute), &tlsN))
	tlsTS.EnableHTTP2 = true
	tlsTS.StartTLS()
	defer tlsTS.Close()
	ca := serverCA(t, tlsTS)

	h2cTS := httptest.NewUnstartedServer(onlyHTTP2(referenceHandler(t, time.Minute), &h2cN))
	h2cTS.Config.Protocols = new(http.Protocols)
	h2cTS.Config.Protocols.SetHTTP1(true)
	h2cTS.Config.Protocols.SetUnencryptedHTTP2(true)
	h2cTS.Start()
	defer h2cTS.Close()

	// Six requests each: the reachability check's HEAD, then five.
	if code, stdout, stderr := runAttackOn(t, tlsTS.URL, "--cacert", ca, "--http2"); code != exitOK || tlsN.Load() != 6 {
		t.Errorf("attack --http2: exit %d, %d HTTP/2 requests, want 6\n%s%s", code, tlsN.Load(), stdout, stderr)
	}
	if code, stdout, stderr := runAttackOn(t, h2cTS.URL, "--h2c"); code != exitOK || h2cN.Load() != 6 {
		t.Errorf("attack --h2c: exit %d, %d HTTP/2 requests, want 6\n%s%s", code, h2cN.Load(), stdout, stderr)
	}
	// Without the flag: HTTP/1.1, every request refused with 505, so the
	// target failed every request (exit 3).
	if code, stdout, stderr := runAttackOn(t, h2cTS.URL); code != exitUnreachable || h2cN.Load() != 6 {
		t.Errorf("attack without --h2c: exit %d, want 3 (five 505s); %d HTTP/2 requests\n%s%s", code, h2cN.Load(), stdout, stderr)
	}
	// verify --checks contract over h2c: every probe arrives as HTTP/2.
	before := h2cN.Load()
	if code, stdout, stderr := runCmd(t, "verify", "--out", t.TempDir(), "--target", h2cTS.URL, "--h2c", "--window", "2s", "--checks", "contract"); code != exitOK || h2cN.Load() == before {
		t.Errorf("verify --h2c: exit %d, %d HTTP/2 requests\n%s%s", code, h2cN.Load()-before, stdout, stderr)
	}
}

// TestMaxWorkersBehind: an open-model attack held at --max-workers
// against a slow target says it fell behind, and by how much, and
// run.json records it.
func TestMaxWorkersBehind(t *testing.T) {
	t.Parallel()
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(60 * time.Millisecond) // five requests due 20 ms apart: one worker falls behind
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"results":[]}`))
	})
	ts := httptest.NewServer(slow)
	defer ts.Close()
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "attack", "--profile", smallProfile(t), "--out", out, "--target", ts.URL, "--window", "2s", "--max-workers", "1")
	if code != exitOK || !strings.Contains(stderr, "fell behind the schedule at --max-workers 1") || !strings.Contains(stderr, "late (stream five)") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-five", archive.RunFile))
	if len(dirs) != 1 {
		t.Fatalf("run.json: %v", dirs)
	}
	b, err := os.ReadFile(dirs[0])
	var info archive.RunInfo
	if err == nil {
		err = json.Unmarshal(b, &info)
	}
	if err != nil || info.BehindMS < 20 || info.LateRequests < 2 {
		t.Errorf("run.json: %v, behind %v ms, %d late", err, info.BehindMS, info.LateRequests)
	}
}

// TestNetFlagsUsage: a bad file or a flag that does not fit the target is
// exit 2 naming the flag.
func TestNetFlagsUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	missing := filepath.Join(dir, "missing.pem")
	certFile, _, _ := clientCert(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--target", "https://127.0.0.1:1", "--cacert", missing}, "--cacert " + missing},
		{[]string{"--target", "https://127.0.0.1:1", "--cacert", notPEM}, "--cacert " + notPEM + ": no PEM certificate"},
		{[]string{"--target", "https://127.0.0.1:1", "--cert", notPEM}, "--cert " + notPEM},
		{[]string{"--target", "https://127.0.0.1:1", "--cert", certFile, "--key", notPEM}, "--key " + notPEM},
		{[]string{"--target", "https://127.0.0.1:1", "--key", certFile}, "--key " + certFile + ": a key without --cert"},
		{[]string{"--cacert", notPEM}, "--cacert is for an https:// --target"},
		{[]string{"--target", "http://127.0.0.1:1", "--insecure"}, "--insecure is for an https:// --target"},
		{[]string{"--target", "http://127.0.0.1:1", "--http2"}, "use --h2c"},
		{[]string{"--h2c"}, "--h2c is HTTP/2 without TLS"},
		{[]string{"--target", "https://127.0.0.1:1", "--http2", "--h2c"}, "do not go together"},
		{[]string{"--connections", "-1"}, "must not be negative"},
	}
	for _, cmd := range []string{"attack", "verify", "fleet"} {
		for _, tt := range tests {
			args := append([]string{cmd, "--out", dir}, tt.args...)
			if cmd == "attack" {
				args = append(args, "--profile", smallProfile(t))
			}
			code, _, stderr := runCmd(t, args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("%s %v: exit %d, want 2 with %q\n%s", cmd, tt.args, code, tt.want, stderr)
			}
		}
	}
}
