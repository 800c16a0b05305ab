package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// structuredErrors decides whether a failed call also carries its error as
// structuredContent ({"error": {...}}). It is off: TypeScript-SDK clients
// (Claude Code, MCP Inspector, Cursor, ...) validate structuredContent
// against the tool's outputSchema even when isError is true
// (modelcontextprotocol/typescript-sdk#1943), so an error envelope there turns
// every tool error into an opaque -32602 "does not match the output schema".
// The structured error travels in _meta["loci/error"] instead, and the text
// content starts with "code: message".
const structuredErrors = false

// errorMetaKey is the _meta key holding {code, message, details} of a failed call.
const errorMetaKey = "loci/error"

// addTools registers one tool per registry operation. Schemas come from the
// registry (derived once at startup), so the SDK's low-level AddTool is used:
// arguments go to Registry.Call as raw JSON, which validates and decodes them.
func (s *Server) addTools() {
	s.wireTools = map[string]*mcp.Tool{}
	// The SDK serializes each input schema when its tool is added (to check
	// it); do that first, in parallel, into caches that are then reused
	// there and by every tools/list.
	// Write operations are not advertised while writes are off (they would
	// only answer writes_disabled); see docs/writes.md.
	// Operations outside the server's toolsets (server.toolsets) are not
	// tools at all; tools/list then shows each principal the ones it may
	// call (toolsListMiddleware).
	var list []*ops.Op
	for _, op := range s.reg.List() {
		if s.env.Offered(op, nil) {
			list = append(list, op)
		}
	}
	ins := make([]*cachedSchema, len(list))
	var wg sync.WaitGroup
	for i, op := range list {
		ins[i] = &cachedSchema{s: op.InputSchema}
		wg.Go(func() { ins[i].MarshalJSON() })
	}
	wg.Wait()
	var outs []*cachedSchema
	for i, op := range list {
		destructive := op.Annotations.Destructive
		openWorld := op.Annotations.OpenWorld
		tool := &mcp.Tool{
			Name:        op.Name,
			Title:       op.Title,
			Description: op.Description,
			InputSchema: ins[i],
			// The output schema stays typed here, which the SDK accepts
			// without serializing it; tools/list sends the cached copy
			// below.
			OutputSchema: op.OutputSchema,
			Annotations: &mcp.ToolAnnotations{
				Title:           op.Title,
				ReadOnlyHint:    op.Annotations.ReadOnly,
				DestructiveHint: &destructive,
				IdempotentHint:  op.Annotations.Idempotent,
				OpenWorldHint:   &openWorld,
			},
		}
		s.mcp.AddTool(tool, s.toolHandler(op.Name))
		wire := *tool
		out := &cachedSchema{s: op.OutputSchema}
		wire.OutputSchema = out
		s.wireTools[op.Name] = &wire
		outs = append(outs, out)
	}
	s.mcp.AddReceivingMiddleware(s.toolsListMiddleware)
	// Serialize the output schemas off the startup path, so that neither
	// the first tools/list nor any later one pays for it.
	for _, c := range outs {
		go c.MarshalJSON()
	}
}

// toolsListMiddleware shows each principal only the tools it may call (its
// scopes and toolsets: ops.Env.Permits; the SDK keeps one tool list per
// server, so each tools/list page it paginates is filtered here), and swaps
// the tools of the page for their copies with pre-serialized schemas. A
// hidden tool called anyway is refused by the pipeline (forbidden).
func (s *Server) toolsListMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil && method == "tools/list" {
			p := principalOf(req.GetExtra())
			kept := lr.Tools[:0]
			for _, t := range lr.Tools {
				if op, isOp := s.reg.Get(t.Name); isOp && s.env.Permits(p, op) != nil {
					continue
				}
				if w := s.wireTools[t.Name]; w != nil {
					t = w
				}
				kept = append(kept, t)
			}
			lr.Tools = kept
		}
		return res, err
	}
}

// cachedSchema serializes a registry schema once. jsonschema.Schema's own
// encoder is slow (all 16 tools' schemas take ~4 ms), which would otherwise
// be paid at startup and on every tools/list.
type cachedSchema struct {
	s    *jsonschema.Schema
	once sync.Once
	b    []byte
	err  error
}

func (c *cachedSchema) MarshalJSON() ([]byte, error) {
	c.once.Do(func() { c.b, c.err = json.Marshal(c.s) })
	return c.b, c.err
}

func (s *Server) toolHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.runOp(ctx, req, name, req.Params.Arguments), nil
	}
}

// runOp runs one operation for a tools/call (its own tool, or the facade's
// call_capability) through the registry's pipeline, as the request's
// principal.
func (s *Server) runOp(ctx context.Context, req *mcp.CallToolRequest, name string, args json.RawMessage) *mcp.CallToolResult {
	caller := ops.Caller{Surface: "mcp", Session: sessionID(req.Session)}
	caller.Principal = principalOf(req.Extra)
	callCtx := ctx
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil && strings.HasPrefix(name, "ai_") {
		callCtx = ops.WithStream(ctx, aiProgress(ctx, req.Session, tok))
	}
	res := s.reg.Call(callCtx, s.env, caller, name, args)
	s.logCall(ctx, req.Session, name, res)
	if res.Err != nil {
		return errorResult(res.Err)
	}
	op, _ := s.reg.Get(name)
	b, err := op.NormalizeOutput(res.Output) // arrays are never null, as the output schema says
	if err != nil {
		return errorResult(errs.Wrap(err, errs.CodeInternal, "cannot encode the result"))
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}
}

// errorResult renders a typed error as a tool result the model can read and
// act on: isError, "code: message" (plus the details as JSON), and the
// structured error in _meta.
func errorResult(e *errs.Error) *mcp.CallToolResult {
	text := e.Code + ": " + e.Error()
	if len(e.Details) > 0 {
		if d, err := json.Marshal(e.Details); err == nil {
			text += "\ndetails: " + string(d)
		}
	}
	payload := map[string]any{"code": e.Code, "message": e.Message}
	if len(e.Details) > 0 {
		payload["details"] = e.Details
	}
	r := &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: text}},
		Meta:    mcp.Meta{errorMetaKey: payload},
	}
	if structuredErrors {
		r.StructuredContent = map[string]any{"error": payload}
	}
	return r
}

// logCall sends a debug record of the call to the session's client log (only
// when the client asked for debug level; the SDK filters by level).
func (s *Server) logCall(ctx context.Context, ss *mcp.ServerSession, name string, res ops.Result) {
	if ss == nil {
		return
	}
	data := map[string]any{"tool": name, "ms": float64(res.Duration.Microseconds()) / 1000}
	level := mcp.LoggingLevel("debug")
	if res.Err != nil {
		data["code"] = res.Err.Code
		if res.Err.Code == errs.CodeInternal {
			level = "error"
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ss.Log(lctx, &mcp.LoggingMessageParams{Level: level, Logger: "loci", Data: data})
}

// aiProgress turns the streaming events of an AI operation (ai.partial,
// ai.citation, ai.usage) into notifications/progress for a call that sent a
// progress token: the message is the event type and _meta["loci/ai_event"]
// carries its data. The tool result stays the full structured output.
func aiProgress(ctx context.Context, ss *mcp.ServerSession, tok any) func(string, any) {
	var mu sync.Mutex
	n := 0.0
	return func(event string, data any) {
		mu.Lock()
		defer mu.Unlock()
		n++
		ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: n, Message: event,
			Meta: mcp.Meta{"loci/ai_event": map[string]any{"type": event, "data": data}}})
	}
}

// principalOf is the principal the HTTP authentication put in the
// request's token info (server: RequireBearerToken over our own
// authentication); nil, the owner, over stdio and with --no-auth.
func principalOf(extra *mcp.RequestExtra) *auth.Principal {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	p, _ := extra.TokenInfo.Extra[TokenInfoPrincipal].(*auth.Principal)
	return p
}

// TokenInfoPrincipal is the key of the principal in the MCP SDK's token
// info (auth.TokenInfo.Extra), which the SDK carries from the HTTP request
// to every call of the session's requests.
const TokenInfoPrincipal = "loci.principal"
