package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/safefile"
)

// DefaultIdleConnections is how many idle keep-alive connections a
// transport keeps per host when Network.Connections is zero: Vegeta's
// default (its -connections).
const DefaultIdleConnections = 10000

// TLSFiles name the files of a TLS client configuration, as the Vegeta
// CLI's -root-certs, -cert and -key do, and say whether to skip the
// server's verification. The zero value trusts the system's roots (which
// SSL_CERT_FILE and SSL_CERT_DIR replace) and sends no certificate.
type TLSFiles struct {
	// CACert is a PEM file of the certificate authorities to trust
	// instead of the system's ("": the system's).
	CACert string
	// Cert and Key are the PEM client certificate and its private key,
	// for a server that asks for one (mTLS). A Key of "" reads the key
	// from Cert, as Vegeta does.
	Cert, Key string
	// Insecure skips verifying the server's certificate.
	Insecure bool
}

// FileError is a TLS file that could not be used. Role is "cacert",
// "cert" or "key": the flag of the same name sets it.
type FileError struct {
	Role, Path string
	Err        error
}

func (e *FileError) Error() string {
	err := e.Err
	var pe *fs.PathError
	if errors.As(err, &pe) { // the path is said once
		err = pe.Err
	}
	return fmt.Sprintf("%s: %v", e.Path, err)
}
func (e *FileError) Unwrap() error { return e.Err }

// ErrKeyWithoutCert is the error of a key file given without its
// certificate.
var ErrKeyWithoutCert = errors.New("a key without its certificate: name the client certificate too")

// maxPEM is the largest certificate or key file read.
const maxPEM = 1 << 20

// Config reads the files and returns the TLS configuration they make, or a
// *FileError naming the file that is missing, unreadable or not what it
// should be.
func (f TLSFiles) Config() (*tls.Config, error) {
	c := &tls.Config{InsecureSkipVerify: f.Insecure}
	if f.CACert != "" {
		pem, err := safefile.Read(f.CACert, maxPEM)
		if err != nil {
			return nil, &FileError{"cacert", f.CACert, err}
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &FileError{"cacert", f.CACert, errors.New("no PEM certificate in it (want the CA's certificate, -----BEGIN CERTIFICATE-----)")}
		}
	}
	switch {
	case f.Cert == "" && f.Key != "":
		return nil, &FileError{"key", f.Key, ErrKeyWithoutCert}
	case f.Cert != "":
		certPEM, err := safefile.Read(f.Cert, maxPEM)
		if err != nil {
			return nil, &FileError{"cert", f.Cert, err}
		}
		keyPEM, keyRole, keyPath := certPEM, "cert", f.Cert
		if f.Key != "" {
			if keyPEM, err = safefile.Read(f.Key, maxPEM); err != nil {
				return nil, &FileError{"key", f.Key, err}
			}
			keyRole, keyPath = "key", f.Key
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			role, path := "cert", f.Cert
			if !hasCert(certPEM) {
				err = errors.New("no PEM certificate in it")
			} else {
				role, path = keyRole, keyPath
			}
			return nil, &FileError{role, path, err}
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// hasCert reports whether b holds a PEM certificate.
func hasCert(b []byte) bool { return x509.NewCertPool().AppendCertsFromPEM(b) }

// Network is how a client's requests reach the target: TLS, the HTTP
// version, and the connection pool, as the Vegeta CLI's -root-certs,
// -insecure, -cert, -key, -http2, -h2c, -connections and -max-connections
// set them. Every transport ratecheck sends load or probes with is built
// by Transport or Client. The zero value speaks HTTP/1.1, trusts the
// system's roots and keeps DefaultIdleConnections idle connections. A
// Network is safe for concurrent use once its fields are set.
type Network struct {
	// TLS is the TLS client configuration (nil: the system's roots).
	TLS *tls.Config
	// HTTP2 offers HTTP/2 on TLS connections (ALPN), HTTP/1.1 otherwise.
	// H2C speaks HTTP/2 without TLS to http:// URLs (prior knowledge,
	// no upgrade): the server must accept it.
	HTTP2, H2C bool
	// Connections caps the idle keep-alive connections kept per host (0:
	// DefaultIdleConnections); MaxConnections caps the connections open
	// per host at once, a request waiting for one to free up (0: no cap).
	Connections, MaxConnections int
}

// Transport returns a new transport of n whose connections go out from
// source ("": the system's choice; bound as SourceDialer binds it), with
// dialTimeout bounding each dial (0: none). Every call returns a transport
// with a pool of its own.
func (n *Network) Transport(source string, dialTimeout time.Duration) *http.Transport {
	var nw Network
	if n != nil {
		nw = *n
	}
	dialer := SourceDialer(source, dialTimeout)
	idle := nw.Connections
	if idle <= 0 {
		idle = DefaultIdleConnections
	}
	tlsc := nw.TLS
	if tlsc == nil {
		tlsc = &tls.Config{}
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsc.Clone(),
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: idle,
		MaxConnsPerHost:     max(nw.MaxConnections, 0),
		Protocols:           new(http.Protocols),
	}
	switch {
	case nw.H2C:
		// HTTP/2 with prior knowledge on http:// URLs; https:// ones
		// still negotiate (HTTP/2 preferred).
		tr.Protocols.SetUnencryptedHTTP2(true)
		tr.Protocols.SetHTTP2(true)
	case nw.HTTP2:
		tr.Protocols.SetHTTP1(true)
		tr.Protocols.SetHTTP2(true)
	default:
		tr.Protocols.SetHTTP1(true)
	}
	return tr
}

// Client returns an HTTP client of n for one sender: a transport of its
// own from source, every request sent at most once (see SendOnce), no
// redirect followed, each request bounded by timeout (0: none).
func (n *Network) Client(source string, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     SendOnce(n.Transport(source, timeout)),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// TLSProblem is what went wrong in a TLS handshake, as far as a client
// can tell: NotTLS for an error that is no TLS failure.
type TLSProblem int

// The TLS failures TLSProblemOf tells apart.
const (
	NotTLS              TLSProblem = iota
	TLSUntrusted                   // the server's certificate is signed by an authority this machine does not trust
	TLSWrongHost                   // the server's certificate is not for this host name
	TLSInvalid                     // the server's certificate is not valid (expired, or not for serving)
	TLSClientCertWanted            // the server wants a client certificate it trusts
	TLSHandshakeEnded              // the server ended the handshake (a certificate or a TLS version it refused)
	TLSNotSpoken                   // the server does not speak TLS there
	TLSUnverified                  // the server's certificate could not be verified, for another reason
)

// TLSProblemOf says which TLS failure err is, if any: the server's
// certificate not trusted, not for this host, or expired; a server that
// wants a client certificate; a server that does not speak TLS. A command
// says what fixes each.
func TLSProblemOf(err error) TLSProblem {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		header   tls.RecordHeaderError
		op       *net.OpError
	)
	// A server's alert is a *net.OpError "remote error" around an
	// unexported type: only its text names the alert.
	remote := errors.As(err, &op) && op.Op == "remote error" && strings.HasPrefix(op.Err.Error(), "tls: ")
	switch {
	case errors.As(err, &unknown):
		return TLSUntrusted
	case errors.As(err, &hostname):
		return TLSWrongHost
	case errors.As(err, &invalid):
		return TLSInvalid
	case remote && (strings.Contains(op.Err.Error(), "certificate required") || strings.Contains(op.Err.Error(), "bad certificate")):
		return TLSClientCertWanted
	case remote:
		return TLSHandshakeEnded
	case errors.As(err, &header) || (err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")):
		return TLSNotSpoken
	case errors.As(err, &verify):
		return TLSUnverified
	}
	return NotTLS
}
