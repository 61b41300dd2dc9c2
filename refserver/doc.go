// Package refserver provides the reference implementation of the documented
// contract (docs/contract.md, at the root of the repository): a REST surface
// under /api/public/ and an MCP endpoint at /mcp, each rate limited per
// client address. It is the embedded default target of ratecheck and the
// fixture of its end-to-end tests; its deliberately wrong limiter modes
// prove that the verifier can fail.
package refserver
