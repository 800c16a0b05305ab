// Package api is loci's REST surface. Everything it serves is generated from
// the operation registry: POST /v1/ops/<name> runs an operation with its JSON
// input, GET /v1/ops lists them, GET /openapi.json describes them, and a few
// friendly GET aliases (/v1/search, /v1/notes/<path>, ...) map query strings
// onto the same operations. Every call goes through ops.Registry.Call, like
// the CLI and MCP surfaces; this package holds no business rules.
//
// Authentication, Host/Origin checks and body limits belong to the server
// that mounts this handler (internal/server); it passes the authenticated
// principal down with auth.WithPrincipal.
package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 4 << 20

// Options configure the REST handler.
type Options struct {
	// Version is reported in the OpenAPI document (info.version).
	Version string
	// MaxBodyBytes bounds POST bodies (default 4 MiB). The server enforces
	// its own limit first; this one protects the handler when mounted alone.
	MaxBodyBytes int64
	// Logger receives internal errors (never note contents or arguments).
	Logger *slog.Logger
	// KeepAlive is the interval of keep-alive comments on GET /v1/events
	// (default 15 s).
	KeepAlive time.Duration
}

// Handler serves the REST API.
type Handler struct {
	reg *ops.Registry
	env *ops.Env
	opt Options
	log *slog.Logger

	openapiMu sync.Mutex
	openapi   map[string][]byte // encoded documents by the operations they show
}

// New returns the REST handler for the registry's operations running in env.
func New(reg *ops.Registry, env *ops.Env, opt Options) *Handler {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{reg: reg, env: env, opt: opt, log: log}
}

// ServeHTTP routes by the escaped path, so an encoded slash or dot in a note
// path reaches the vault's confinement check (and is refused there) instead
// of being decoded and cleaned away by a router.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	switch {
	case p == "/openapi.json":
		if allow(w, r, http.MethodGet) {
			h.serveOpenAPI(w, r)
		}
	case p == "/v1" || p == "/v1/":
		if allow(w, r, http.MethodGet) {
			WriteResult(w, h.routes(auth.From(r.Context())))
		}
	case p == "/v1/events":
		if allow(w, r, http.MethodGet) {
			h.serveEvents(w, r)
		}
	case p == "/v1/confirmations" || strings.HasPrefix(p, "/v1/confirmations/"):
		h.serveConfirmations(w, r, strings.TrimPrefix(strings.TrimPrefix(p, "/v1/confirmations"), "/"))
	case p == "/v1/ops":
		if allow(w, r, http.MethodGet) {
			WriteResult(w, map[string]any{"operations": h.catalog(auth.From(r.Context()))})
		}
	case strings.HasPrefix(p, "/v1/ai/"):
		// POST /v1/ai/<op>: alias of POST /v1/ops/ai_<op> (SSE with Accept:
		// text/event-stream); GET /v1/ai/status runs ai_status.
		rest := strings.TrimPrefix(p, "/v1/ai/")
		if rest == "" || strings.ContainsAny(rest, "/%") {
			WriteError(w, errs.New(errs.CodeUnknownOp, "unknown AI operation %q", rest))
			return
		}
		if a, ok := aliasOf(p); ok && r.Method != http.MethodPost {
			if allow(w, r, http.MethodGet, http.MethodPost) {
				h.serveAlias(w, r, a, "")
			}
			return
		}
		h.serveAI(w, r, "ai_"+rest)
	case strings.HasPrefix(p, "/v1/ops/"):
		name := strings.TrimPrefix(p, "/v1/ops/")
		if name == "" || strings.ContainsAny(name, "/%") {
			WriteError(w, errs.New(errs.CodeUnknownOp, "unknown operation %q", name))
			return
		}
		switch r.Method {
		case http.MethodPost:
			if strings.HasPrefix(name, "ai_") && wantsSSE(r) {
				h.serveAI(w, r, name)
				return
			}
			h.callOp(w, r, name)
		case http.MethodGet, http.MethodHead:
			op, ok := h.reg.Get(name)
			if !ok {
				WriteError(w, errs.New(errs.CodeUnknownOp, "unknown operation %q", name))
				return
			}
			if err := h.env.Permits(auth.From(r.Context()), op); err != nil {
				WriteError(w, err)
				return
			}
			WriteResult(w, describe(op))
		default:
			methodNotAllowed(w, r, http.MethodGet, http.MethodPost)
		}
	default:
		for _, a := range aliases {
			if rest, ok := a.match(p); ok {
				if allow(w, r, http.MethodGet) {
					h.serveAlias(w, r, a, rest)
				}
				return
			}
		}
		WriteError(w, errs.New(errs.CodeRouteNotFound, "no such route: %s %s", r.Method, r.URL.Path).
			With("hint", "operations are listed at GET /v1/ops and described at GET /openapi.json"))
	}
}

// callOp runs POST /v1/ops/<name>: the body is the operation's JSON input.
func (h *Handler) callOp(w http.ResponseWriter, r *http.Request, name string) {
	if r.ContentLength > h.opt.MaxBodyBytes {
		WriteError(w, tooLarge(h.opt.MaxBodyBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opt.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			WriteError(w, tooLarge(h.opt.MaxBodyBytes))
			return
		}
		WriteError(w, errs.Wrap(err, errs.CodeInvalidInput, "cannot read the request body"))
		return
	}
	body, e := withIdempotencyKey(h.reg, r, name, body)
	if e != nil {
		WriteError(w, e)
		return
	}
	h.call(w, r, name, body)
}

// withIdempotencyKey puts the request's Idempotency-Key header into the
// input's idempotency_key, for the operations that take one (writes and
// AI operations); the body's own key must then be the same
// (validation_failed otherwise). Operations without the field are reads,
// which a retry cannot repeat: the header changes nothing for them. A
// body that is not a JSON object is left to the pipeline to refuse.
func withIdempotencyKey(reg *ops.Registry, r *http.Request, name string, body []byte) ([]byte, *errs.Error) {
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if key == "" {
		return body, nil
	}
	op, ok := reg.Get(name)
	if !ok || op.InputSchema == nil {
		return body, nil
	}
	if _, takes := op.InputSchema.Properties["idempotency_key"]; !takes {
		return body, nil
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(trimmed, &m) != nil || m == nil {
		return body, nil
	}
	kb, _ := json.Marshal(key)
	if have, ok := m["idempotency_key"]; ok {
		var hk string
		if json.Unmarshal(have, &hk) != nil || hk != key {
			return nil, errs.New(errs.CodeInvalidInput, "the Idempotency-Key header and the body's idempotency_key differ; send one of them, or the same key in both").
				With("header", key).With("idempotency_key", json.RawMessage(have))
		}
		return body, nil
	}
	// Insert the field as text, so the rest of the body reaches the
	// pipeline exactly as sent.
	out := append([]byte(`{"idempotency_key":`), kb...)
	if len(m) > 0 {
		out = append(out, ',')
	}
	return append(out, trimmed[1:]...), nil
}

// call runs one operation through the shared dispatch pipeline.
func (h *Handler) call(w http.ResponseWriter, r *http.Request, name string, raw json.RawMessage) {
	res := h.reg.Call(r.Context(), h.env, ops.Caller{Surface: "rest", Principal: auth.From(r.Context())}, name, raw)
	if res.Err != nil {
		if res.Err.Code == errs.CodeInternal {
			h.log.Error("operation failed", "op", name, "err", res.Err.Error())
		}
		WriteError(w, res.Err)
		return
	}
	if op, ok := h.reg.Get(name); ok {
		if b, err := op.NormalizeOutput(res.Output); err == nil {
			WriteResult(w, json.RawMessage(b)) // arrays are never null, as the OpenAPI schema says
			return
		}
	}
	WriteResult(w, res.Output)
}

func tooLarge(limit int64) *errs.Error {
	return errs.New(errs.CodeTooLarge, "request body is over the %d-byte limit", limit).With("limit", limit)
}

// envelope is the shape of every REST response.
type envelope struct {
	OK     bool        `json:"ok"`
	Result any         `json:"result,omitempty"`
	Error  *errs.Error `json:"error,omitempty"`
}

// WriteResult writes {"ok":true,"result":v} with status 200.
func WriteResult(w http.ResponseWriter, v any) {
	b, err := json.Marshal(envelope{OK: true, Result: v})
	if err != nil {
		WriteError(w, errs.Wrap(err, errs.CodeInternal, "cannot encode the result"))
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// WriteError writes {"ok":false,"error":{code,message,details}} with the
// status HTTPStatus maps the code to.
func WriteError(w http.ResponseWriter, e *errs.Error) {
	if e == nil {
		e = errs.New(errs.CodeInternal, "unknown error")
	}
	b, err := json.Marshal(envelope{OK: false, Error: e})
	if err != nil {
		// Details that cannot be encoded are dropped rather than lost with the error.
		b, _ = json.Marshal(envelope{OK: false, Error: &errs.Error{Code: e.Code, Message: e.Message}})
	}
	if s, ok := retryAfter(e); ok {
		w.Header().Set("Retry-After", s)
	}
	writeJSON(w, HTTPStatus(e.Code), b)
}

// retryAfter is the Retry-After header of an error that says when to try
// again (details.retry_after_seconds: ai_quota_exceeded's wait until the
// UTC day resets).
func retryAfter(e *errs.Error) (string, bool) {
	var n float64
	switch v := e.Details["retry_after_seconds"].(type) {
	case int:
		n = float64(v)
	case int64:
		n = float64(v)
	case float64:
		n = v
	default:
		return "", false
	}
	if n < 0 {
		n = 0
	}
	return strconv.FormatInt(int64(math.Ceil(n)), 10), true
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte("\n"))
}

// allow reports whether r uses one of methods (HEAD counts as GET); if not it
// writes a 405 with an Allow header.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m || (m == http.MethodGet && r.Method == http.MethodHead) {
			return true
		}
	}
	methodNotAllowed(w, r, methods...)
	return false
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, methods ...string) {
	w.Header().Set("Allow", strings.Join(methods, ", "))
	WriteError(w, errs.New(errs.CodeMethodNotAllowed, "method %s is not allowed on %s", r.Method, r.URL.Path).With("allow", methods))
}

// StatusEntry is one row of the error-code → HTTP status table.
type StatusEntry struct {
	Code   string
	Status int
}

// statusTable is the one place error codes meet HTTP statuses; docs/api.md
// is checked against it by a test.
var statusTable = []StatusEntry{
	{errs.CodeInvalidInput, http.StatusBadRequest},
	{errs.CodeNotLogseqGraph, http.StatusBadRequest},
	{errs.CodeUnauthorized, http.StatusUnauthorized},
	{errs.CodeForbidden, http.StatusForbidden},
	{errs.CodePathDenied, http.StatusForbidden},
	{errs.CodeNotFound, http.StatusNotFound},
	{errs.CodeVaultNotFound, http.StatusNotFound},
	{errs.CodeBlockNotFound, http.StatusNotFound},
	{errs.CodeUnknownOp, http.StatusNotFound},
	{errs.CodeRouteNotFound, http.StatusNotFound},
	{errs.CodeMethodNotAllowed, http.StatusMethodNotAllowed},
	{errs.CodeAmbiguous, http.StatusConflict},
	{errs.CodeConflict, http.StatusConflict},
	{errs.CodeEtagMismatch, http.StatusPreconditionFailed},
	{errs.CodeWritesDisabled, http.StatusForbidden},
	{errs.CodeIdempotencyReuse, http.StatusUnprocessableEntity},
	{errs.CodeInvalidUTF8, http.StatusUnprocessableEntity},
	{errs.CodeNoteLocked, http.StatusLocked},
	{errs.CodeUndoNotFound, http.StatusNotFound},
	{errs.CodeTooLarge, http.StatusRequestEntityTooLarge},
	{errs.CodeRateLimited, http.StatusTooManyRequests},
	{errs.CodeConfirmationRequired, http.StatusPreconditionRequired},
	{errs.CodeConfirmationInvalid, http.StatusConflict},
	{errs.CodeInternal, http.StatusInternalServerError},
	{errs.CodeConfigInvalid, http.StatusInternalServerError},
	{errs.CodeIndexBusy, http.StatusServiceUnavailable},
	{errs.CodeIndexMissing, http.StatusServiceUnavailable},
	{errs.CodeIndexSchema, http.StatusServiceUnavailable},
	{errs.CodeEmbedMismatch, http.StatusConflict},
	{errs.CodeEmbedUnavailable, http.StatusServiceUnavailable},
	{"cancelled", http.StatusServiceUnavailable},
	{errs.CodeAIUnavailable, http.StatusServiceUnavailable},
	{errs.CodeAIQuota, http.StatusTooManyRequests},
	{errs.CodeAIProvider, http.StatusBadGateway},
	{errs.CodeAIGrounding, http.StatusUnprocessableEntity},
	{errs.CodeAIInputTooLarge, http.StatusUnprocessableEntity},
	{errs.CodeAISchemaInvalid, http.StatusUnprocessableEntity},
	{errs.CodeUnsupportedQuery, http.StatusBadRequest},
	{errs.CodeQueryTimeout, http.StatusServiceUnavailable},
}

// StatusTable returns the error-code → HTTP status mapping, in a stable order.
// Codes not listed map to 500.
func StatusTable() []StatusEntry { return append([]StatusEntry(nil), statusTable...) }

// HTTPStatus maps an error code to its HTTP status (500 for unknown codes).
func HTTPStatus(code string) int {
	for _, e := range statusTable {
		if e.Code == code {
			return e.Status
		}
	}
	return http.StatusInternalServerError
}
