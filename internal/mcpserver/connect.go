package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect serves one session over an arbitrary transport, typically one end
// of mcp.NewInMemoryTransports for an in-process client (`loci chat
// --vault`). The session ends when the other end closes or Close is called.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.mcp.Connect(ctx, t, nil)
}
