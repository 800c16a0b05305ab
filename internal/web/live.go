package web

// Live updates: /ui/events streams the server's event bus to the pages as
// Server-Sent Events (the session cookie authenticates it, unlike
// GET /v1/events, which wants the bearer token), with the same rules as
// the API's stream: the read scope, only the vaults the principal may use,
// and no event about a note its read fence hides. views.js listens on the
// status page (sync and embedding progress bars, watcher lag), on the
// activity page (new writes) and on every page for the Pending badge.
// /ui/status.json is index_status for the status page's numbers.

import (
	"context"
	"net/http"
	"time"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/read"
)

// keepAlive is the interval of the stream's comments that keep proxies
// and the browser from closing an idle connection.
var keepAlive = 15 * time.Second

func (h *Handler) events(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	p := s.principal
	if !p.IsOwner() && !p.Has(auth.ScopeRead) {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "the event stream needs the read scope"})
		return
	}
	filter := api.ParseKinds(r.URL.Query().Get("kinds"))
	api.StreamEvents(w, r, h.env, keepAlive, 256, "loci events", func(ev ops.Event) bool {
		return filter.Match(ev.Kind) && (ev.Vault == "" || p.MayUse(ev.Vault)) && h.env.EventVisible(p, ev)
	})
}

// liveStatus is what the status page refreshes: the index counts, the
// sync, the embedder and the watcher, with the watcher's lag computed
// here (the browser's clock may differ).
type liveStatus struct {
	*read.IndexStatusOut
	LagMs int64 `json:"watcher_lag_ms"`
}

func (h *Handler) statusJSON(ctx context.Context, w http.ResponseWriter) {
	out, err := call[read.IndexStatusOut](ctx, h, "index_status", map[string]any{})
	if err != nil {
		writeJSON(w, api.HTTPStatus(err.Code), map[string]any{"error": err})
		return
	}
	st := liveStatus{IndexStatusOut: out}
	if wt := out.Watcher; wt != nil && !wt.PendingSince.IsZero() {
		st.LagMs = time.Since(wt.PendingSince).Milliseconds()
	}
	writeJSON(w, http.StatusOK, st)
}
