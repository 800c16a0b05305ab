package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpHandler is the SDK's Streamable HTTP handler (stateful sessions, SSE
// streams, an in-memory event store for replay, the SDK's idle timeout)
// behind a gate that checks every POSTed message and caps concurrent
// sessions.
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
	// Every event stream (a POST's answer, the GET stream, a GET resuming
	// with Last-Event-ID) starts with the SSE retry field.
	w = &sseRetryWriter{ResponseWriter: w}
	if r.Method != http.MethodPost {
		h.sdk.ServeHTTP(w, r)
		return
	}
	// Every POST body is one JSON-RPC message, checked as a stdio line is
	// (checkMessage) before the SDK reads it: a malformed one is answered
	// with a JSON-RPC error body and HTTP 400 (413 when too large), and the
	// session it was sent in goes on.
	msg, body, rep, status := readMessage(r)
	if rep != nil {
		h.s.log.Debug("mcp: refused a malformed message", "transport", "http", "code", rep.code, "error", rep.msg)
		writeReply(w, status, rep)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	req, _ := msg.(*jsonrpc.Request)
	jw := &jsonErrorWriter{ResponseWriter: w, req: req}
	defer jw.finish()
	if sid := r.Header.Get(sessionHeader); sid != "" {
		h.sessionVersion(r, sid)
		h.sdk.ServeHTTP(jw, r)
		return
	}
	if req != nil && req.IsCall() && !sessionless(r, req) {
		// The SDK would open a session that is never initialized and answer
		// with error code 0 ("invalid during session initialization").
		writeReply(jw, http.StatusBadRequest, invalidRequest(req.ID,
			"%s needs a session: send initialize first (without %s), then this request with the %s it returns",
			clip(req.Method, maxQuoted), sessionHeader, sessionHeader))
		return
	}
	// A POST without a session id carrying initialize opens a session. (Other
	// session-less POSTs, such as a 2026-07-28 client's server/discover probe,
	// get a temporary session that the SDK closes at once: not counted.)
	if req == nil || req.Method != "initialize" {
		h.sdk.ServeHTTP(jw, r)
		return
	}
	if h.s.isClosed() {
		reject(jw, req.ID, http.StatusServiceUnavailable, "the loci MCP server is shutting down")
		return
	}
	live, ok := h.admit()
	if !ok {
		reject(jw, req.ID, http.StatusServiceUnavailable, fmt.Sprintf(
			"too many MCP sessions: %d of %d are open; close an idle session (HTTP DELETE with its Mcp-Session-Id), wait for idle ones to expire, or raise the limit", live, h.max))
		return
	}
	cw := &captureWriter{ResponseWriter: jw}
	defer func() { h.release(cw.sessionID) }()
	h.sdk.ServeHTTP(cw, r)
}

// sessionless reports whether a request without a session id may go to the
// SDK: initialize, ping (allowed before initialize) and server/discover (a
// client's probe for the session-less protocol), and any request that
// declares the session-less protocol, 2026-07-28 or later, in its
// Mcp-Protocol-Version header or in params._meta (the SDK answers those
// itself). A version is a YYYY-MM-DD date compared as a date: "9" or
// "2026-13-01" declares nothing.
func sessionless(r *http.Request, req *jsonrpc.Request) bool {
	switch req.Method {
	case "initialize", "ping", "server/discover":
		return true
	}
	if sessionlessVersion(r.Header.Get("Mcp-Protocol-Version")) {
		return true
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(req.Params, &p)
	var v string
	json.Unmarshal(p.Meta[mcp.MetaKeyProtocolVersion], &v)
	return sessionlessVersion(v)
}

// firstSessionlessVersion is the first protocol version without sessions.
var firstSessionlessVersion = time.Date(2026, time.July, 28, 0, 0, 0, 0, time.UTC)

// sessionlessVersion reports whether v is a protocol version (a YYYY-MM-DD
// date) of the session-less protocol.
func sessionlessVersion(v string) bool {
	d, err := time.Parse(time.DateOnly, v)
	return err == nil && !d.Before(firstSessionlessVersion)
}

// readMessage reads and checks a POST body (at most MaxMessageBytes). On
// refusal it returns the answer and its HTTP status.
func readMessage(r *http.Request) (jsonrpc.Message, []byte, *reply, int) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxMessageBytes+1))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, nil, tooLarge(jsonrpc.ID{}, -1, int(min(mbe.Limit, MaxMessageBytes))), http.StatusRequestEntityTooLarge
		}
		return nil, nil, invalidRequest(jsonrpc.ID{}, "cannot read the request body: %v", err), http.StatusBadRequest
	}
	if len(body) > MaxMessageBytes { // only its start was read, enough to find an early id
		size := int64(-1)
		if r.ContentLength > 0 {
			size = r.ContentLength
		}
		return nil, nil, tooLarge(sniffID(body), size, MaxMessageBytes), http.StatusRequestEntityTooLarge
	}
	msg, rep := checkMessage(body)
	if rep != nil {
		return nil, nil, rep, http.StatusBadRequest
	}
	return msg, body, nil, 0
}

// writeReply answers with a JSON-RPC error body and an HTTP status.
func writeReply(w http.ResponseWriter, status int, rep *reply) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if status == http.StatusRequestEntityTooLarge {
		h.Set("Connection", "close") // the rest of the body is not read
	}
	w.WriteHeader(status)
	w.Write(rep.encode())
}

// jsonErrorWriter turns the SDK's plain-text refusals of a well-formed
// message (HTTP 400 `JSON RPC not handled: "x" unsupported`, `invalid
// request: missing id for "ping"`, ...; 415 for a wrong Content-Type) into
// JSON-RPC error bodies with the request's id, so that every answer to a
// POSTed message is JSON-RPC. Everything else passes through untouched.
type jsonErrorWriter struct {
	http.ResponseWriter
	req       *jsonrpc.Request
	status    int
	text      bytes.Buffer
	rewriting bool
}

func (j *jsonErrorWriter) WriteHeader(code int) {
	if j.status == 0 {
		j.status = code
		if (code == http.StatusBadRequest || code == http.StatusUnsupportedMediaType) &&
			strings.HasPrefix(j.Header().Get("Content-Type"), "text/plain") {
			j.rewriting = true
			return
		}
	}
	j.ResponseWriter.WriteHeader(code)
}

func (j *jsonErrorWriter) Write(b []byte) (int, error) {
	if j.status == 0 {
		j.status = http.StatusOK
	}
	if j.rewriting {
		if room := 4096 - j.text.Len(); room > 0 {
			j.text.Write(b[:min(len(b), room)])
		}
		return len(b), nil
	}
	return j.ResponseWriter.Write(b)
}

func (j *jsonErrorWriter) Flush() {
	if j.rewriting {
		return
	}
	if f, ok := j.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (j *jsonErrorWriter) Unwrap() http.ResponseWriter { return j.ResponseWriter }

// finish sends the JSON-RPC form of a plain-text refusal, if there was one.
func (j *jsonErrorWriter) finish() {
	if !j.rewriting {
		return
	}
	text := strings.TrimSpace(j.text.String())
	rep := &reply{code: jsonrpc.CodeInvalidRequest, msg: text}
	if strings.HasPrefix(text, "JSON RPC not handled") { // the SDK's ErrNotHandled: an unknown method
		rep.code, rep.msg = jsonrpc.CodeMethodNotFound, "method not found: "+text
	}
	if j.req != nil {
		rep.id = j.req.ID
	}
	j.Header().Del("X-Content-Type-Options")
	writeReply(j.ResponseWriter, j.status, rep)
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

// reject answers with a JSON-RPC error (codeServerBusy) and the given HTTP
// status.
func reject(w http.ResponseWriter, id jsonrpc.ID, status int, msg string) {
	w.Header().Set("Retry-After", "30")
	writeReply(w, status, &reply{id: id, code: codeServerBusy, msg: msg})
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

// sseRetryMillis is the reconnection delay every event stream announces (the
// SSE retry field): a client whose stream drops waits this long, then
// resumes it with GET and Last-Event-ID.
const sseRetryMillis = 1000

// sseRetryWriter starts an event-stream response with a `retry:` block (no
// data, so clients dispatch no event for it; an SSE parser only records the
// delay). Other responses pass through untouched.
type sseRetryWriter struct {
	http.ResponseWriter
	status  int
	started bool
}

func (s *sseRetryWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *sseRetryWriter) Write(b []byte) (int, error) {
	if !s.started {
		s.started = true
		if (s.status == 0 || s.status == http.StatusOK) && strings.HasPrefix(s.Header().Get("Content-Type"), "text/event-stream") {
			if _, err := fmt.Fprintf(s.ResponseWriter, "retry: %d\n\n", sseRetryMillis); err != nil {
				return 0, err
			}
		}
	}
	return s.ResponseWriter.Write(b)
}

func (s *sseRetryWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *sseRetryWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// primingVersion is the first protocol version whose POST event streams
// start with a priming event (an id and no data, SEP-1699), which a client
// resumes from with Last-Event-ID if the stream drops before the answer.
const primingVersion = "2025-11-25"

// olderVersions are the protocol versions before primingVersion.
var olderVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18"}

// sessionVersion holds a request to the protocol version its session
// negotiated: a client that initialized with 2025-11-25 (or later, which
// negotiates 2025-11-25) but names an older version in a later request's
// Mcp-Protocol-Version header still gets priming events, which the SDK only
// sends when the header says 2025-11-25. Nothing else of the older version's
// behaviour is lost: that client speaks 2025-11-25.
func (h *httpHandler) sessionVersion(r *http.Request, sid string) {
	if !slices.Contains(olderVersions, r.Header.Get("Mcp-Protocol-Version")) {
		return // none, the same, a later one, or one the SDK refuses
	}
	for ss := range h.s.mcp.Sessions() {
		if ss.ID() != sid {
			continue
		}
		if p := ss.InitializeParams(); p != nil && p.ProtocolVersion >= primingVersion {
			r.Header.Set("Mcp-Protocol-Version", primingVersion)
		}
		return
	}
}
