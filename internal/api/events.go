package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// DefaultKeepAlive is the interval of SSE keep-alive comments.
const DefaultKeepAlive = 15 * time.Second

// KindFilter matches event kinds against a ?kinds= list: exact kinds
// ("note.created"), families ("note", "index.*") or everything (empty, "*").
type KindFilter []string

// ParseKinds splits a comma-separated kinds list.
func ParseKinds(s string) KindFilter {
	var f KindFilter
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" && k != "*" {
			f = append(f, strings.TrimSuffix(strings.TrimSuffix(k, "*"), "."))
		}
	}
	return f
}

// Match reports whether kind passes the filter.
func (f KindFilter) Match(kind string) bool {
	if len(f) == 0 {
		return true
	}
	for _, k := range f {
		if kind == k || strings.HasPrefix(kind, k+".") {
			return true
		}
	}
	return false
}

// serveEvents streams the event bus as Server-Sent Events: one
// "event: <kind>" / "id: <n>" / "data: <json>" record per event, a
// keep-alive comment every KeepAlive, filtered by ?kinds= and ?vault=. A
// client too slow to keep up loses events and is told so by a
// "stream.dropped" event carrying the count.
//
// The stream is a read: the principal needs the read scope, and sees only
// the events of the vaults it may use.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	filter := ParseKinds(r.URL.Query().Get("kinds"))
	vault := r.URL.Query().Get("vault")
	p := auth.From(r.Context())
	if !p.IsOwner() && !p.Has(auth.ScopeRead) {
		WriteError(w, errs.New(errs.CodeForbidden, "the event stream needs the read scope, which principal %q does not have", p.Name).
			With("principal", p.Name).With("missing_scopes", []string{string(auth.ScopeRead)}))
		return
	}
	if vault != "" && !p.MayUse(vault) {
		WriteError(w, errs.New(errs.CodeForbidden, "principal %q may not use vault %q", p.Name, vault).
			With("principal", p.Name).With("missing_vault", vault))
		return
	}
	ka := h.opt.KeepAlive
	if ka <= 0 {
		ka = DefaultKeepAlive
	}
	StreamEvents(w, r, h.env, ka, 1024, "loci events (kinds: "+strings.Join(filter, ",")+")", func(ev ops.Event) bool {
		if (vault != "" && ev.Vault != vault && ev.Vault != "") || !filter.Match(ev.Kind) || (ev.Vault != "" && !p.MayUse(ev.Vault)) {
			return false
		}
		return h.env.EventVisible(p, ev) // false: about a note the principal's read fence hides
	})
}

// StreamEvents writes the events that match as Server-Sent Events until
// the request ends (GET /v1/events and the web UI's /ui/events): the
// stream opens with a retry hint and the banner as a comment, a comment
// every keepAlive keeps proxies from closing it, and events that a slow
// reader misses (more than buf queued) are counted in a stream.dropped
// event rather than blocking the event bus.
func StreamEvents(w http.ResponseWriter, r *http.Request, env *ops.Env, keepAlive time.Duration, buf int, banner string, match func(ops.Event) bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a long-lived response
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	ch := make(chan ops.Event, buf)
	var dropped atomic.Int64
	unsub := env.SubscribeEvents(func(ev ops.Event) {
		if !match(ev) {
			return
		}
		select {
		case ch <- ev:
		default:
			dropped.Add(1)
		}
	})
	defer unsub()
	fmt.Fprintf(w, "retry: 2000\n: %s\n\n", banner)
	if err := rc.Flush(); err != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
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
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
