package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/client"
)

// netFlags are the flags of every command that sends load, on how its
// requests reach the target: TLS trust and client certificate, HTTP
// version, connection and worker bounds. They mean what the Vegeta CLI's
// flags of the same names mean (-root-certs is --cacert here).
type netFlags struct {
	cacert, cert, key string
	insecure          bool
	http2, h2c        bool
	connections       int
	maxConnections    int
	maxWorkers        uint64
}

// declare adds the network flags to fs.
func (n *netFlags) declare(fs *flag.FlagSet) {
	fs.StringVar(&n.cacert, "cacert", "", "trust the certificate authorities of this PEM `file` instead of the system's (see SSL_CERT_FILE)")
	fs.BoolVar(&n.insecure, "insecure", false, "do not verify the target's TLS certificate")
	fs.StringVar(&n.cert, "cert", "", "client certificate PEM `file`, for a target that asks for one (mTLS)")
	fs.StringVar(&n.key, "key", "", "private key PEM `file` of --cert (default: read from --cert)")
	fs.BoolVar(&n.http2, "http2", false, "offer HTTP/2 to an https target (default HTTP/1.1)")
	fs.BoolVar(&n.h2c, "h2c", false, "speak HTTP/2 without TLS to an http target (prior knowledge)")
	fs.IntVar(&n.connections, "connections", client.DefaultIdleConnections, "`n` idle keep-alive connections kept per target host, per stream and source")
	fs.IntVar(&n.maxConnections, "max-connections", 0, "at most `n` connections open per target host at once, per stream and source (0: no cap)")
	fs.Uint64Var(&n.maxWorkers, "max-workers", 0, "at most `n` requests in flight per stream and source (0: no cap); a stream that reaches it sends late, and the run says how late")
}

// network checks the flags against the target (base URL; "" for the
// embedded one) and returns the network they describe, or an error naming
// the flag at fault.
func (n *netFlags) network(target string) (*client.Network, error) {
	var scheme string
	if target != "" {
		if u, err := url.Parse(target); err == nil {
			scheme = u.Scheme
		}
	}
	tlsFlag := ""
	switch {
	case n.cacert != "":
		tlsFlag = "--cacert"
	case n.cert != "":
		tlsFlag = "--cert"
	case n.key != "":
		tlsFlag = "--key"
	case n.insecure:
		tlsFlag = "--insecure"
	}
	switch {
	case n.connections < 0 || n.maxConnections < 0:
		return nil, fmt.Errorf("--connections and --max-connections must not be negative")
	case n.http2 && n.h2c:
		return nil, fmt.Errorf("--http2 and --h2c do not go together: --http2 is HTTP/2 over TLS (https), --h2c HTTP/2 without it (http)")
	case tlsFlag != "" && scheme != "https":
		return nil, fmt.Errorf("%s is for an https:// --target (the embedded target speaks plain HTTP)", tlsFlag)
	case n.http2 && scheme != "https":
		return nil, fmt.Errorf("--http2 is HTTP/2 over TLS, for an https:// --target: use --h2c for HTTP/2 without TLS")
	case n.h2c && scheme != "http":
		return nil, fmt.Errorf("--h2c is HTTP/2 without TLS, for an http:// --target (the embedded target speaks HTTP/1.1): use --http2 for https")
	}
	nw := &client.Network{HTTP2: n.http2, H2C: n.h2c, Connections: n.connections, MaxConnections: n.maxConnections}
	if tlsFlag == "" {
		return nw, nil
	}
	tlsc, err := client.TLSFiles{CACert: n.cacert, Cert: n.cert, Key: n.key, Insecure: n.insecure}.Config()
	var fe *client.FileError
	if errors.As(err, &fe) {
		if errors.Is(err, client.ErrKeyWithoutCert) {
			return nil, fmt.Errorf("--key %s: a key without --cert: name the client certificate too", fe.Path)
		}
		return nil, fmt.Errorf("--%s %v", fe.Role, fe)
	}
	if err != nil {
		return nil, err
	}
	nw.TLS = tlsc
	return nw, nil
}

// sayBehind tells, on stderr, how far a run held at --max-workers fell
// behind its schedule (run.json records it either way).
func sayBehind(stderr io.Writer, name string, plan attack.Plan) {
	if plan.MaxWorkers == 0 || plan.Behind == nil || !plan.Behind.Fell() {
		return
	}
	fmt.Fprintf(stderr, "ratecheck %s: fell behind the schedule at --max-workers %d: %s; the target saw a gentler load than planned (raise --max-workers)\n", name, plan.MaxWorkers, plan.Behind)
}

// orDefault names a source address, "" as the system's choice.
func orDefault(source string) string {
	if source == "" {
		return "the default address"
	}
	return source
}

// orLoopback is a source address, with "" (the system's choice) as
// 127.0.0.1, where it lands on a loopback target.
func orLoopback(src string) string {
	if src == "" {
		return "127.0.0.1"
	}
	return src
}

// parseList splits a comma-separated list, rejecting empty items.
func parseList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("item %d of %q is empty", i+1, s)
		}
		out = append(out, item)
	}
	return out, nil
}
