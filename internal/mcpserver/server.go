// Package mcpserver is loci's MCP surface: every registry operation as a
// tool, every note as a resource (with subscriptions fed by the index's
// change bus), a few prompts, over stdio or Streamable HTTP. It is an
// adapter: the protocol is the official Go SDK's, the work is the registry's
// (ops.Registry.Call, the same pipeline as every other surface).
package mcpserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/internal/ops"
)

// Options configure a Server.
type Options struct {
	Name, Version string        // server info
	MaxSessions   int           // HTTP: concurrent sessions cap (default 16); beyond it a new session gets HTTP 503 with a JSON-RPC error
	IdleTimeout   time.Duration // HTTP: close sessions idle this long (default 30m)
	Logger        *slog.Logger
	// Facade lists three tools (find_capability, describe_capability,
	// call_capability) instead of one per operation, for clients with a
	// small tool limit; every operation the principal may call is reached
	// through call_capability, by the same pipeline (facade.go).
	Facade bool
}

// Defaults for Options.
const (
	DefaultMaxSessions = 16
	DefaultIdleTimeout = 30 * time.Minute
	// ResourcePageSize is how many items one resources/list (and tools/list,
	// prompts/list) page holds.
	ResourcePageSize = 200
)

// Server is one MCP server over a set of opened vaults.
type Server struct {
	reg *ops.Registry
	env *ops.Env
	opt Options
	log *slog.Logger
	mcp *mcp.Server

	res         *resources
	wireTools   map[string]*mcp.Tool // tools as sent by tools/list
	unsubscribe func()

	httpOnce sync.Once
	httpH    *httpHandler

	closeOnce sync.Once
	closed    chan struct{}
}

// New builds the server: one tool per registry operation, the note
// resources (listed from the index on demand), prompts. It subscribes to
// env's change bus; Close unsubscribes. It loads nothing per note, so it
// costs the same (~2 ms) for any vault size.
func New(reg *ops.Registry, env *ops.Env, opt Options) *Server {
	if opt.Name == "" {
		opt.Name = "loci"
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	if opt.MaxSessions <= 0 {
		opt.MaxSessions = DefaultMaxSessions
	}
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = DefaultIdleTimeout
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{reg: reg, env: env, opt: opt, log: opt.Logger, closed: make(chan struct{})}
	s.res = newResources(s)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: opt.Name, Title: "loci — memory for Markdown vaults", Version: opt.Version}, &mcp.ServerOptions{
		Instructions:       instructions(reg, env, opt.Facade),
		Logger:             opt.Logger,
		PageSize:           ResourcePageSize,
		SubscribeHandler:   s.res.subscribe,
		UnsubscribeHandler: s.res.unsubscribe,
		CompletionHandler:  s.complete,
		SetCacheable:       privateResources,
	})
	if opt.Facade {
		s.addFacade()
	} else {
		s.addTools()
	}
	s.res.register()
	s.addPrompts()
	s.mcp.AddReceivingMiddleware(s.guard) // added last: outermost
	s.unsubscribe = env.Subscribe(s.res.onChange)
	return s
}

// ServeStdio serves one session over stdin/stdout. It returns when the client
// closes stdin (nil) or ctx is done (nil: a requested shutdown is not an
// error). A malformed line is answered with a JSON-RPC error and the session
// goes on (see lineTransport).
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.serveLines(ctx, os.Stdin, os.Stdout)
}

// serveLines serves one session of newline-delimited JSON-RPC over r and w.
func (s *Server) serveLines(ctx context.Context, r io.Reader, w io.Writer) error {
	ss, err := s.mcp.Connect(ctx, &lineTransport{r: r, w: w, max: MaxMessageBytes, log: s.log}, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-done
		return nil
	case <-s.closed:
		ss.Close()
		<-done
		return nil
	case err := <-done:
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
			return nil
		}
		return err
	}
}

// HTTPHandler serves MCP's Streamable HTTP transport (mount it at /mcp).
// Authentication and Host/Origin checks belong to the caller's middleware.
func (s *Server) HTTPHandler() http.Handler {
	s.httpOnce.Do(func() { s.httpH = newHTTPHandler(s) })
	return s.httpH
}

// SessionCount is the number of MCP sessions open now (/metrics): the
// HTTP sessions the SDK holds, or the stdio session.
func (s *Server) SessionCount() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// Close stops listening to index changes and closes every open session.
// It does not close the Env (its owner does).
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		if s.unsubscribe != nil {
			s.unsubscribe()
		}
		for ss := range s.mcp.Sessions() {
			ss.Close()
		}
	})
	return nil
}

// resultLimit is the response-size governor's limit, shared with every
// operation (ops.Registry.Call).
func (s *Server) resultLimit() int {
	if s.env.MaxResultBytes > 0 {
		return s.env.MaxResultBytes
	}
	return ops.DefaultMaxResultBytes
}

// privateResources marks every resource result (reads and lists) as
// cacheable by this user's client only: they hold personal notes. The
// tool list too: it depends on the principal asking.
func privateResources(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch req.(type) {
	case *mcp.ReadResourceRequest, *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest, *mcp.ListToolsRequest:
		c.CacheScope = "private"
	}
}

func (s *Server) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// sessionID names a session for audit records: the Mcp-Session-Id over
// HTTP, "stdio" for the single stdio session.
func sessionID(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	if id := ss.ID(); id != "" {
		return id
	}
	return "stdio"
}

// instructions is the short guide sent to agents at initialization. It only
// names operations that exist in this registry.
func instructions(reg *ops.Registry, env *ops.Env, facade bool) string {
	has := func(name string) bool { op, ok := reg.Get(name); return ok && env.Served(op) }
	var b strings.Builder
	b.WriteString("loci gives you the user's Markdown notes (an Obsidian vault or Logseq graph) as searchable memory.\n")
	if facade {
		b.WriteString("- This server lists three tools: find_capability finds the operations you may call, describe_capability shows one's input schema and an example, call_capability runs it with {name, arguments}. Every operation named below is run through call_capability.\n")
	}
	switch {
	case has("get_context"):
		b.WriteString("- Start with get_context for a question or task: it returns the most relevant passages with their paths and lines. Use search_notes for keyword lookups and filters (tags, path glob, frontmatter, dates).\n")
	case has("search_notes"):
		b.WriteString("- Start with search_notes: one result per note, best first, with the matching section's heading path, line and a snippet. Use \"phrases\", prefix* and -exclusions; filter by tags, path glob, frontmatter or dates.\n")
	}
	if has("read_note") {
		b.WriteString("- Then read_note for the exact text; ask for one heading or a line range instead of whole long notes.\n")
	}
	if has("get_links") {
		b.WriteString("- get_links shows a note's links, backlinks and typed links; follow them to gather context.\n")
	}
	b.WriteString("- Paths are vault-relative with forward slashes (e.g. Projects/Alpha.md); absolute paths and '..' are refused.\n")
	b.WriteString("- Cite what you use as path:line so the user can check it.\n")
	writes := false
	for _, op := range reg.List() {
		writes = writes || (op.IsWrite() && env.AnyWritesAllowed())
	}
	if writes {
		b.WriteString("- read_note returns an etag (SHA-256 of the file); every edit must pass it back as if_match so a change made meanwhile is never overwritten — read again on etag_mismatch.\n")
		b.WriteString("- Writes preview by default: the result shows a unified diff and nothing changes until you call again with apply=true. Show the user the diff before applying unless they asked you to act. Each applied write returns an undo_id (undo reverts it) and the new etag for the next edit.\n")
	} else {
		b.WriteString("- read_note returns an etag (SHA-256 of the file): the same etag means the same content.\n")
	}
	if has("index_status") {
		b.WriteString("- index_status tells whether the index is complete and which files failed to index.\n")
	}
	b.WriteString("- Notes are also resources at loci://<vault>/<path> (path segments URL-escaped).\n")
	if len(env.Vaults) > 1 {
		names := make([]string, len(env.Vaults))
		for i, v := range env.Vaults {
			names[i] = v.Name
		}
		b.WriteString("- Several vaults are served (" + strings.Join(names, ", ") + "); pass vault=<name> to work outside the first one.\n")
	}
	b.WriteString("- Errors come back as tool results with isError and a stable code (note_not_found, path_denied, validation_failed, ...) followed by a message saying what to change.")
	return b.String()
}
