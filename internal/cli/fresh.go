package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/safefs"
	"github.com/loci-dev/loci/internal/watch"
)

// freshOptions are the flags that keep a served index fresh.
type freshOptions struct {
	noWatch   bool
	debounce  time.Duration
	reconcile time.Duration
	eventsLog string
}

func (o *freshOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.noWatch, "no-watch", false, "do not watch the vault's files; re-sync every --resync instead")
	f.DurationVar(&o.debounce, "debounce", watch.DefaultDebounce, "batch file changes this long after the last one before re-indexing")
	f.DurationVar(&o.reconcile, "reconcile", watch.DefaultReconcile, "full incremental re-sync this often while watching, a safety net for events the OS dropped (0 = never)")
	f.StringVar(&o.eventsLog, "events-log", "", "append every event (note.*, index.*, write.applied, watcher.*) to this file as NDJSON")
}

// keepFresh keeps every vault's index current until ctx ends: a file
// watcher per vault (falling back to periodic syncs where it cannot start),
// or periodic syncs only with --no-watch.
func keepFresh(ctx context.Context, env *ops.Env, o freshOptions, resync time.Duration, log *slog.Logger) {
	if o.noWatch {
		backgroundSync(ctx, env, resync, log)
		return
	}
	indexed := true
	for _, vh := range env.Vaults {
		indexed = indexed && vh.Index.Meta(ctx, "last_full_index_at") != ""
	}
	delay := time.Duration(0)
	if indexed {
		delay = startupSyncDelay
	}
	reconcile := o.reconcile
	if reconcile == 0 {
		reconcile = -1
	}
	var wg sync.WaitGroup
	for _, vh := range env.Vaults {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := watch.Run(ctx, env, vh, watch.Options{Debounce: o.debounce, Reconcile: reconcile, InitialDelay: delay, Logger: log})
			if err != nil && ctx.Err() == nil {
				log.Warn("file watcher unavailable, re-syncing periodically instead", "vault", vh.Name, "error", err, "every", resync)
				syncVaults(ctx, env, []*ops.VaultHandle{vh}, resync, log)
			}
		}()
	}
	wg.Wait()
}

// openEventsLog subscribes an NDJSON writer to env's events; the returned
// func unsubscribes and closes the file.
func openEventsLog(env *ops.Env, name string) (func(), error) {
	if name == "" {
		return func() {}, nil
	}
	// The user names the file; inside a served vault it is reached from the
	// vault root so that a link planted on the way is refused, and the
	// file itself is never a link.
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInvalidInput, "cannot open the events log "+name).With("path", name)
	}
	var roots []string
	for _, vh := range env.Vaults {
		roots = append(roots, vh.Vault.Root)
	}
	loc := safefs.At(filepath.Dir(abs), roots...)
	f, err := loc.Root.OpenFile(loc.Name(filepath.Base(abs)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		if safefs.IsDenied(err) {
			return nil, err
		}
		return nil, errs.Wrap(err, errs.CodeInvalidInput, "cannot open the events log "+name).With("path", name)
	}
	var mu sync.Mutex
	enc := json.NewEncoder(f)
	unsub := env.SubscribeEvents(func(ev ops.Event) {
		if ev.Kind == ops.EventSyncProgress || ev.Kind == ops.EventEmbedProgress {
			return // for live views, not a record of what happened
		}
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(ev)
	})
	return func() { unsub(); f.Close() }, nil
}
