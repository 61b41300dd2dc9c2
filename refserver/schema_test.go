package refserver

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestAnswersMatchTheSpecSchema validates what /mcp answers against the
// JSON Schema of revision 2026-07-28 (testdata/README.md): every result
// (resultType, the cache fields of the cacheable ones, _meta serverInfo)
// and every error the spec names (-32022 with its data, -32020, -32602,
// -32601, -32700, -32600, and the -32603 of a 429).
func TestAnswersMatchTheSpecSchema(t *testing.T) {
	f, err := os.Open("testdata/mcp-schema-2026-07-28.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mcp.json", doc); err != nil {
		t.Fatal(err)
	}
	ts, _, _ := newTestTarget(t, func(c *Config) { c.MCPLimit = 40 })
	base := ts.URL
	search := map[string]any{"name": "search", "arguments": map[string]any{"query": "rate limits"}}
	tests := []struct {
		name   string
		req    *http.Request
		status int
		def    string // the schema's definition of the answer, or of its error member
	}{
		{"server/discover", mcpRequest(t, base, 1, "server/discover", nil), 200, "DiscoverResultResponse"},
		{"tools/list", mcpRequest(t, base, 2, "tools/list", nil), 200, "ListToolsResultResponse"},
		{"tools/call search", mcpRequest(t, base, 3, "tools/call", search), 200, "CallToolResultResponse"},
		{"tools/call isError", mcpRequest(t, base, 4, "tools/call", map[string]any{"name": "get_page", "arguments": map[string]any{"ref": "nope"}}), 200, "CallToolResultResponse"},
		{"resources/list", mcpRequest(t, base, 5, "resources/list", nil), 200, "ListResourcesResultResponse"},
		{"resources/read", mcpRequest(t, base, 6, "resources/read", map[string]any{"uri": "docs://pages/errors-and-retries"}), 200, "ReadResourceResultResponse"},
		{"prompts/list", mcpRequest(t, base, 7, "prompts/list", nil), 200, "ListPromptsResultResponse"},
		{"prompts/get", mcpRequest(t, base, 8, "prompts/get", map[string]any{"name": "explain-error", "arguments": map[string]any{"status": "429"}}), 200, "GetPromptResultResponse"},
		{"unknown tool", mcpRequest(t, base, 9, "tools/call", map[string]any{"name": "nope"}), 200, "InvalidParamsError"},
		{"no clientCapabilities", rawMCP(t, base, `{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`), 400, "InvalidParamsError"},
		{"unsupported version", withHeaderTo(mcpRequest(t, base, 11, "tools/list", nil), mcpwire.HeaderProtocolVersion, "2025-11-25"), 400, "UnsupportedProtocolVersionError"},
		{"initialize", rawMCP(t, base, `{"jsonrpc":"2.0","id":12,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, "MCP-Protocol-Version", ""), 400, "UnsupportedProtocolVersionError"},
		{"header mismatch", withHeaderTo(mcpRequest(t, base, 13, "tools/call", search), mcpwire.HeaderName, "get_page"), 400, "HeaderMismatchError"},
		{"unknown method", mcpRequest(t, base, 14, "no/such/method", nil), 404, "MethodNotFoundError"},
		{"bad JSON", rawMCP(t, base, `{"jsonrpc":`), 400, "ParseError"},
		{"a batch", rawMCP(t, base, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`), 400, "InvalidRequestError"},
	}
	// What is left of the budget, then a refusal.
	for i := len(tests); i < 40; i++ {
		do(t, http.DefaultClient, mcpRequest(t, base, 100+i, "tools/list", nil))
	}
	tests = append(tests, struct {
		name   string
		req    *http.Request
		status int
		def    string
	}{"429", mcpRequest(t, base, 99, "tools/list", nil), 429, "InternalError"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sch, err := c.Compile("mcp.json#/$defs/" + tt.def)
			if err != nil {
				t.Fatal(err)
			}
			a := do(t, http.DefaultClient, tt.req)
			if a.status != tt.status {
				t.Fatalf("status %d, want %d: %s", a.status, tt.status, a.body)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(a.body)))
			if err != nil {
				t.Fatal(err)
			}
			// The *Response definitions, and these two errors, describe a
			// whole answer.
			if strings.HasSuffix(tt.def, "Response") || tt.def == "UnsupportedProtocolVersionError" || tt.def == "HeaderMismatchError" {
				if err := sch.Validate(v); err != nil {
					t.Errorf("%s: %v\nbody: %.300s", tt.def, err, a.body)
				}
				return
			}
			// The other error definitions describe the error member of a
			// JSONRPCErrorResponse.
			resp, err := c.Compile("mcp.json#/$defs/JSONRPCErrorResponse")
			if err != nil {
				t.Fatal(err)
			}
			if err := resp.Validate(v); err != nil {
				t.Errorf("JSONRPCErrorResponse: %v\nbody: %.300s", err, a.body)
			}
			if err := sch.Validate(v.(map[string]any)["error"]); err != nil {
				t.Errorf("%s: %v\nbody: %.300s", tt.def, err, a.body)
			}
		})
	}
}
