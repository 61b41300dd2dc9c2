package method

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
