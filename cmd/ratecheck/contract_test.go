package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
)

// TestContractShow: contract show prints the documented API's contract as
// a file that contract check accepts and that reads back to it.
func TestContractShow(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCmd(t, "contract", "show")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	c, err := scenario.ParseContract("shown.yaml", []byte(stdout))
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if !reflect.DeepEqual(c, scenario.Builtin()) {
		t.Errorf("contract show reads back to\n%+v\nnot the built-in contract\n%s", c, stdout)
	}
	file := filepath.Join(t.TempDir(), "builtin.yaml")
	if err := os.WriteFile(file, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCmd(t, "contract", "check", file)
	for _, want := range []string{"2 routes, 2 identities, 2 limits", "limit rest: 240 requests per 1m0s on route rest-search, counted by client-address; refused with 429; refusals count: true; family: sliding-log",
		"limit mcp: 120 requests per 1m0s on route mcp-search, counted by client-address; refused with 429 and JSON-RPC -32603"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("contract check of what show printed: exit %d, want %q in\n%s%s", code, want, stdout, stderr)
		}
	}
}

// TestContractCheck: the example contract of an API keyed by token is
// summarised limit by limit, with its shared budget, its stacked limits
// and the variables its identities read that are unset; a bad contract,
// or a bad command line, exits 2 saying what to fix.
func TestContractCheck(t *testing.T) {
	t.Parallel()
	c, err := scenario.LoadContract("../../examples/contracts/api-key.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	summariseContract(&b, "api-key.yaml", c, func(name string) (string, bool) { return "k", name == "FREE_KEY_1" })
	for _, want := range []string{
		"api-key.yaml: 3 routes, 4 identities, 3 limits",
		"limit per-key: 10 (free) or 100 (paid) requests per 1s on routes search, list, one budget they share, counted by header X-Api-Key",
		"route search is also held to hourly (stacked: a request counts against each)",
		"limit hourly: 1000 requests per 1h0m0s on route search, counted by header X-Api-Key; refused with 429; refusals count: unknown; family: not documented",
		"limit export: 20 requests per 5s on route export, counted by global; refused with 503; refusals count: false; family: token-bucket",
		"not set in this environment (a run needs them): FREE_KEY_2, FREE_KEY_3",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %q in\n%s", want, b.String())
		}
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("routes:\n  - name: search\n    path: /v1\nlimits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 10\n    key: global\n    refused: {status: 429}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"contract", "check", bad}, bad + `:8: duration "10" has no unit (10s?)`},
		{[]string{"contract", "check", filepath.Join(t.TempDir(), "none.yaml")}, "none.yaml"},
		{[]string{"contract"}, "say show, check FILE or discover --target URL"},
		{[]string{"contract", "check"}, "check takes one contract file, got 0 arguments"},
		{[]string{"contract", "shw"}, `unknown action "shw"`},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q in\n%s", tc.args, code, tc.want, stderr)
		}
	}
}

// TestContractCheckPrintsThePlan: contract check says what verify
// --contract would send for each limit, counted from the plan's definition
// (method.Plan) at the contract's window of 60 s, and why it plans nothing
// for a contract it cannot prove yet. orders (L 30): onset L, over 1,
// flood L, probes 50 a window over 1.08 W (54), edge 200 a window over
// 0.1 W (20), second burst L, spoof 3·10 forged and 30 plain (60); from the
// second address the isolation burst and its rebound, L each; held for a
// follow-up, one every 0.02 W from 1.2 W to 3.5 W (115) and a burst of L.
// The plan ends with the last probe, the 54th at 50 a window from 0.12 W:
// 0.12 W + 53/50 W = 1.18 W, 70.8 s.
func TestContractCheckPrintsThePlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"../../examples/contracts/orders.yaml", []string{
			"verify --contract ../../examples/contracts/orders.yaml sends, at the window of 1m0s, from two client addresses",
			"limit orders: 225 requests from the limit address (onset 30, over 1, flood 30, probe 54, edge 20, second 30, spoof 60), 60 from the second address (isolation and rebound); if a question is left open, up to 145 more",
			"limit export: 165 requests from the limit address (onset 10, over 1, flood 10, probe 54, edge 20, second 10, spoof 60), 20 from the second address (isolation and rebound); if a question is left open, up to 125 more",
			"the run: about 1m11s, up to 3m30s with follow-ups",
		}},
		// search (L 30), counted by key: the spoof span holds ten more of
		// key-1 from the second address and ten more plain ones (70); the
		// isolation burst and its rebound go as key-2 from the limit
		// address.
		{"../../examples/contracts/by-key.yaml", []string{
			"limit search: 235 requests as key-1 from the limit address (onset 30, over 1, flood 30, probe 54, edge 20, second 30, spoof 70), 60 as key-2 from it (isolation and rebound: another key's budget), 10 as key-1 from the second address (the key, not the address, is counted); if a question is left open, up to 145 more as key-1 from the limit address (follow-up)",
		}},
		// reads (L 30) over search and list: ten probes of list among the
		// spoof probes, and ten more plain ones (70).
		{"../../examples/contracts/shared.yaml", []string{
			"limit reads: 235 requests from the limit address (onset 30, over 1, flood 30, probe 54, edge 20, second 30, spoof 70), 10 to route list from it among the spoof probes (one budget the routes share), 60 from the second address (isolation and rebound); if a question is left open, up to 145 more",
		}},
		// a quota per tier: each tier a limit of its own, with two keys of
		// the tier.
		{"../../examples/contracts/tiers.yaml", []string{
			"limit search:free: 175 requests as free-1 from the limit address (onset 10, over 1, flood 10, probe 54, edge 20, second 10, spoof 70), 20 as free-2 from it",
			"limit search:paid: 235 requests as paid-1 from the limit address (onset 30, over 1, flood 30, probe 54, edge 20, second 30, spoof 70), 60 as paid-2 from it",
		}},
		{"../../examples/contracts/api-key.yaml", []string{
			"verify --contract plans nothing for it yet: ../../examples/contracts/api-key.yaml: limit hourly: route search is also held to per-key",
		}},
		// per-minute is orders' plan (L 30); per-hour, stacked on it, gets
		// at most its 225 and the follow-up's 145.
		{"../../examples/contracts/stacked.yaml", []string{
			"limit per-minute: 225 requests from the limit address (onset 30, over 1, flood 30, probe 54, edge 20, second 30, spoof 60), 60 from the second address (isolation and rebound); if a question is left open, up to 145 more",
			"limit per-hour (1000 per 1h0m0s): stacked on per-minute over route search, no probes of its own (its onset, paced under per-minute's limit from a third address, takes about 42m5s: verify --max-duration 42m5s probes it): the run sends at most 370 requests to the route from the limit address, fewer than its quota, so it is judged inconclusive, never passed, saying so and that a run of about 3h30m0s would prove it",
		}},
	} {
		code, stdout, stderr := runCmd(t, "contract", "check", tc.file)
		for _, want := range tc.want {
			if code != exitOK || !strings.Contains(stdout, want) {
				t.Errorf("contract check %s: exit %d, want %q in\n%s%s", tc.file, code, want, stdout, stderr)
			}
		}
	}
}

// TestVerifyRefusesAReachableStackedLimit: a limit stacked on another
// whose quota the run can reach (370 an hour on a route the plan sends up
// to 370 requests, 225 and a follow-up's 145) is refused before anything is
// sent, naming it: the two limits' refusals could not be told apart.
// contract check says the same.
func TestVerifyRefusesAReachableStackedLimit(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../examples/contracts/stacked.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "reachable.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), "quota: 1000", "quota: 370", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "verify", "--contract", file)
	want := file + ": limit per-hour: it is stacked on per-minute over route search, and the run sends up to 370 requests to the route from the limit address, at least its quota of 370"
	if code != exitUsage || !strings.Contains(stderr, want) || strings.Contains(stderr, "probing") {
		t.Errorf("verify: exit %d, want 2 and %q, nothing probed, in\n%s", code, want, stderr)
	}
	code, stdout, _ := runCmd(t, "contract", "check", file)
	if want := "limit per-hour (370 per 1h0m0s): stacked on per-minute over route search, and the run sends up to 370 requests to the route from the limit address, at least its quota: verify refuses the contract before sending"; code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("contract check: exit %d, want %q in\n%s", code, want, stdout)
	}
}

// TestServeContract: serve --contract enforces a contract over HTTP: a
// budget per API key shared by two routes, each key's tier its quota (the
// tier of the identity whose credential, read from a file, it is), the
// contract's refusal body, 401 for a key of no tier, and an MCP tool's
// calls refused with the limit's JSON-RPC code; the window is a minute, so
// every request falls in one.
func TestServeContract(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, key := range map[string]string{"free": "free-key", "paid": "paid-key"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "contract.yaml")
	contract := `routes:
  - {name: search, path: /v1/search}
  - {name: list, path: /v1/items}
  - {name: tool, rpc: tools/call, params: {name: search, arguments: {query: rate limits}}}
identities:
  - {name: free-1, headers: {X-Api-Key: "${file:` + filepath.Join(dir, "free") + `}"}, tier: free}
  - {name: paid-1, headers: {X-Api-Key: "${file:` + filepath.Join(dir, "paid") + `}"}, tier: paid}
limits:
  - name: per-key
    routes: [search, list]
    quota: {free: 2, paid: 3}
    window: 1m
    key: header X-Api-Key
    refused: {status: 429, body: {error: {code: too_many}}}
  - name: mcp
    routes: [tool]
    quota: 1
    window: 1m
    key: client-address
    refused: {status: 429, jsonrpc_code: -32000}
`
	if err := os.WriteFile(file, []byte(contract), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := startServe(t, "--contract", file, "--quiet")
	get := func(path, key string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	steps := []struct {
		path, key string
		want      int
		body      string
	}{
		{"/v1/search", "free-key", 200, `"route":"search"`},
		{"/v1/items", "free-key", 200, `"route":"list"`},
		{"/v1/search", "free-key", 429, `{"error":{"code":"too_many"}}`},
		{"/v1/items", "paid-key", 200, ""},
		{"/v1/search", "paid-key", 200, ""},
		{"/v1/search", "paid-key", 200, ""},
		{"/v1/items", "paid-key", 429, ""},
		{"/v1/search", "stolen-key", 401, `"unknown_key"`},
		{"/v1/nothing", "free-key", 404, ""},
	}
	for i, s := range steps {
		if code, body := get(s.path, s.key); code != s.want || !strings.Contains(body, s.body) {
			t.Errorf("step %d, %s with key %s: %d %s, want %d with %s", i, s.path, s.key, code, body, s.want, s.body)
		}
	}
	for i, want := range []string{`"result"`, `"code":-32000`} {
		tpl, err := mcpwire.Build(mcpwire.Request{Method: "tools/call", Params: map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits"}},
			Client: mcpwire.Implementation{Name: "ratecheck-test", Version: "0"}})
		if err != nil {
			t.Fatal(err)
		}
		req, err := tpl.NewRequest(context.Background(), base+"/mcp", uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("MCP call %d: %d %s, want %s", i+1, resp.StatusCode, b, want)
		}
	}
}

// TestServeContractBadInput: serve --contract refuses, exit 2 before it
// listens, a contract it cannot serve and flags the contract overrides,
// saying what to do.
func TestServeContractBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.yaml", "routes: [{name: a, path: /a}]\nlimits: [{name: l, routes: [a], quota: 2, window: 1s, key: client-address, refused: {status: 429}}]\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--contract", ok, "--rest-limit", "10"}, "--rest-limit with --contract: the contract says each limit's quota and window"},
		{[]string{"--contract", ok, "--window", "1s"}, "--window with --contract"},
		{[]string{"--contract", ok, "--advertise", "draft"}, "--advertise with --contract"},
		{[]string{"--contract", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"--contract", write("unset.yaml", "routes: [{name: a, path: /a}]\nidentities: [{name: free-1, headers: {X-Api-Key: \"${RATECHECK_TEST_UNSET_KEY}\"}, tier: free}]\n"+
			"limits: [{name: l, routes: [a], quota: {free: 2}, window: 1s, key: header X-Api-Key, refused: {status: 429}}]\n")},
			`identity "free-1": header X-Api-Key reads ${RATECHECK_TEST_UNSET_KEY}, which is empty or not set`},
		{[]string{"--contract", write("rpc.yaml", "routes: [{name: a, rpc: tools/list}]\nlimits: [{name: l, routes: [a], quota: 2, window: 1s, key: client-address, refused: {status: 429}}]\n")},
			"route a: the reference target tells MCP routes apart by the tool a tools/call names"},
		{[]string{"--contract", write("bad.yaml", "routes: [{name: a, path: /a}]\nlimits: [{name: l, routes: [a], quota: 0, window: 1s, key: client-address, refused: {status: 429}}]\n")},
			"bad.yaml:2"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCmd(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, tt.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) || strings.Contains(stdout, "listening") {
			t.Errorf("serve %v: exit %d, stderr %q, want exit 2 saying %q before listening", tt.args, code, stderr, tt.want)
		}
	}
}

// TestContractDiscover: discover sends one request per route with the
// credential it read, and drafts a limit per advertised policy: one over
// the two routes that advertise RateLimit-Policy "default";q=100;w=10
// (guessed shared, keyed by the credential's header), one from a bare
// X-RateLimit-Limit (window guessed); a malformed field is named at the
// top; the draft is a valid contract and holds the reference, never the
// key. It never overwrites a file, refuses an inline credential, and
// writes nothing when nothing is advertised.
func TestContractDiscover(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		switch r.URL.Path {
		case "/v1/search", "/v1/items":
			w.Header().Set("RateLimit-Policy", `"default";q=100;w=10`)
			w.Header().Set("RateLimit", `"default";r=99;t=10`)
		case "/v1/export":
			w.Header().Set("X-RateLimit-Limit", "20")
		case "/v1/broken":
			w.Header().Set("RateLimit-Policy", `"default";w=10`)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("secret-key-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "draft.yaml")
	args := []string{"contract", "discover", "--target", srv.URL, "--route", "search=/v1/search?q=rate", "--route", "list=/v1/items",
		"--route", "export=POST /v1/export", "--route", "broken=/v1/broken", "--header", "X-Api-Key: ${file:" + keyFile + "}"}
	code, _, stderr := runCmd(t, append(args, "--out", out)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	mu.Lock()
	if len(keys) != 4 || slices.ContainsFunc(keys, func(k string) bool { return k != "secret-key-123" }) {
		t.Errorf("the target saw keys %q, want the file's key on each of 4 requests", keys)
	}
	mu.Unlock()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{
		`route broken: RateLimit-Policy item 1: policy "default": want the parameter q`,
		"name: default", "- search\n", "- list\n", "quota: 100", "window: 10s\n",
		"key: header X-Api-Key # GUESSED", "name: export", "quota: 20", "window: 1m0s # GUESSED",
		"X-Api-Key: ${file:" + keyFile + "}",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the draft lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "secret-key-123") {
		t.Errorf("the draft holds the credential's value:\n%s", text)
	}
	c, err := scenario.LoadContract(out)
	if err != nil {
		t.Fatalf("the draft is not a valid contract: %v\n%s", err, text)
	}
	if len(c.Limits) != 2 || len(c.Limits[0].Routes) != 2 {
		t.Errorf("limits %+v, want default over search and list, and export", c.Limits)
	}
	bad := []struct {
		args []string
		code int
		want string
	}{
		{append(args, "--out", out), exitUsage, "exists: discover never overwrites a file"},
		{[]string{"contract", "discover", "--target", srv.URL, "--header", "X-Api-Key: inline-key"}, exitUsage, "a credential is given as a reference"},
		{[]string{"contract", "discover", "--target", srv.URL, "--route", "none=/v1/none"}, exitInconclusive, "no route's answer advertised a quota"},
		{[]string{"contract", "discover", "--route", "a=/a"}, exitUsage, "--target is required"},
		{[]string{"contract", "discover", "--target", srv.URL, "--route", "a=v1"}, exitUsage, `--route "a=v1": want NAME=PATH`},
	}
	for _, b := range bad {
		code, stdout, stderr := runCmd(t, b.args...)
		if code != b.code || !strings.Contains(stderr, b.want) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d saying %q, nothing written", b.args, code, stderr, stdout, b.code, b.want)
		}
	}
}

// TestContractSchema: docs/schema/contract.json describes every contract
// ratecheck reads or writes (the examples, contract show's, a discovered
// draft) and refuses what contract check refuses for its form: an unknown
// field, a quota of zero, a window without its unit, a key of no kind, a
// status that is not HTTP's, a route with both a path and an rpc.
func TestContractSchema(t *testing.T) {
	t.Parallel()
	schema := compiledSchema(t, "contract.json")
	asJSON := func(name string, data []byte) any {
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return doc
	}
	valid := map[string][]byte{}
	examples, _ := filepath.Glob("../../examples/contracts/*.yaml")
	for _, f := range examples {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		valid[f] = b
	}
	shown, err := scenario.Builtin().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	valid["contract show"] = shown
	d, err := scenario.DraftContract([]scenario.Route{{Name: "search", Request: scenario.Request{Path: "/v1/search"}}}, map[string]string{"X-Api-Key": "${KEY}"},
		[]scenario.Advertisement{{Route: "search", Policy: "default", Quota: 100, Window: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if valid["a discovered draft"], err = d.Marshal(nil); err != nil {
		t.Fatal(err)
	}
	if len(valid) < 3 {
		t.Fatalf("only %d contracts to validate", len(valid))
	}
	for name, data := range valid {
		if _, err := scenario.ParseContract(name, data); err != nil {
			t.Fatalf("%s: contract check refuses it: %v", name, err)
		}
		if err := schema.Validate(asJSON(name, data)); err != nil {
			t.Errorf("%s does not match docs/schema/contract.json: %v", name, err)
		}
	}
	const ok = "routes: [{name: a, path: /a}]\nlimits: [{name: l, routes: [a], quota: 2, window: 1s, key: client-address, refused: {status: 429}}]\n"
	for _, bad := range []string{
		strings.Replace(ok, "quota: 2", "quota: 2, colour: red", 1),
		strings.Replace(ok, "quota: 2", "quota: 0", 1),
		strings.Replace(ok, "window: 1s", "window: 10", 1),
		strings.Replace(ok, "key: client-address", "key: header", 1),
		strings.Replace(ok, "status: 429", "status: 700", 1),
		strings.Replace(ok, "path: /a", "path: /a, rpc: tools/call", 1),
	} {
		if _, err := scenario.ParseContract("bad.yaml", []byte(bad)); err == nil {
			t.Errorf("contract check accepts\n%s", bad)
		}
		if err := schema.Validate(asJSON("bad.yaml", []byte(bad))); err == nil {
			t.Errorf("the schema accepts\n%s", bad)
		}
	}
}
