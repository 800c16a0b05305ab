package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// The Pending page: the destructive calls of agents that wait for a human
// (docs/security.md, "Human confirmation"), each with its summary and
// diffs and Confirm / Deny buttons (same origin and CSRF token required,
// like undo). It needs the admin scope. The page stays current with a
// small poll of /ui/pending.json (app.js) that reloads it when the list
// changed.

type pendingData struct {
	Items []ops.Confirmation
	IDs   string
}

func (h *Handler) pendingPage(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	p := page{Title: "Pending", Nav: "pending", Session: s, Notice: r.URL.Query().Get("done")}
	list, err := h.env.ListConfirmations(s.principal, false)
	if err != nil {
		w.WriteHeader(http.StatusForbidden)
		p.Error = err.Message
		h.render(w, "error", p)
		return
	}
	d := pendingData{Items: list}
	for i, c := range list {
		if i > 0 {
			d.IDs += " "
		}
		d.IDs += c.ID
	}
	p.Data = d
	h.render(w, "pending", p)
}

// pendingJSON is what the Pending page polls: the ids waiting, in order.
func (h *Handler) pendingJSON(w http.ResponseWriter, r *http.Request, s *session) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	list, err := h.env.ListConfirmations(s.principal, false)
	if err != nil {
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": err})
		return
	}
	ids := make([]string, len(list))
	for i, c := range list {
		ids[i] = c.ID
	}
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "ids": ids})
}

// decide confirms or denies from the Pending page.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request, s *session) {
	if !h.sameOrigin(r) || !h.csrfOK(s, r) {
		w.WriteHeader(http.StatusForbidden)
		h.render(w, "error", page{Title: "Forbidden", Session: s, Error: "This form did not come from this page (cross-site request or stale session); reload the page and try again."})
		return
	}
	id, decision := r.PostFormValue("id"), r.PostFormValue("decision")
	c, err := h.env.DecideConfirmation(s.principal, id, decision)
	if err != nil {
		status := http.StatusConflict
		if err.Code == errs.CodeForbidden {
			status = http.StatusForbidden
		}
		w.WriteHeader(status)
		h.render(w, "error", page{Title: "Not decided", Nav: "pending", Session: s, Error: err.Code + ": " + err.Message})
		return
	}
	msg := "Confirmed " + c.ID + ": " + c.Principal + " may now repeat " + c.Operation + " once."
	if c.State == ops.ConfirmDenied {
		msg = "Denied " + c.ID + " (" + c.Operation + " by " + c.Principal + ")."
	}
	http.Redirect(w, r, "/ui/pending?done="+url.QueryEscape(msg), http.StatusSeeOther)
}
