// Package sdkserver serves go-sdk MCP servers behind the reference limiter,
// for interop tests.
//
// The servers are built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), so that what they accept and
// answer is the SDK's behaviour, not ratecheck's idea of it. They offer the
// reference target's MCP surface (tools search and get_page, resources
// docs://pages/{ref}, prompt explain-error) over a small corpus, in three
// modes: stateless with JSON answers, stateless with event-stream answers
// (the SDK's default), and stateful, restricted to revision 2025-11-25
// (initialize and Mcp-Session-Id). Each can sit behind a per-address
// limiter of package refserver, which refuses with 429 and JSON-RPC -32603 as
// the contract documents.
//
// The package is for tests: the ratecheck command does not import it.
package sdkserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/connectbyjbrh/ratecheck/mcpwire"
	"github.com/connectbyjbrh/ratecheck/refserver"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mode is how the go-sdk server is served.
type Mode string

// The modes.
const (
	// StatelessJSON is a stateless server (every revision the SDK speaks,
	// 2026-07-28 first) answering application/json.
	StatelessJSON Mode = "stateless-json"
	// StatelessSSE is a stateless server answering text/event-stream, the
	// SDK's default.
	StatelessSSE Mode = "stateless-sse"
	// Stateful20251125 is a stateful server that speaks only 2025-11-25:
	// initialize, notifications/initialized, Mcp-Session-Id, event-stream
	// answers. It refuses server/discover with -32022.
	Stateful20251125 Mode = "stateful-2025-11-25"
)

// Modes lists every mode.
var Modes = []Mode{StatelessJSON, StatelessSSE, Stateful20251125}

// Config configures a server. Only Mode is required.
type Config struct {
	Mode Mode
	// Limiter, when set, counts every request to /mcp against the client
	// address ([refserver.ClientAddr]) and refuses those it does not admit.
	Limiter *refserver.Limiter
	// Clock is the limiter's monotonic clock (nil: time since Handler).
	Clock func() time.Duration
	// SessionTimeout closes idle sessions of the stateful mode (0: never).
	SessionTimeout time.Duration
}

// Server name and version, as the go-sdk server reports them in
// serverInfo.
const (
	ServerName    = "ratecheck-sdktarget"
	ServerVersion = "1"
)

// Handler returns an [http.Handler] serving the MCP server at /mcp (every
// other path is a 404). It is safe for concurrent use.
func Handler(cfg Config) (http.Handler, error) {
	var opts *mcp.ServerOptions
	var hopts mcp.StreamableHTTPOptions
	switch cfg.Mode {
	case StatelessJSON:
		hopts = mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}
	case StatelessSSE:
		hopts = mcp.StreamableHTTPOptions{Stateless: true}
	case Stateful20251125:
		opts = &mcp.ServerOptions{SupportedProtocolVersions: []string{mcpwire.Revision20251125}}
		hopts = mcp.StreamableHTTPOptions{SessionTimeout: cfg.SessionTimeout}
	default:
		return nil, fmt.Errorf("unknown mode %q (want one of %v)", cfg.Mode, Modes)
	}
	srv := NewServer(opts)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &hopts)
	if cfg.Limiter != nil {
		clock := cfg.Clock
		if clock == nil {
			start := time.Now()
			clock = func() time.Duration { return time.Since(start) }
		}
		h = Limit(h, cfg.Limiter, clock)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	return mux, nil
}

// Limit puts next behind lim: every request counts against its client
// address, and one lim does not admit is answered 429 with a JSON-RPC
// -32603 error echoing the request's id, as the reference target answers.
func Limit(next http.Handler, lim *refserver.Limiter, clock func() time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lim.Allow(refserver.ClientAddr(r), clock()) {
			next.ServeHTTP(w, r)
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if b, err := io.ReadAll(io.LimitReader(r.Body, refserver.MaxMCPBody)); err == nil {
			_ = json.Unmarshal(b, &req)
		}
		answer := map[string]any{"jsonrpc": "2.0", "error": map[string]any{
			"code": -32603, "message": fmt.Sprintf("rate limited: more than %d calls in the last %v", lim.Limit(), lim.Window())}}
		if len(req.ID) > 0 && string(req.ID) != "null" {
			answer["id"] = req.ID
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(answer)
	})
}

// page is one document of the corpus.
type page struct{ Title, Markdown string }

var pages = map[string]page{
	"errors-and-retries": {"Designing a resilient client", "# Designing a resilient client\n\n" +
		"Only two failures are worth retrying: a 429 and a genuine transport fault. Everything else is an answer.\n"},
	"api-rate-limits": {"API rate limits", "# API rate limits\n\n" +
		"240 requests per rolling minute on the REST API and 120 calls on the MCP endpoint, per client address.\n"},
	"getting-started": {"Getting started", "# Getting started\n\nSearch the documentation for rate limits, then read a page.\n"},
}

// SearchInput is the search tool's arguments.
type SearchInput struct {
	Query string `json:"query" jsonschema:"words to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many results, 1 to 25 (default 10)"`
}

// SearchHit is one search result.
type SearchHit struct {
	Ref   string `json:"ref"`
	Title string `json:"title"`
}

// SearchOutput is the search tool's structured result.
type SearchOutput struct {
	Results []SearchHit `json:"results"`
}

// PageInput is the get_page tool's arguments.
type PageInput struct {
	Ref string `json:"ref" jsonschema:"the page reference, such as errors-and-retries"`
}

// NewServer returns a go-sdk server (options as given, nil for the
// defaults) offering the reference target's MCP surface:
//   - tool search {query, limit?}: an empty query is a tool error
//     (isError), a limit outside 1..25 a JSON-RPC -32602;
//   - tool get_page {ref}: an unknown page is a tool error;
//   - resources docs://pages/{ref} (text/markdown);
//   - prompt explain-error {status}.
func NewServer(opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: ServerVersion}, opts)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	refs := make([]string, 0, len(pages))
	for ref := range pages {
		refs = append(refs, ref)
	}
	sort.Strings(refs)

	mcp.AddTool(s, &mcp.Tool{Name: "search", Title: "Search the documentation", Annotations: readOnly,
		Description: "Search the documentation pages for words."},
		func(_ context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
			if in.Limit == 0 {
				in.Limit = 10
			}
			if in.Limit < 1 || in.Limit > 25 {
				return nil, SearchOutput{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "search: limit must be from 1 to 25"}
			}
			if strings.TrimSpace(in.Query) == "" {
				return nil, SearchOutput{}, fmt.Errorf("search: the query is empty; say what to look for")
			}
			out := SearchOutput{Results: []SearchHit{}}
			for _, ref := range refs {
				p := pages[ref]
				if len(out.Results) < in.Limit && matches(p.Markdown, in.Query) {
					out.Results = append(out.Results, SearchHit{Ref: ref, Title: p.Title})
				}
			}
			return nil, out, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get_page", Title: "Read a documentation page", Annotations: readOnly,
		Description: "Return one documentation page as Markdown."},
		func(_ context.Context, _ *mcp.CallToolRequest, in PageInput) (*mcp.CallToolResult, any, error) {
			p, ok := pages[in.Ref]
			if !ok {
				return nil, nil, fmt.Errorf("get_page: no page with ref %q", in.Ref)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: p.Markdown}}}, nil, nil
		})
	for _, ref := range refs {
		p, uri := pages[ref], "docs://pages/"+ref
		s.AddResource(&mcp.Resource{URI: uri, Name: ref, Title: p.Title, MIMEType: "text/markdown"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: p.Markdown}}}, nil
			})
	}
	s.AddPrompt(&mcp.Prompt{Name: "explain-error", Description: "Explain an error answer and whether to retry it.",
		Arguments: []*mcp.PromptArgument{{Name: "status", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			status := req.Params.Arguments["status"]
			if status == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompt explain-error needs an argument status"}
			}
			text := fmt.Sprintf("An API answered HTTP %s. Using the page errors-and-retries, say whether a client should retry it and how.", status)
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
		})
	return s
}

// matches reports whether every word of query occurs in text, ignoring
// case.
func matches(text, query string) bool {
	text = strings.ToLower(text)
	for _, w := range strings.Fields(strings.ToLower(query)) {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}
