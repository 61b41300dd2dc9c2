// Package client is the resilient client the contract asks for
// (errors-and-retries): it sorts every response into success, tool error,
// answer or retryable; retries only the retryable ones, with exponential
// backoff and full jitter by default; caps total attempts; and slows the
// whole client down after repeated 429s. It speaks the public REST API and
// the MCP endpoint with headers that always match the body (package
// mcpwire), reads MCP answers in both forms (application/json and
// text/event-stream), negotiates the MCP revision with servers of older
// ones, never sends Origin, sends Mcp-Session-Id only in a session such a
// server assigned, and logs route or method, status, error code and
// request id, never a body or a credential.
//
// Randomness, sleeping and the clock are fields, so tests are deterministic
// and instant. The package stands alone: other Go programs can use it.
package client
