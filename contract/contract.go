// Package contract holds the facts of the documented contract that every
// part of ratecheck agrees on: the names of the two surfaces, their limits
// and the window they are counted over. docs/contract.md says the rest.
package contract

import "time"

// Surfaces of the contract: the public REST API under /api/public/ and the
// MCP endpoint at /mcp.
const (
	REST = "rest"
	MCP  = "mcp"
)

// The documented limits: requests per Window and client address.
const (
	RESTLimit = 240
	MCPLimit  = 120
)

// Window is the documented rolling window the limits are counted over.
const Window = time.Minute

// Limit returns the documented limit of a surface (0 for one the contract
// does not name).
func Limit(surface string) int {
	switch surface {
	case REST:
		return RESTLimit
	case MCP:
		return MCPLimit
	}
	return 0
}
