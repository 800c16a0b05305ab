package mcpserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpHandler is the SDK's Streamable HTTP handler (stateful sessions, SSE
// streams, an in-memory event store for replay, the SDK's idle timeout)
// behind a gate that caps concurrent sessions.
//
// Counting: a session is "live" while the SDK server holds it (it removes a
// session on close, idle timeout, DELETE, or a failed initialize). The gate
// tracks the ids of sessions it let in and counts those still live, plus
// session-creating requests in flight, so concurrent initializes cannot
// overshoot the cap.
type httpHandler struct {
	s   *Server
	sdk *mcp.StreamableHTTPHandler
	max int

	mu      sync.Mutex
	pending int
	tracked map[string]bool
}

const sessionHeader = "Mcp-Session-Id"

func newHTTPHandler(s *Server) *httpHandler {
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: s.opt.IdleTimeout,
		Logger:         s.log,
		// Notifications sent while a client has no GET stream open (say,
		// right after initialize) are kept and replayed when it connects,
		// and dropped streams can resume with Last-Event-ID.
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	return &httpHandler{s: s, sdk: sdk, max: s.opt.MaxSessions, tracked: map[string]bool{}}
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get(sessionHeader) != "" {
		h.sdk.ServeHTTP(w, r)
		return
	}
	// A POST without a session id carrying initialize opens a session. (Other
	// session-less POSTs, such as a 2026-07-28 client's server/discover probe,
	// get a temporary session that the SDK closes at once: not counted.)
	if r.Body == nil {
		r.Body = http.NoBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeek+1))
	if err != nil {
		status := http.StatusBadRequest
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "cannot read the request body: "+err.Error(), status)
		return
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if len(body) <= maxPeek && !isInitialize(body) {
		h.sdk.ServeHTTP(w, r)
		return
	}
	if h.s.isClosed() {
		reject(w, r, http.StatusServiceUnavailable, "the loci MCP server is shutting down")
		return
	}
	live, ok := h.admit()
	if !ok {
		reject(w, r, http.StatusServiceUnavailable, fmt.Sprintf(
			"too many MCP sessions: %d of %d are open; close an idle session (HTTP DELETE with its Mcp-Session-Id), wait for idle ones to expire, or raise the limit", live, h.max))
		return
	}
	cw := &captureWriter{ResponseWriter: w}
	defer func() { h.release(cw.sessionID) }()
	h.sdk.ServeHTTP(cw, r)
}

// maxPeek bounds how much of a session-less POST is read to find out
// whether it is an initialize request (a larger body counts as one).
const maxPeek = 64 << 10

func isInitialize(body []byte) bool {
	m, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return true // a batch or something odd: let the gate count it
	}
	req, ok := m.(*jsonrpc.Request)
	return ok && req.Method == "initialize"
}

// admit reserves a slot for a new session.
func (h *httpHandler) admit() (int, bool) {
	alive := map[string]bool{}
	for ss := range h.s.mcp.Sessions() {
		if id := ss.ID(); id != "" {
			alive[id] = true
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.tracked {
		if !alive[id] {
			delete(h.tracked, id)
		}
	}
	n := len(h.tracked) + h.pending
	if n >= h.max {
		return n, false
	}
	h.pending++
	return n, true
}

func (h *httpHandler) release(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending--
	if id != "" {
		h.tracked[id] = true
	}
}

// reject answers with a JSON-RPC error response (echoing the request's id
// when the body holds a single request) and the given HTTP status.
func reject(w http.ResponseWriter, r *http.Request, status int, msg string) {
	resp := &jsonrpc.Response{Error: &jsonrpc.Error{Code: codeServerBusy, Message: msg}}
	if r.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(r.Body, maxPeek))
		if m, err := jsonrpc.DecodeMessage(b); err == nil {
			if req, ok := m.(*jsonrpc.Request); ok {
				resp.ID = req.ID
			}
		}
	}
	body, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "30")
	w.WriteHeader(status)
	w.Write(body)
}

// codeServerBusy is a JSON-RPC implementation-defined server error.
const codeServerBusy = -32000

// captureWriter records the session id the SDK assigns.
type captureWriter struct {
	http.ResponseWriter
	sessionID string
	seen      bool
}

func (c *captureWriter) capture() {
	if !c.seen {
		c.seen = true
		c.sessionID = c.Header().Get(sessionHeader)
	}
}

func (c *captureWriter) WriteHeader(code int) {
	c.capture()
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	c.capture()
	return c.ResponseWriter.Write(b)
}

func (c *captureWriter) Flush() {
	c.capture()
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (c *captureWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
