package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/decode"
	"github.com/connectbyjbrh/ratecheck/method"
)

// sse wraps a JSON-RPC response as an event stream, after a notification
// (which a reader must skip), as the official SDKs' servers send it.
func sse(body string) string {
	return "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\nevent: message\nid: 1\ndata: " + body + "\n\n"
}

func TestCheckRow(t *testing.T) {
	t.Parallel()
	row := func(stream string) method.ContractRow {
		r, ok := rowOf(stream)
		if !ok {
			t.Fatalf("no row %s", stream)
		}
		return r
	}
	const textPlain = "text/plain; charset=utf-8"
	tests := []struct {
		stream      string
		code        uint16
		contentType string
		body        string
		allow       string
		want        string
	}{
		{"mcp-unknown-tool", 200, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool"}}`, "", ""},
		{"mcp-unknown-tool", 200, "text/event-stream", sse(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool"}}`), "", ""},
		{"mcp-empty-query", 200, "text/event-stream", sse(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`), "", ""},
		{"mcp-session-id-ignored", 200, "text/event-stream", sse(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`), "", ""},
		// A spec-conformant server that answers differently from this
		// API's documentation: a failure, said to be one of the API's.
		{"mcp-unknown-tool", 400, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}`, "", "differs from the documented API: status 400, want 200"},
		{"mcp-unknown-method", 200, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601}}`, "", "differs from the documented API: status 200, want 404"},
		{"mcp-body-too-large", 400, "application/json", `{"jsonrpc":"2.0","error":{"code":-32600}}`, "", "differs from the documented API: status 400, want 413"},
		{"rest-post", 200, "application/json", `{}`, "", "differs from the documented API: status 200, want 405"},
		{"rest-post", 405, textPlain, "method not allowed", "", `differs from the documented API: Allow "", want GET`},
		{"rest-not-found", 404, "text/html", "<html>not found</html>", "", `differs from the documented API: the body is not JSON (text/html: "<html>not found</html>"), want error.code "not_found"`},
		{"mcp-session-id-ignored", 404, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"session not found"}}`, "", "differs from the documented API: status 404, want 200"},
		// What the specification fixes.
		{"mcp-unknown-method", 404, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603}}`, "", "against the MCP specification: JSON-RPC error -32603, want -32601"},
		{"mcp-bad-json", 400, textPlain, "bad request: invalid character '}' looking for beginning of value", "",
			`against the MCP specification: the body is not JSON-RPC (text/plain; charset=utf-8: "bad request: invalid character '}' looki"…)`},
		{"mcp-bad-json", 400, "", "", "", "against the MCP specification: the body is not JSON-RPC (no Content-Type, empty)"},
		{"mcp-header-mismatch", 400, "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n", "",
			`against the MCP specification: an event stream without a JSON-RPC response (text/event-stream: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"m"…)`},
		{"mcp-header-mismatch", 400, "application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`, "", "against the MCP specification: a JSON-RPC result, want error -32020"},
		{"mcp-get-stream", 405, textPlain, "", "GET", `against the MCP specification: Allow "GET", want POST`},
		// Both at once, and a 403 whose body the spec leaves open.
		{"mcp-foreign-origin", 403, textPlain, "Forbidden", "", `differs from the documented API: the body is not JSON-RPC (text/plain; charset=utf-8: "Forbidden")`},
		{"mcp-foreign-origin", 200, "application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`, "", "against the MCP specification: status 200, want 403"},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%d-%s", i, tt.stream), func(t *testing.T) {
			in := decode.NewInput()
			r := in.Add(archive.Labels{Surface: row(tt.stream).Surface, Stream: tt.stream}, 0, 1, tt.code,
				&decode.Answer{Body: []byte(tt.body), ContentType: tt.contentType, Allow: tt.allow})
			if got := checkRow(row(tt.stream), r, in.Tables()); got != tt.want {
				t.Errorf("checkRow:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestContractRowsBy: every row says who fixes it, and the rows the
// issue names as this API's own are the API's.
func TestContractRowsBy(t *testing.T) {
	t.Parallel()
	got := map[string]string{}
	for _, r := range method.ContractRows {
		if (r.StatusBy != method.BySpec && r.StatusBy != method.ByAPI) || (r.CodeBy != method.BySpec && r.CodeBy != method.ByAPI) {
			t.Errorf("%s: StatusBy %q, CodeBy %q", r.Stream, r.StatusBy, r.CodeBy)
		}
		got[r.Stream] = r.By()
	}
	want := map[string]string{
		"rest-not-found": "api", "rest-manifest-not-found": "api", "rest-q-too-short": "api", "rest-limit-above-25": "api", "rest-post": "api",
		"mcp-foreign-origin": "spec+api", "mcp-get-stream": "spec", "mcp-delete-session": "api", "mcp-body-too-large": "api",
		"mcp-bad-json": "spec", "mcp-header-mismatch": "spec", "mcp-unknown-method": "spec+api", "mcp-empty-query": "api",
		"mcp-unknown-page": "api", "mcp-unknown-tool": "spec+api", "mcp-session-id-ignored": "api", "mcp-last-event-id-ignored": "api",
		"mcp-session-headers-ignored": "api",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("By (-want +got):\n%s", d)
	}
}

// resultsFile writes in as a Vegeta results file, each MCP answer body
// in the form asSSE says (its Content-Type set to match), and returns its
// path.
func resultsFile(t *testing.T, in *decode.Input, asSSE bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := vegeta.NewEncoder(f)
	tab := in.Tables()
	for i := range in.Records {
		r := &in.Records[i]
		l := tab.Labels(r)
		res := vegeta.Result{Attack: archive.Labels{Surface: l.Surface, Source: l.Source, Stream: l.Stream}.String(), Code: r.Code, Timestamp: time.Unix(0, r.Start),
			Latency: r.Latency(), URL: "http://127.0.0.1:8080/mcp", Headers: http.Header{}}
		if l.Surface == method.REST {
			res.URL = "http://127.0.0.1:8080/api/public/search"
		}
		body := string(tab.Body(r))
		if allow, _, _ := tab.Header(r); allow != "" {
			res.Headers.Set("Allow", allow)
		}
		if body != "" {
			ct := "application/json"
			if asSSE && l.Surface == method.MCP && strings.HasPrefix(body, "{") {
				ct, body = "text/event-stream", sse(body)
			}
			res.Headers.Set("Content-Type", ct)
			res.Body = []byte(body)
		}
		if err := enc.Encode(&res); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestSSEAnswersJudgedAsJSON: a results file whose MCP answers (refusals
// and failure-table rows) are event streams gets the verdict of the same
// answers as JSON, check for check; and a target whose answers are wrong
// fails the same way in both forms.
func TestSSEAnswersJudgedAsJSON(t *testing.T) {
	t.Parallel()
	wrong := simulate(documented(1, 0), quiet)
	for i := range wrong.Records {
		r := &wrong.Records[i]
		switch wrong.Tables().Labels(r).Stream {
		case "mcp-unknown-tool":
			wrong.Tables().SetAnswer(r, &decode.Answer{Body: []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`)})
		}
		if r.Code == 429 && wrong.Tables().Labels(r).Surface == method.MCP {
			wrong.Tables().SetAnswer(r, &decode.Answer{Body: []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"slow down"}}`)})
		}
	}
	for _, tc := range []struct {
		name string
		in   *decode.Input
		want []string // failed checks
	}{
		{"documented", simulate(documented(1, 0), quiet), nil},
		{"wrong", wrong, []string{"mcp/shape", "mcp/contract"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var verdicts [2]*Report
			for i, asSSE := range []bool{false, true} {
				in, err := Read([]string{resultsFile(t, tc.in, asSSE)})
				if err != nil {
					t.Fatal(err)
				}
				verdicts[i] = judge(in)
			}
			if got := failed(verdicts[0]); !cmp.Equal(got, tc.want) {
				t.Errorf("JSON answers: failed %v, want %v", got, tc.want)
			}
			// The same, but that a quoted answer names its own type.
			sseSurfaces, _ := json.Marshal(verdicts[1].Verdict.Surfaces)
			jsonSurfaces, _ := json.Marshal(verdicts[0].Verdict.Surfaces)
			sseSurfaces = bytes.ReplaceAll(sseSurfaces, []byte("text/event-stream"), []byte("application/json"))
			if d := cmp.Diff(string(jsonSurfaces), string(sseSurfaces)); d != "" {
				t.Errorf("SSE answers judged otherwise than JSON ones (-json +sse):\n%s", d)
			}
		})
	}
}
