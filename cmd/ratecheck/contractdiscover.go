package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/connectbyjbrh/ratecheck/analyze"
	"github.com/connectbyjbrh/ratecheck/attack"
	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/client"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/redact"
)

const discoverHelp = `
Send one request per route to --target, read the rate-limit fields of each
answer (RateLimit-Policy and RateLimit of the IETF httpapi draft, drafts 6-7's
RateLimit-Limit, X-RateLimit-Limit) and write a contract draft with what they
advertise: a limit per advertised policy, over every route that advertised it,
with its quota and window. What no answer says (the key, how a refusal looks,
a window a field does not give) is guessed and marked "GUESSED:" beside the
field; a field that does not parse is named at the top, never guessed from.

  --route NAME=PATH           a GET, such as search=/v1/search?q=rate
  --route "NAME=METHOD PATH"  another method, such as "export=POST /v1/export"
  --header "NAME: VALUE"      sent with every request; a credential's VALUE is
                              a reference, ${VARIABLE} or ${file:PATH}, read
                              now and written to the draft as the reference

Without --route, the documented API's REST route (contract show) is tried.
Exit codes: 0 a draft written, 2 bad usage or a target that cannot be reached,
4 no answer advertised a quota in requests (nothing written).`

// discoverOptions are the flags of "contract discover".
type discoverOptions struct {
	target  string
	routes  []string
	headers []string
	out     string
	timeout time.Duration
}

// runDiscover is "contract discover": one request per route, the draft
// their answers suggest.
func runDiscover(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o discoverOptions
	fs := newFlagSet("contract discover", "--target URL [--route NAME=PATH]... [flags]", discoverHelp, stderr)
	fs.StringVar(&o.target, "target", "", "base `URL` of the API, such as https://api.example.com")
	fs.Func("route", "a route to try, `NAME=[METHOD ]PATH` (repeatable; default: the documented REST search)", func(v string) error {
		o.routes = append(o.routes, v)
		return nil
	})
	fs.Func("header", "a header sent with every request, `\"NAME: VALUE\"` (repeatable; credentials as ${VARIABLE})", func(v string) error {
		o.headers = append(o.headers, v)
		return nil
	})
	fs.StringVar(&o.out, "out", "", "write the draft to this `file` (default: standard output); an existing file is never overwritten")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long each request may take")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	const name = "contract discover"
	if o.target == "" {
		return usageErr(stderr, name, "--target is required: the base URL of the API whose advertised limits to read")
	}
	base, err := url.Parse(o.target)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return usageErr(stderr, name, "--target %q: want a base URL such as https://api.example.com", o.target)
	}
	routes, err := discoverRoutes(o.routes)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	plain, refs, creds, err := discoverHeaders(o.headers, os.LookupEnv)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	if o.out != "" {
		if _, err := os.Stat(o.out); err == nil {
			return usageErr(stderr, name, "--out %s exists: discover never overwrites a file; choose another or remove it", o.out)
		}
	}
	for i := range routes {
		for k, v := range plain {
			if routes[i].Headers == nil {
				routes[i].Headers = map[string]string{}
			}
			routes[i].Headers[k] = v
		}
	}
	hc := (&client.Network{}).Client("", o.timeout)
	var ads []scenario.Advertisement
	var notes []string
	for _, r := range routes {
		req, err := discoverRequest(ctx, base, r, creds)
		if err != nil {
			return usageErr(stderr, name, "route %s: %v", r.Name, err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			fmt.Fprintf(stderr, "ratecheck %s: route %s: %s %s: %v\n", name, r.Name, req.Method, redact.URL(req.URL.String()), err)
			return exitUsage
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		policies, malformed := analyze.Policies(resp.Header)
		for _, m := range malformed {
			notes = append(notes, fmt.Sprintf("route %s: %s: not read, not guessed", r.Name, m))
		}
		fmt.Fprintf(stderr, "ratecheck %s: route %s: %s %s answered %d; %s\n", name, r.Name, req.Method, req.URL.Path, resp.StatusCode, advertisedFields(resp.Header))
		if len(policies) == 0 && len(malformed) == 0 {
			notes = append(notes, fmt.Sprintf("route %s: its answer (%d) advertised no quota", r.Name, resp.StatusCode))
		}
		for _, p := range policies {
			if p.Unit != "requests" {
				notes = append(notes, fmt.Sprintf("route %s: policy %q counts %s, not requests: left out", r.Name, p.Name, p.Unit))
				continue
			}
			ads = append(ads, scenario.Advertisement{Route: r.Name, Policy: p.Name, Quota: int(min(p.Quota, 1<<31-1)), Window: p.Window,
				Partitioned: p.Partitioned, Field: p.Field + ": " + resp.Header.Get(p.Field)})
		}
	}
	draft, err := scenario.DraftContract(routes, refs, ads)
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck %s: %v\n", name, err)
		for _, n := range notes {
			fmt.Fprintf(stderr, "ratecheck %s: %s\n", name, n)
		}
		return exitInconclusive
	}
	draft.Notes = notes
	data, err := draft.Marshal([]string{
		fmt.Sprintf("A limits contract drafted by ratecheck contract discover from %s,", redact.URL(o.target)),
		"one request per route. Each field marked GUESSED is not advertised: check it against the",
		"API's documentation, then run ratecheck contract check on this file.",
	})
	if err != nil {
		fmt.Fprintf(stderr, "ratecheck %s: %v\n", name, err)
		return exitUsage
	}
	if o.out == "" {
		_, _ = stdout.Write(data)
		return exitOK
	}
	f, err := os.OpenFile(o.out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		_, err = f.Write(data)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return usageErr(stderr, name, "--out: %v", err)
	}
	fmt.Fprintf(stderr, "ratecheck %s: draft written to %s (%d limits)\n", name, o.out, len(draft.Contract.Limits))
	return exitOK
}

// advertisedFields names the rate-limit fields of an answer, for the
// progress line.
func advertisedFields(h http.Header) string {
	var got []string
	for _, f := range []string{"RateLimit-Policy", "RateLimit", "RateLimit-Limit", "X-RateLimit-Limit"} {
		if v := h.Get(f); v != "" {
			got = append(got, f+": "+v)
		}
	}
	if len(got) == 0 {
		return "no rate-limit fields"
	}
	return strings.Join(got, "; ")
}

// discoverRoutes reads --route values, NAME=PATH or NAME=METHOD PATH (a
// query after ?); none gives the documented API's HTTP routes.
func discoverRoutes(vals []string) ([]scenario.Route, error) {
	if len(vals) == 0 {
		var rs []scenario.Route
		for _, r := range scenario.Builtin().Routes {
			if r.RPC == "" {
				rs = append(rs, r)
			}
		}
		return rs, nil
	}
	var rs []scenario.Route
	for _, v := range vals {
		name, spec, ok := strings.Cut(v, "=")
		method, path, hasMethod := strings.Cut(strings.TrimSpace(spec), " ")
		if !hasMethod {
			method, path = "", method
		}
		if !ok || name == "" || !strings.HasPrefix(path, "/") || slices.ContainsFunc(rs, func(r scenario.Route) bool { return r.Name == name }) {
			return nil, fmt.Errorf("--route %q: want NAME=PATH or \"NAME=METHOD PATH\" with a path from /, each name once (search=/v1/search?q=rate)", v)
		}
		r := scenario.Route{Name: name, Request: scenario.Request{Method: strings.ToUpper(method)}}
		p, q, _ := strings.Cut(path, "?")
		r.Path = p
		if q != "" {
			vals, err := url.ParseQuery(q)
			if err != nil {
				return nil, fmt.Errorf("--route %q: query: %v", v, err)
			}
			r.Query = map[string]string{}
			for k := range vals {
				r.Query[k] = vals.Get(k)
			}
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// discoverHeaders reads --header values: plain headers, sent and written
// to each route; credentials, whose value must be a ${…} reference, sent
// as read (creds) and written as the reference (refs).
func discoverHeaders(vals []string, env func(string) (string, bool)) (plain, refs map[string]string, creds http.Header, err error) {
	plain, refs, creds = map[string]string{}, map[string]string{}, http.Header{}
	for _, v := range vals {
		k, val, ok := strings.Cut(v, ":")
		k, val = http.CanonicalHeaderKey(strings.TrimSpace(k)), strings.TrimSpace(val)
		if !ok || k == "" {
			return nil, nil, nil, fmt.Errorf("--header %q: want \"NAME: VALUE\"", v)
		}
		if redact.Names(http.Header{k: {val}}) == nil {
			plain[k] = val
			continue
		}
		h, err := scenario.Identity{Name: "--header", Headers: map[string]string{k: val}}.Credentials(env)
		if err != nil {
			return nil, nil, nil, err
		}
		if h.Get(k) == val {
			return nil, nil, nil, fmt.Errorf("--header %s: a credential is given as a reference, ${VARIABLE} or ${file:PATH}, never inline (the draft is written to a file)", k)
		}
		refs[k], creds[k] = val, h[k]
	}
	return plain, refs, creds, nil
}

// discoverRequest is the request of route r against base, with creds, as
// the engine sends it (attack.SpeakingTargeter).
func discoverRequest(ctx context.Context, base *url.URL, r scenario.Route, creds http.Header) (*http.Request, error) {
	var ids atomic.Uint64
	tr, err := attack.SpeakingTargeter(&scenario.Stream{Name: r.Name, Surface: method.REST, Requests: []scenario.Request{r.Request}}, base.String(), creds, &ids, version, "", nil)
	if err != nil {
		return nil, err
	}
	return attack.NextRequest(ctx, tr)
}
