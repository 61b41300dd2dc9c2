package client

import (
	"io"
	"net/http"
)

// SendOnce wraps next so that every request goes out at most once.
//
// net/http's Transport silently resends a request it deems replayable (a
// GET, HEAD, OPTIONS or TRACE, or one with an Idempotency-Key header) when
// the keep-alive connection it was written to fails before the answer:
// a reset, an EOF. The target may well have received and counted the first
// copy. A load generator that archives one result per request would then
// under-report what the target saw, and a rate-limit verdict would be
// judged on the wrong counts. With SendOnce the failure is returned as the
// request's error instead, so it is recorded as the transport error it is.
//
// The cost: a request that never left because its pooled connection had
// just been closed by the server is also an error rather than a silent
// retry. Both are faults in the seed's sense, retryable and not answers.
func SendOnce(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return sendOnce{next}
}

type sendOnce struct{ next http.RoundTripper }

// CloseIdleConnections closes next's idle connections, when it keeps
// any (http.Client.CloseIdleConnections reaches the Transport through it).
func (s sendOnce) CloseIdleConnections() {
	if c, ok := s.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip hands next a shallow copy of req whose body cannot be rewound:
// the Transport only resends a request whose body it can rewind.
// Other requests pass through untouched: the Transport retries them only
// when nothing was written, which the target cannot have counted.
func (s sendOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if !replayable(req) {
		return s.next.RoundTrip(req)
	}
	r := *req
	r.GetBody = nil
	if r.Body == nil || r.Body == http.NoBody {
		// An empty body that is not http.NoBody: for GET and the other
		// methods that usually lack one, the Transport probes it, finds
		// it empty and sends no body and no Content-Length, as before.
		r.Body = emptyBody{}
	}
	return s.next.RoundTrip(&r)
}

// emptyBody is an empty request body the Transport cannot rewind.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }

// replayable reports whether net/http would resend req after a failure on
// a reused connection, going by its method and headers.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, a := req.Header["Idempotency-Key"]
	_, b := req.Header["X-Idempotency-Key"]
	return a || b
}
