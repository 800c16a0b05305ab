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
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/read"
)

// keepAlive is the interval of the stream's comments that keep proxies
// and the browser from closing an idle connection.
var keepAlive = 15 * time.Second

// kindsMatch reports whether kind is in the comma-separated families of
// ?kinds= ("index", "write.applied"); empty matches every kind.
func kindsMatch(filter []string, kind string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, k := range filter {
		if kind == k || strings.HasPrefix(kind, k+".") {
			return true
		}
	}
	return false
}

func (h *Handler) events(ctx context.Context, w http.ResponseWriter, r *http.Request, s *session) {
	p := s.principal
	if !p.IsOwner() && !p.Has(auth.ScopeRead) {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "the event stream needs the read scope"})
		return
	}
	var filter []string
	for _, k := range strings.Split(r.URL.Query().Get("kinds"), ",") {
		if k = strings.TrimSuffix(strings.TrimSpace(k), ".*"); k != "" && k != "*" {
			filter = append(filter, k)
		}
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	ch := make(chan ops.Event, 256)
	var dropped atomic.Int64
	unsub := h.env.SubscribeEvents(func(ev ops.Event) {
		if !kindsMatch(filter, ev.Kind) || (ev.Vault != "" && !p.MayUse(ev.Vault)) || !h.env.EventVisible(p, ev) {
			return
		}
		select {
		case ch <- ev:
		default:
			dropped.Add(1)
		}
	})
	defer unsub()
	fmt.Fprint(w, "retry: 2000\n: loci events\n\n")
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case ev := <-ch:
			if n := dropped.Swap(0); n > 0 {
				fmt.Fprintf(w, "event: stream.dropped\ndata: {\"dropped\":%d}\n\n", n)
			}
			b, _ := json.Marshal(ev)
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Kind, b); err != nil {
				return
			}
		}
		if rc.Flush() != nil {
			return
		}
	}
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
		writeJSON(w, errStatus(err), map[string]any{"error": err})
		return
	}
	st := liveStatus{IndexStatusOut: out}
	if wt := out.Watcher; wt != nil && !wt.PendingSince.IsZero() {
		st.LagMs = time.Since(wt.PendingSince).Milliseconds()
	}
	writeJSON(w, http.StatusOK, st)
}
