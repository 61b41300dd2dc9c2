package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/connectbyjbrh/ratecheck/internal/clock"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
)

// DefaultAttempts caps total attempts (the first one included).
const DefaultAttempts = 4

// maxBody caps the bytes of a response body read.
const maxBody = 1 << 20

// Client is a REST and MCP client that retries as the contract advises.
// Set BaseURL; every other field has a working zero value. A Client is safe
// for concurrent use once its fields are set, provided Rand is (the default
// is).
type Client struct {
	// BaseURL is the target, such as https://connectbyjbrh.com.
	BaseURL string
	// HTTP sends the requests (nil: http.DefaultClient).
	HTTP *http.Client
	// Backoff spaces retries (zero: full jitter, base 1s, cap 30s).
	Backoff Backoff
	// Attempts caps total attempts per request (0: DefaultAttempts).
	Attempts int
	// Governor, when set, paces the client's requests (first attempts;
	// retries keep their jitter) and slows it down after a request gave
	// up on repeated 429s.
	Governor *Governor
	// Rand returns uniform draws in [0, 1) (nil: math/rand/v2).
	Rand func() float64
	// Sleep waits d or until ctx is done (nil: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Now returns the time (nil: time.Now).
	Now func() time.Time
	// Log receives one line per attempt that did not succeed (nil: none).
	Log *slog.Logger
	// OnAttempt, when set, is called after every attempt, in order per
	// request (from the request's goroutine).
	OnAttempt func(Attempt)
	// ClientInfo names the client in MCP requests (zero:
	// [mcpwire.DefaultClient]).
	ClientInfo mcpwire.Implementation

	ids     atomic.Uint64
	session atomic.Pointer[Session]
	renewMu sync.Mutex
}

// Attempt is one try of a request, as observed.
type Attempt struct {
	// Request numbers the logical request within the client (from 1); N
	// numbers the attempt within it (from 1).
	Request uint64
	N       int
	Method  string // HTTP method
	Route   string // REST path or MCP method
	URL     string
	Start   time.Time
	Latency time.Duration
	Status  int // 0 when Err is set
	Header  http.Header
	Body    []byte
	Err     error
	Class   Class
	// Delay is the backoff drawn before this attempt (zero for the first);
	// Waited is how long the governor held a first attempt back.
	Delay, Waited time.Duration
	BytesOut      uint64
}

// Response is the outcome of a request: its last attempt. Body is the
// answer as read: for an event stream, up to the JSON-RPC response.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte
	Class    Class
	Attempts int
}

// RPC decodes the JSON-RPC response the body carries, in either answer
// form (see [mcpwire.DecodeResponse]).
func (r *Response) RPC() (*mcpwire.Response, error) {
	return mcpwire.DecodeResponse(r.Header.Get("Content-Type"), r.Body, nil)
}

// ExhaustedError is returned when every allowed attempt met a retryable
// failure.
type ExhaustedError struct {
	Attempts int
	Last     Attempt
}

func (e *ExhaustedError) Error() string {
	if e.Last.Err != nil {
		return fmt.Sprintf("%s %s: gave up after %d attempts: %s", e.Last.Method, e.Last.Route, e.Attempts, errKind(e.Last.Err))
	}
	return fmt.Sprintf("%s %s: gave up after %d attempts: status %d", e.Last.Method, e.Last.Route, e.Attempts, e.Last.Status)
}

// Get calls a public REST route, such as Get(ctx, "/api/public/search",
// url.Values{"q": {"rate limits"}}).
func (c *Client) Get(ctx context.Context, path string, query url.Values) (*Response, error) {
	u := c.BaseURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return c.Do(ctx, path, func(ctx context.Context, _ uint64) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	})
}

// Call sends one JSON-RPC request to /mcp, such as Call(ctx, "tools/call",
// map[string]any{"name": "search", "arguments": ...}), in the revision
// the client speaks: [mcpwire.Latest] until [Client.Negotiate] or
// [Client.UseSession] settles another. On 2026-07-28 params._meta carries
// protocolVersion, clientInfo and clientCapabilities, merged under a
// _meta the caller passes (its keys win); the transport headers are
// derived from the body, so they always agree with it (see
// [mcpwire.Build]).
//
// In a session of an older revision, a 404 means the server ended the
// session: Call starts a new one (initialize) and sends the request once
// more.
func (c *Client) Call(ctx context.Context, method string, params map[string]any) (*Response, error) {
	s := c.session.Load()
	resp, err := c.call(ctx, s, method, params, false)
	if err != nil || resp.Status != http.StatusNotFound || s == nil || s.ID == "" {
		return resp, err
	}
	ns, nerr := c.renew(ctx, s)
	if nerr != nil {
		return resp, fmt.Errorf("%s: the server ended session %s (404) and a new one failed: %w", method, s.ID, nerr)
	}
	return c.call(ctx, ns, method, params, false)
}

// call sends one MCP message in session s (nil: Latest, no session).
func (c *Client) call(ctx context.Context, s *Session, method string, params map[string]any, notify bool) (*Response, error) {
	req := mcpwire.Request{Method: method, Params: params, Client: c.ClientInfo, Notification: notify}
	if s != nil {
		req.Revision, req.SessionID = s.Revision, s.ID
	}
	tpl, err := mcpwire.Build(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	endpoint := strings.TrimRight(c.BaseURL, "/") + "/mcp"
	return c.Do(ctx, method, func(ctx context.Context, id uint64) (*http.Request, error) {
		return tpl.NewRequest(ctx, endpoint, id)
	})
}

// Do runs the retry loop over any request: newReq builds attempt n's
// request afresh (id is the logical request's number, the same on every
// attempt). route names it in logs and errors. Do adds no header: a
// request is sent as built.
//
// Do returns the last attempt's response. The error is non-nil when the
// request could not be built, when ctx ended, or (an *ExhaustedError) when
// every allowed attempt met a retryable failure. Answers and tool errors
// are responses, not errors: see Response.Class.
func (c *Client) Do(ctx context.Context, route string, newReq func(ctx context.Context, id uint64) (*http.Request, error)) (*Response, error) {
	attempts := c.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	now, sleep, draw := c.Now, c.Sleep, c.Rand
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = clock.Sleep
	}
	if draw == nil {
		draw = rand.Float64
	}
	b := c.Backoff.Defaults()
	id := c.ids.Add(1)
	var delay, prev time.Duration
	in429 := 0
	for n := 1; ; n++ {
		var waited time.Duration
		if c.Governor != nil && n == 1 {
			if waited = c.Governor.Reserve(now()); waited > 0 {
				if err := sleep(ctx, waited); err != nil {
					return nil, err
				}
			}
		}
		req, err := newReq(ctx, id)
		if err != nil {
			return nil, err
		}
		a := c.send(hc, req, now, Attempt{Request: id, N: n, Method: req.Method, Route: route, URL: req.URL.String(), Delay: delay, Waited: waited})
		if ctx.Err() != nil {
			a.Class = Answer
		}
		c.observe(a)
		out := &Response{Status: a.Status, Header: a.Header, Body: a.Body, Class: a.Class, Attempts: n}
		if a.Status == http.StatusTooManyRequests {
			in429++
		} else {
			in429 = 0
		}
		switch {
		case ctx.Err() != nil:
			return out, ctx.Err()
		case a.Class == Success && c.Governor != nil:
			c.Governor.Recover()
		}
		if a.Class != Retryable {
			return out, nil
		}
		if n >= attempts {
			if in429 >= 2 && c.Governor != nil {
				// Repeated 429s: slow the whole client down, not this
				// request's retries (a shared pause would put clients
				// back in lockstep).
				c.Governor.SlowDown(now())
			}
			return out, &ExhaustedError{Attempts: n, Last: a}
		}
		delay = b.Delay(n-1, prev, draw())
		prev = delay
		if err := sleep(ctx, delay); err != nil {
			return out, err
		}
	}
}

// send sends one attempt's request with hc and completes a with what came
// back: the answer (an event stream read up to its JSON-RPC response), its
// latency on now's clock, and its class.
func (c *Client) send(hc *http.Client, req *http.Request, now func() time.Time, a Attempt) Attempt {
	if req.ContentLength > 0 {
		a.BytesOut = uint64(req.ContentLength)
	}
	a.Start = now()
	resp, err := hc.Do(req)
	if err == nil {
		// An event stream is read up to the JSON-RPC response only: a
		// server may keep it open after the response.
		a.Body, err = mcpwire.ReadAnswer(resp.Body, resp.Header.Get("Content-Type"), maxBody)
		resp.Body.Close()
		a.Status, a.Header = resp.StatusCode, resp.Header
		if errors.Is(err, mcpwire.ErrNoResponse) {
			err = nil // a stream that ended early: Classify judges it
		}
		if err != nil { // the body broke off: a transport fault
			a.Status = 0
		}
	}
	a.Latency, a.Err = now().Sub(a.Start), err
	a.Class = Classify(a.Status, a.Header.Get("Content-Type"), a.Body, err)
	return a
}

// observe logs a failed attempt and hands it to OnAttempt.
func (c *Client) observe(a Attempt) {
	if c.Log != nil && a.Class != Success {
		attrs := []any{"route", a.Route, "method", a.Method, "status", a.Status, "request", a.Request, "attempt", a.N, "class", a.Class.String()}
		if code := errorCode(a.Header.Get("Content-Type"), a.Body); code != "" {
			attrs = append(attrs, "code", code)
		}
		if a.Err != nil {
			attrs = append(attrs, "error", errKind(a.Err))
		}
		c.Log.Info("attempt failed", attrs...)
	}
	if c.OnAttempt != nil {
		c.OnAttempt(a)
	}
}

// errKind is a transport error without the URL (which may carry a query).
func errKind(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
