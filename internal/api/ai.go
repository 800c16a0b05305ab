package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// wantsSSE reports whether the client asked for a Server-Sent Events stream.
func wantsSSE(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// serveAI runs POST /v1/ai/<op> (the alias of POST /v1/ops/ai_<op>). With
// Accept: text/event-stream the streaming AI operations send ai.partial,
// ai.citation and ai.usage events, then ai.complete with the result (the
// same payload as without streaming) or ai.error.
func (h *Handler) serveAI(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, http.MethodPost)
		return
	}
	if !wantsSSE(r) {
		h.callOp(w, r, name)
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
	// The stream flag is implied by the Accept header.
	var m map[string]any
	if json.Unmarshal(body, &m) == nil && m != nil {
		if op, ok := h.reg.Get(name); ok {
			if _, has := op.InputSchema.Properties["stream"]; has {
				m["stream"] = true
				body, _ = json.Marshal(m)
			}
		}
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var mu sync.Mutex
	send := func(event string, data any) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}
	ctx := ops.WithStream(r.Context(), send)
	res := h.reg.Call(ctx, h.env, ops.Caller{Surface: "rest", Principal: auth.From(r.Context())}, name, body)
	if res.Err != nil {
		send("ai.error", map[string]any{"ok": false, "error": res.Err, "status": HTTPStatus(res.Err.Code)})
		return
	}
	send("ai.complete", res.Output)
}
