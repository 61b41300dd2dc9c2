package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
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
		{[]string{"contract"}, "say show or check FILE"},
		{[]string{"contract", "check"}, "check takes one contract file, got 0 arguments"},
		{[]string{"contract", "shw"}, `unknown action "shw"`},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want 2 and %q in\n%s", tc.args, code, tc.want, stderr)
		}
	}
}
