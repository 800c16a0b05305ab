package ops

import (
	"slices"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/auth"
)

// ToolsetAI is the toolset of the AI operations: advertised over MCP only
// when AI is configured (docs/ai.md).
const ToolsetAI = "ai"

// AINoChat are the AI operations that work without a chat model: they are
// advertised, and ai_status lists them as usable, as soon as AI is on.
var AINoChat = []string{"ai_status", "ai_toc", "ai_relate"}

// aiAdvertised reports whether an AI operation is offered under env: when
// some served vault's AI runtime can run it.
func (e *Env) aiAdvertised(op *Op) bool {
	return e.AnyAI(func(rt *ai.Runtime) bool {
		return rt.Enabled() && (rt.HasChat() || slices.Contains(AINoChat, op.Name))
	})
}

// ToolsetWrites is the toolset of the write operations and their history.
const ToolsetWrites = "writes"

// Advertised reports whether surfaces that list operations to agents (MCP)
// should offer op under env: the writes toolset only when some served vault
// allows writes (each call is still checked against its own vault).
func (e *Env) Advertised(op *Op) bool {
	if op.Toolset == ToolsetAI {
		return e.aiAdvertised(op)
	}
	return (op.Toolset != ToolsetWrites && !op.IsWrite()) || e.AnyWritesAllowed()
}

// Served reports whether the server offers op's toolset: every toolset
// when Env.Toolsets is empty.
func (e *Env) Served(op *Op) bool {
	return e == nil || len(e.Toolsets) == 0 || slices.Contains(e.Toolsets, op.Group())
}

// Offered reports whether surfaces that list operations to agents (MCP's
// tools/list, the facade's find_capability) show op to p: advertised under
// env and permitted to p. GET /v1/ops, OpenAPI and the web UI show what
// Permits allows.
func (e *Env) Offered(op *Op, p *auth.Principal) bool {
	return e.Advertised(op) && e.Permits(p, op) == nil
}

// ParseToolsets reads toolset names ("read,write" or several values),
// drops duplicates and keeps Groups' order. An unknown name is
// validation_failed naming the known ones.
func ParseToolsets(items []string) ([]string, error) {
	return auth.ParseNames(items, Groups, "toolset", false)
}
