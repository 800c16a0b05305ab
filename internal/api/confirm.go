package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
)

// The human side of the confirmation of destructive calls
// (docs/security.md, "Human confirmation"). These routes are not
// operations of the registry, so no agent reaches them over MCP; they need
// the admin scope, and the principal that asked for a call cannot decide
// it (ops.Env.DecideConfirmation).
//
//	GET  /v1/confirmations[?all=1]   the calls waiting for a human
//	GET  /v1/confirmations/{id}      one of them
//	POST /v1/confirmations/{id}      {"decision": "confirm" | "deny"}

func (h *Handler) serveConfirmations(w http.ResponseWriter, r *http.Request, rest string) {
	by := auth.From(r.Context())
	if rest == "" {
		if !allow(w, r, http.MethodGet) {
			return
		}
		all := r.URL.Query().Get("all")
		list, err := h.env.ListConfirmations(by, all == "1" || all == "true")
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteResult(w, map[string]any{"confirmations": list})
		return
	}
	if strings.ContainsAny(rest, "/%") {
		WriteError(w, errs.New(errs.CodeRouteNotFound, "no such route: %s %s", r.Method, r.URL.Path))
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		list, err := h.env.ListConfirmations(by, true)
		if err != nil {
			WriteError(w, err)
			return
		}
		for _, c := range list {
			if c.ID == rest {
				WriteResult(w, c)
				return
			}
		}
		WriteError(w, errs.New(errs.CodeConfirmationInvalid, "no confirmation has the id %s", rest).
			With("confirmation_id", rest).With("reason", "unknown"))
	case http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
		if err != nil {
			WriteError(w, tooLarge(4096))
			return
		}
		var in struct {
			Decision string `json:"decision"`
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			WriteError(w, errs.New(errs.CodeInvalidInput, `the body must be {"decision": "confirm"} or {"decision": "deny"}: %v`, err))
			return
		}
		c, e := h.env.DecideConfirmation(by, rest, in.Decision)
		if e != nil {
			WriteError(w, e)
			return
		}
		WriteResult(w, c)
	default:
		methodNotAllowed(w, r, http.MethodGet, http.MethodPost)
	}
}
