package scenario

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestBuiltinContractRoundTrips: the documented API's contract, written
// as a file, reads back to itself, and says the documented numbers.
func TestBuiltinContractRoundTrips(t *testing.T) {
	t.Parallel()
	b := Builtin()
	data, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseContract("builtin.yaml", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if !reflect.DeepEqual(got, b) {
		t.Errorf("read back\n%+v\nwant\n%+v\n%s", got, b, data)
	}
	for _, want := range []string{"quota: 240", "quota: 120", "window: 1m0s", "key: client-address", "code: rate_limited", "jsonrpc_code: -32603"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the built-in contract lacks %q:\n%s", want, data)
		}
	}
}

// TestContractByKey reads the example contract of an API keyed by token:
// a limit by header with a quota per tier, a budget two routes share, and
// two limits stacked on one route.
func TestContractByKey(t *testing.T) {
	t.Parallel()
	c, err := LoadContract("../../examples/contracts/api-key.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Routes) != 3 || len(c.Identities) != 4 || len(c.Limits) != 3 {
		t.Fatalf("%d routes, %d identities, %d limits", len(c.Routes), len(c.Identities), len(c.Limits))
	}
	perKey := c.Limits[0]
	if perKey.Key != (Key{Kind: KeyHeader, Header: "X-Api-Key"}) || perKey.Quota.Tiers["free"] != 10 || perKey.Quota.Tiers["paid"] != 100 ||
		time.Duration(perKey.Window) != time.Second || !reflect.DeepEqual(perKey.Routes, []string{"search", "list"}) {
		t.Errorf("per-key limit %+v", perKey)
	}
	hourly := c.Limits[1]
	if hourly.Quota.N != 1000 || time.Duration(hourly.Window) != time.Hour || hourly.RefusalsCount != Unknown {
		t.Errorf("hourly limit %+v", hourly)
	}
	bucket := c.Limits[2]
	if bucket.Family.Name != "token-bucket" || bucket.Family.Burst != 20 || bucket.Family.Rate.N != 4 || bucket.Key.Kind != KeyGlobal || bucket.RefusalsCount != No {
		t.Errorf("export limit %+v", bucket)
	}
	if c.Identities[0].Headers["X-Api-Key"] != "${FREE_KEY_1}" || c.Identities[3].Address != AddressIsolation {
		t.Errorf("identities %+v", c.Identities)
	}
}

// TestContractBadInput: every bad contract is refused naming the file,
// the line of the field at fault and what to write instead.
func TestContractBadInput(t *testing.T) {
	t.Parallel()
	const head = "routes:\n  - name: search\n    path: /v1/search\n"              // lines 1-3
	const ids = "identities:\n  - name: a\n    headers: {X-Api-Key: \"${K1}\"}\n" // lines 4-6
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown key", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 1s\n    key: global\n    refused: {status: 429}\n    burts: 3\n",
			`c.yaml:14: a limit has no key "burts"`},
		{"unknown key of a route", "routes:\n  - name: search\n    pth: /v1\n", `c.yaml:3: a route has no key "pth" (did you mean "path"?)`},
		{"quota zero", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 0\n    window: 1s\n    key: global\n    refused: {status: 429}\n",
			`c.yaml:10: limit "l": quota 0: want at least 1`},
		{"quota negative", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: -5\n    window: 1s\n    key: global\n    refused: {status: 429}\n",
			`c.yaml:10: limit "l": quota -5`},
		{"quota not a number", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: many\n    window: 1s\n    key: global\n    refused: {status: 429}\n",
			`c.yaml:10: quota "many": want a whole number`},
		{"window without a unit", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 10\n    key: global\n    refused: {status: 429}\n",
			`c.yaml:11: duration "10" has no unit (10s?)`},
		{"window too long", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 48h\n    key: global\n    refused: {status: 429}\n",
			`c.yaml:11: limit "l": window 48h0m0s is outside 1ms to 24h`},
		{"window too short", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 10us\n    key: global\n    refused: {status: 429}\n",
			`c.yaml:11: limit "l": window 10µs is outside 1ms to 24h`},
		{"dangling route", head + ids + "limits:\n  - name: l\n    routes: [search, lsit]\n    quota: 10\n    window: 1s\n    key: global\n    refused: {status: 429}\n",
			`c.yaml:9: limit "l" covers route "lsit", which no route defines (routes: search)`},
		{"header no identity carries", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 1s\n    key: header Authorization\n    refused: {status: 429}\n",
			`c.yaml:12: limit "l" counts by header Authorization, and no identity sends it`},
		{"two identities with one key", head + ids + "  - name: b\n    headers: {X-Api-Key: \"${K1}\"}\nlimits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 1s\n    key: header X-Api-Key\n    refused: {status: 429}\n",
			`c.yaml:8: identities "a" and "b" send one key (X-Api-Key ${K1})`},
		{"tier without identities", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: {free: 10, paid: 100}\n    window: 1s\n    key: header X-Api-Key\n    refused: {status: 429}\n",
			`c.yaml:10: limit "l" has a quota for tier "free", and no identity is of it`},
		{"credential inline", head + "identities:\n  - name: a\n    headers: {X-Api-Key: sk-live-123}\nlimits: []\n",
			`c.yaml:6: identity "a" writes the credential X-Api-Key inline: write ${VARIABLE}`},
		{"credential inline in a route", "routes:\n  - name: search\n    path: /v1/search\n    headers:\n      Authorization: Bearer abc\nlimits: []\n",
			`c.yaml:5: route "search" writes the credential Authorization inline`},
		{"bad key kind", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 1s\n    key: per-user\n    refused: {status: 429}\n",
			`c.yaml:12: key "per-user": want client-address, header NAME`},
		{"no refusal", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 1s\n    key: global\n",
			`c.yaml:8: limit "l" does not say how a refusal looks`},
		{"token bucket without its rate", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 1s\n    key: global\n    refused: {status: 429}\n    family: {name: token-bucket, burst: 5}\n",
			`c.yaml:14: a token bucket takes its burst and rate`},
		{"unknown family", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 1s\n    key: global\n    refused: {status: 429}\n    family: leaky\n",
			`c.yaml:14: family "leaky": want one of sliding-log, fixed-window, sliding-window-counter, token-bucket`},
		{"refusals_count neither", head + ids + "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 1s\n    key: global\n    refused: {status: 429}\n    refusals_count: maybe\n",
			`c.yaml:14: "maybe": want true, false or unknown`},
		{"route with path and rpc", "routes:\n  - name: search\n    path: /v1\n    rpc: tools/call\nlimits: []\n", `c.yaml:2: route "search" has both a path and an rpc`},
		{"two routes of one name", head + "  - name: search\n    path: /v2\n", `c.yaml:4: two routes are named "search"`},
		{"no limits", head, `c.yaml:1: the contract has no limits`},
		{"empty", "", `c.yaml: the contract is empty`},
		{"identity of neither address nor header", head + "identities:\n  - name: a\nlimits: []\n", `c.yaml:5: identity "a" says neither an address nor a header`},
		{"address role unknown", head + "identities:\n  - name: a\n    address: second\nlimits: []\n", `c.yaml:6: identity "a": address "second": want limit or isolation`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseContract("c.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to contain %q\n%s", err, tc.want, tc.yaml)
			}
		})
	}
}

// TestContractFileMissing: a contract that cannot be read names its file.
func TestContractFileMissing(t *testing.T) {
	t.Parallel()
	_, err := LoadContract("testdata/no-such-contract.yaml")
	if err == nil || !strings.Contains(err.Error(), "no-such-contract.yaml") {
		t.Errorf("error %v, want the file named", err)
	}
	if _, statErr := os.Stat("testdata/no-such-contract.yaml"); statErr == nil {
		t.Fatal("the test's missing file exists")
	}
}

// TestContractNames: a part without a name, or with another's, is named
// in its own words.
func TestContractNames(t *testing.T) {
	t.Parallel()
	const limit = "limits:\n  - name: l\n    routes: [search]\n    quota: 10\n    window: 1s\n    key: global\n    refused: {status: 429}\n"
	for _, tc := range []struct{ yaml, want string }{
		{"routes:\n  - path: /v1\n" + limit, `c.yaml:2: a route has no name`},
		{"routes:\n  - name: search\n    path: /v1\nidentities:\n  - address: limit\n" + limit, `c.yaml:5: an identity has no name`},
		{"routes:\n  - name: search\n    path: /v1\nidentities:\n  - name: a\n    address: limit\n  - name: a\n    address: isolation\n" + limit, `c.yaml:7: two identities are named "a"`},
		{"routes:\n  - name: search\n    path: /v1\n" + limit + "  - name: l\n    routes: [search]\n    quota: 1\n    window: 1h\n    key: global\n    refused: {status: 429}\n", `c.yaml:11: two limits are named "l"`},
	} {
		if _, err := ParseContract("c.yaml", []byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q\n%s", err, tc.want, tc.yaml)
		}
	}
}

// TestContractUnquotedReference: a ${…} reference left unquoted in a flow
// mapping, which YAML reads as a nested mapping, is refused saying to
// quote it.
func TestContractUnquotedReference(t *testing.T) {
	t.Parallel()
	_, err := ParseContract("c.yaml", []byte("routes:\n  - name: search\n    path: /v1\nidentities:\n  - name: a\n    headers: {X-Api-Key: ${K1}}\n"))
	if err == nil || !strings.Contains(err.Error(), `quote it, as in {X-Api-Key: "${API_KEY}"}`) || !strings.HasPrefix(err.Error(), "c.yaml:") {
		t.Errorf("error %v, want the file, the line and the quoting", err)
	}
}

// TestIdentityCredentials: an identity's references are read when asked,
// ${NAME} from the environment given and ${file:PATH} from the file's
// first line; an unset variable, an empty file or a missing one is an
// error naming the identity, the header and the reference.
func TestIdentityCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, empty := filepath.Join(dir, "key"), filepath.Join(dir, "empty")
	if err := os.WriteFile(key, []byte("  from-file \nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"FREE_KEY": "from-env", "BLANK": ""}[name]
		return v, ok
	}
	tests := []struct {
		headers map[string]string
		want    string // the X-Api-Key read, or the error's text
		fails   bool
	}{
		{map[string]string{"x-api-key": "${FREE_KEY}"}, "from-env", false},
		{map[string]string{"X-Api-Key": "${file:" + key + "}"}, "from-file", false},
		{map[string]string{"X-Api-Key": "${UNSET_KEY}"}, `identity "id": header X-Api-Key reads ${UNSET_KEY}, which is empty or not set`, true},
		{map[string]string{"X-Api-Key": "${BLANK}"}, "${BLANK}, which is empty or not set", true},
		{map[string]string{"X-Api-Key": "${file:" + empty + "}"}, "which is empty or not set", true},
		{map[string]string{"X-Api-Key": "${file:" + filepath.Join(dir, "missing") + "}"}, "missing", true},
	}
	for _, tt := range tests {
		h, err := Identity{Name: "id", Headers: tt.headers}.Credentials(env)
		switch {
		case tt.fails && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: error %v, want one saying %q", tt.headers, err, tt.want)
		case !tt.fails && (err != nil || h.Get("X-Api-Key") != tt.want):
			t.Errorf("%v: %v, %v, want X-Api-Key %q", tt.headers, h, err, tt.want)
		}
	}
}
