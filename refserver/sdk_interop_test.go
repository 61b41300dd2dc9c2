package refserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seen records what reached the reference target: the HTTP method, the
// JSON-RPC method and the status of every request.
type seen struct {
	mu   sync.Mutex
	reqs []string
}

func (s *seen) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var m struct{ Method string }
		_ = json.Unmarshal(b, &m)
		rec := &statusWriter{ResponseWriter: w, status: 200}
		next.ServeHTTP(rec, r)
		s.mu.Lock()
		s.reqs = append(s.reqs, strings.TrimSpace(r.Method+" "+m.Method)+" "+http.StatusText(rec.status))
		s.mu.Unlock()
	})
}

func (s *seen) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }

// TestSDKClientAgainstServe drives the reference target with the official
// Go SDK's client (v1.8.0), every method of the surface. The client
// connects with server/discover (mcp/client.go Connect, protocol
// 2026-07-28 first), reads serverInfo from result._meta (mcp/client.go
// discover: decodeMetaValue(res.GetMeta(), MetaKeyServerInfo)), and sends
// the three _meta fields on every request (injectRequestMeta), which the
// target requires.
func TestSDKClientAgainstServe(t *testing.T) {
	srv, err := refserver.New(refserver.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var rec seen
	ts := httptest.NewServer(rec.wrap(srv))
	defer ts.Close()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("Connect: %v (requests: %v)", err, rec.list())
	}
	defer cs.Close()
	init := cs.InitializeResult()
	if init.ProtocolVersion != "2026-07-28" || init.ServerInfo == nil || init.ServerInfo.Name != refserver.ServerName || init.ServerInfo.Version != refserver.ServerVersion {
		t.Errorf("negotiated %q with server %+v; want 2026-07-28 with %s %s", init.ProtocolVersion, init.ServerInfo, refserver.ServerName, refserver.ServerVersion)
	}
	if init.Capabilities == nil || init.Capabilities.Tools == nil || init.Capabilities.Resources == nil || init.Capabilities.Prompts == nil {
		t.Errorf("capabilities %+v", init.Capabilities)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || !tool.Annotations.IdempotentHint {
			t.Errorf("tool %s annotations %+v", tool.Name, tool.Annotations)
		}
	}
	if diff := cmp.Diff([]string{"search", "get_page"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if tools.CacheScope != "public" || tools.TTLMs < 0 {
		t.Errorf("tools/list cache fields: ttlMs %d cacheScope %q", tools.TTLMs, tools.CacheScope)
	}

	for _, tc := range []struct {
		name    string
		args    map[string]any
		isError bool
		want    string // in the text content
	}{
		{"search", map[string]any{"query": "rate limits", "limit": 3}, false, "api-rate-limits"},
		{"get_page", map[string]any{"ref": "errors-and-retries"}, false, "# "},
		{"get_page", map[string]any{"ref": "no-such-page"}, true, "no page"},
		{"search", map[string]any{"query": ""}, true, "empty"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.name, Arguments: tc.args})
		if err != nil {
			t.Errorf("CallTool %s %v: %v", tc.name, tc.args, err)
			continue
		}
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if res.IsError != tc.isError || !strings.Contains(text, tc.want) {
			t.Errorf("CallTool %s %v: isError %v, text %.80q; want isError %v and %q", tc.name, tc.args, res.IsError, text, tc.isError, tc.want)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-tool"}); err == nil || !strings.Contains(err.Error(), "-32602") && !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("CallTool of an unknown tool: %v, want the JSON-RPC error", err)
	}

	resources, err := cs.ListResources(ctx, nil)
	if err != nil || len(resources.Resources) == 0 {
		t.Fatalf("ListResources: %v, %+v", err, resources)
	}
	uri := "docs://pages/errors-and-retries"
	if !slices.ContainsFunc(resources.Resources, func(r *mcp.Resource) bool { return r.URI == uri }) {
		t.Errorf("resources lack %s", uri)
	}
	page, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(page.Contents) != 1 || page.Contents[0].MIMEType != "text/markdown" || page.Contents[0].Text == "" || page.CacheScope == "" {
		t.Errorf("ReadResource: %v, %+v", err, page)
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "explain-error" {
		t.Fatalf("ListPrompts: %v, %+v", err, prompts)
	}
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "explain-error", Arguments: map[string]string{"status": "429"}})
	if err != nil || len(prompt.Messages) != 1 || !strings.Contains(prompt.Messages[0].Content.(*mcp.TextContent).Text, "429") {
		t.Errorf("GetPrompt: %v, %+v", err, prompt)
	}

	// Every request the SDK sent was a POST the target answered with
	// success, server/discover first; the two refusals are the ones asked
	// for above (the unknown tool is answered 200 with -32602 by this API).
	got := rec.list()
	t.Logf("requests: %v", got)
	if len(got) == 0 || got[0] != "POST server/discover OK" {
		t.Errorf("first request %v, want server/discover", got)
	}
	for _, r := range got {
		if !strings.HasPrefix(r, "POST ") || !strings.HasSuffix(r, " OK") {
			t.Errorf("request %q", r)
		}
	}
}
