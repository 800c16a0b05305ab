// Package watch keeps a vault's index fresh while loci serves it: an
// fsnotify watcher over every folder of the vault (new folders are added as
// they appear), debounced and batched into incremental syncs of the changed
// paths, with a full incremental sync when the OS drops events, when a
// folder appears, disappears or moves, when a batch is huge, and
// periodically (the reconcile scan) as a safety net.
//
// loci's own writes re-index at once (ops.Env.Sync from the write pipeline);
// when the watcher then sees the same files, the sync finds them unchanged by
// size and mtime (a stat per path, no read, no hash) and publishes nothing,
// so nothing loops.
package watch

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/text/unicode/norm"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/vault"
)

// Defaults.
const (
	DefaultDebounce  = 100 * time.Millisecond
	DefaultMaxWait   = 2 * time.Second
	DefaultReconcile = 5 * time.Minute
	DefaultMaxBatch  = 1000
	heartbeatEvery   = 5 * time.Second
	retryBusy        = time.Second
)

// Options tune a watcher. Zero values take the defaults.
type Options struct {
	// Debounce is how long the watcher waits after the last event before
	// syncing a batch (default 100 ms).
	Debounce time.Duration
	// MaxWait bounds how long a batch waits while events keep coming
	// (default 2 s).
	MaxWait time.Duration
	// Reconcile is the period of the full incremental sync that catches
	// anything the OS did not report (default 5 min; negative disables).
	Reconcile time.Duration
	// MaxBatch is the number of changed paths above which a batch becomes a
	// full sync (default 1000).
	MaxBatch int
	// NoInitialSync skips the full sync at start.
	NoInitialSync bool
	// InitialDelay holds the initial sync back (see cli's startupSyncDelay).
	InitialDelay time.Duration
	Logger       *slog.Logger
	// Ready, when set, is closed once every folder is watched (tests).
	Ready chan<- struct{}
	// Batched, when set, gets a value (without blocking) after each batch
	// is synced and the state updated (tests).
	Batched chan<- struct{}
	// Recorded, when set, gets a value (without blocking) after each event
	// that joins a batch is recorded (tests).
	Recorded chan<- struct{}
}

// Run watches vh until ctx ends. It returns an error only when the watcher
// cannot start (the caller may fall back to periodic syncs).
func Run(ctx context.Context, env *ops.Env, vh *ops.VaultHandle, opt Options) error {
	if opt.Debounce <= 0 {
		opt.Debounce = DefaultDebounce
	}
	if opt.MaxWait <= 0 {
		opt.MaxWait = DefaultMaxWait
	}
	if opt.MaxWait < opt.Debounce {
		opt.MaxWait = opt.Debounce
	}
	if opt.Reconcile == 0 {
		opt.Reconcile = DefaultReconcile
	}
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = DefaultMaxBatch
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	fw, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		vh.UpdateWatchState(func(s *ops.WatchState) { s.State, s.LastError = "off", err.Error() })
		env.Emit(ops.Event{Kind: ops.EventWatcherError, Vault: vh.Name, Data: map[string]any{"error": err.Error()}})
		return errs.Wrap(err, errs.CodeInternal, "cannot start the file watcher")
	}
	w := &watcher{env: env, vh: vh, opt: opt, fw: fw, root: vh.Vault.Root, dirs: map[string]bool{}, pending: map[string]bool{}}
	defer fw.Close()
	vh.UpdateWatchState(func(s *ops.WatchState) {
		*s = ops.WatchState{State: "starting", DebounceMs: opt.Debounce.Milliseconds(), Heartbeat: time.Now().UTC()}
	})
	w.addTree(w.root)
	vh.UpdateWatchState(func(s *ops.WatchState) { s.State, s.Dirs = "watching", len(w.dirs) })
	env.Emit(ops.Event{Kind: ops.EventWatcherStarted, Vault: vh.Name, Data: map[string]any{"dirs": len(w.dirs), "debounce_ms": opt.Debounce.Milliseconds()}})
	if opt.Ready != nil {
		close(opt.Ready)
	}
	defer func() {
		vh.UpdateWatchState(func(s *ops.WatchState) { s.State, s.Queue = "stopped", 0 })
		env.Emit(ops.Event{Kind: ops.EventWatcherStopped, Vault: vh.Name})
	}()
	w.loop(ctx)
	return nil
}

type watcher struct {
	env  *ops.Env
	vh   *ops.VaultHandle
	opt  Options
	fw   *fsnotify.Watcher
	root string
	// dirs are the watched folders (absolute).
	dirs map[string]bool
	// pending are the changed vault-relative note paths of the next batch;
	// full asks for a whole-vault sync instead.
	pending map[string]bool
	full    bool
	first   time.Time // first event of the batch
	last    time.Time // last event of the batch
	// running is set while a batch syncs in its own goroutine; the loop
	// goes on reading events meanwhile (the next batch's debounce runs
	// while this one syncs), and due is set when the next batch's timer
	// fired during the run: it starts as soon as the run ends.
	running bool
	due     bool
}

// batchDone is what a batch's sync goroutine reports.
type batchDone struct {
	ok    bool     // false: the index was busy, retry
	paths []string // the batch (nil: a full sync)
}

func (w *watcher) rel(abs string) (string, bool) {
	r, err := filepath.Rel(w.root, abs)
	if err != nil || r == "." || strings.HasPrefix(r, "..") {
		return "", false
	}
	return norm.NFC.String(filepath.ToSlash(r)), true
}

// skipDir mirrors vault.Walk: hidden folders, the ignored ones and excluded ones.
func (w *watcher) skipDir(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return w.vh.Vault.Excluded(rel) || w.vh.Vault.Excluded(rel+"/")
}

// addTree watches dir and every folder below it.
func (w *watcher) addTree(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != dir {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != w.root {
			rel, ok := w.rel(p)
			if !ok || w.skipDir(rel) {
				return fs.SkipDir
			}
		}
		if w.dirs[p] {
			return nil
		}
		if err := w.fw.Add(p); err != nil {
			w.fail("cannot watch folder", p, err)
			return nil
		}
		w.dirs[p] = true
		return nil
	})
}

func (w *watcher) fail(msg, abs string, err error) {
	rel, _ := w.rel(abs)
	w.opt.Logger.Warn("watcher: "+msg, "vault", w.vh.Name, "path", rel, "error", err)
	w.vh.UpdateWatchState(func(s *ops.WatchState) { s.State, s.LastError = "degraded", msg+" "+rel+": "+err.Error() })
	w.env.Emit(ops.Event{Kind: ops.EventWatcherError, Vault: w.vh.Name, Path: rel, Data: map[string]any{"error": msg + ": " + err.Error()}})
}

func (w *watcher) loop(ctx context.Context) {
	var initial <-chan time.Time
	if !w.opt.NoInitialSync {
		initial = time.After(w.opt.InitialDelay)
	}
	var reconcile <-chan time.Time
	if w.opt.Reconcile > 0 {
		t := time.NewTicker(w.opt.Reconcile)
		defer t.Stop()
		reconcile = t.C
	}
	heartbeat := time.NewTicker(heartbeatEvery)
	defer heartbeat.Stop()
	flush := time.NewTimer(time.Hour)
	flush.Stop()
	defer flush.Stop()
	done := make(chan batchDone, 1)
	defer func() {
		if w.running {
			<-done // the batch's sync ends with ctx
		}
	}()
	schedule := func(now time.Time) {
		if w.first.IsZero() {
			w.first = now
		}
		w.last = now
		d := w.opt.Debounce
		if rest := w.first.Add(w.opt.MaxWait).Sub(now); rest < d {
			d = max(rest, 0)
		}
		flush.Reset(d)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-initial:
			initial = nil
			w.sync(ctx, nil, "initial")
		case <-reconcile:
			w.sync(ctx, nil, "reconcile")
		case now := <-heartbeat.C:
			w.vh.UpdateWatchState(func(s *ops.WatchState) { s.Heartbeat = now.UTC() })
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			if w.handle(ev) {
				now := time.Now()
				w.vh.UpdateWatchState(func(s *ops.WatchState) {
					s.LastEventAt, s.Queue = now.UTC(), len(w.pending)
					s.Events++
					if s.PendingSince.IsZero() && s.Queue > 0 {
						s.PendingSince = now.UTC()
					}
				})
				schedule(now)
				if w.opt.Recorded != nil {
					select {
					case w.opt.Recorded <- struct{}{}:
					default:
					}
				}
			}
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.full = true
				w.vh.UpdateWatchState(func(s *ops.WatchState) { s.Overflows++ })
				w.env.Emit(ops.Event{Kind: ops.EventWatcherOverflow, Vault: w.vh.Name, Data: map[string]any{"error": err.Error()}})
				schedule(time.Now())
				continue
			}
			w.fail("watch error", w.root, err)
		case <-flush.C:
			if w.running {
				w.due = true
				continue
			}
			w.flush(ctx, done)
		case r := <-done:
			w.running = false
			if w.finish(r) && ctx.Err() == nil {
				// The index was busy: try again shortly.
				flush.Reset(retryBusy)
			} else if w.due {
				w.due = false
				w.flush(ctx, done)
			}
		}
	}
}

// handle records one event; it reports whether a batch is now due.
func (w *watcher) handle(ev fsnotify.Event) bool {
	rel, ok := w.rel(ev.Name)
	if !ok {
		return false
	}
	dir := path.Dir(rel)
	if dir != "." && w.skipDir(dir) {
		return false
	}
	isNote := strings.EqualFold(path.Ext(rel), ".md")
	switch {
	case ev.Has(fsnotify.Create):
		if st, err := os.Lstat(ev.Name); err == nil && st.IsDir() {
			if w.skipDir(rel) {
				if !ignoredName(rel) && (w.vh.Vault.Excluded(rel) || w.vh.Vault.Excluded(rel+"/")) {
					// Excluded by configuration: say so (hidden folders stay silent).
					w.env.Emit(ops.Event{Kind: ops.EventWatcherExcluded, Vault: w.vh.Name, Path: rel + "/", Data: map[string]any{"op": ev.Op.String()}})
				}
				return false
			}
			// A folder created or moved in: its files gave no events.
			w.addTree(ev.Name)
			w.vh.UpdateWatchState(func(s *ops.WatchState) { s.Dirs = len(w.dirs) })
			w.full = true
			return true
		}
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		if w.dirs[ev.Name] {
			// A folder deleted or moved out: its notes must go.
			for d := range w.dirs {
				if d == ev.Name || strings.HasPrefix(d, ev.Name+string(filepath.Separator)) {
					delete(w.dirs, d)
					_ = w.fw.Remove(d)
				}
			}
			w.vh.UpdateWatchState(func(s *ops.WatchState) { s.Dirs = len(w.dirs) })
			w.full = true
			return true
		}
	}
	if !isNote {
		return false // swap files, temp files, attachments
	}
	if w.vh.Vault.Excluded(rel) {
		if ignoredName(rel) {
			return false
		}
		w.env.Emit(ops.Event{Kind: ops.EventWatcherExcluded, Vault: w.vh.Name, Path: rel, Data: map[string]any{"op": ev.Op.String()}})
		return false
	}
	w.pending[rel] = true
	return true
}

// flush starts syncing the batch in a goroutine that reports on done; the
// batch leaves pending (events from now on make the next one).
func (w *watcher) flush(ctx context.Context, done chan<- batchDone) {
	if !w.full && len(w.pending) == 0 {
		return
	}
	var paths []string
	if !w.full && len(w.pending) <= w.opt.MaxBatch {
		paths = make([]string, 0, len(w.pending))
		for p := range w.pending {
			paths = append(paths, p)
		}
	}
	w.pending = map[string]bool{}
	w.full = false
	w.first, w.last = time.Time{}, time.Time{}
	w.running = true
	go func() { done <- batchDone{ok: w.sync(ctx, paths, "batch"), paths: paths} }()
}

// finish records a batch's end; it reports whether the batch must be
// retried (the index was busy: its paths are pending again).
func (w *watcher) finish(r batchDone) (retry bool) {
	if !r.ok {
		if r.paths == nil {
			w.full = true
		}
		for _, p := range r.paths {
			w.pending[p] = true
		}
		return true
	}
	now := time.Now().UTC()
	queue := len(w.pending)
	w.vh.UpdateWatchState(func(s *ops.WatchState) {
		s.Queue, s.LastBatchAt = queue, now
		if queue == 0 && !w.full {
			s.PendingSince = time.Time{}
		}
		s.Batches++
	})
	if w.opt.Batched != nil {
		select {
		case w.opt.Batched <- struct{}{}:
		default:
		}
	}
	return false
}

// sync runs one sync (paths nil: the whole vault); it reports whether the
// work is done (false: the index was busy, retry).
func (w *watcher) sync(ctx context.Context, paths []string, why string) bool {
	res, err := w.env.Sync(ctx, w.vh, index.SyncOptions{Paths: paths})
	log := w.opt.Logger
	switch {
	case ctx.Err() != nil:
		return true
	case errs.Code(err) == errs.CodeIndexBusy:
		log.Info("watcher: index busy (another loci process is writing it), will retry", "vault", w.vh.Name)
		return false
	case err != nil && paths != nil:
		// A path that cannot be synced alone (e.g. it became a folder):
		// fall back to the whole vault.
		log.Debug("watcher: batch failed, syncing the whole vault", "vault", w.vh.Name, "error", err)
		return w.sync(ctx, nil, why)
	case err != nil:
		w.fail("sync failed", w.root, err)
		return true
	}
	if why == "reconcile" {
		now := time.Now().UTC()
		w.vh.UpdateWatchState(func(s *ops.WatchState) { s.LastReconcile = now })
		w.env.Emit(ops.Event{Kind: ops.EventWatcherReconciled, Vault: w.vh.Name, Data: map[string]any{"indexed": res.Indexed, "removed": res.Removed}})
	}
	if res.Indexed > 0 || res.Removed > 0 || res.Failed > 0 {
		log.Info("index synced", "vault", w.vh.Name, "trigger", why, "indexed", res.Indexed, "unchanged", res.Unchanged,
			"removed", res.Removed, "failed", res.Failed, "duration", res.Duration.Round(time.Millisecond))
	} else {
		log.Debug("index up to date", "vault", w.vh.Name, "trigger", why, "duration", res.Duration.Round(time.Millisecond))
	}
	return true
}

// ignoredName reports whether rel is a hidden path or under one of
// vault.IgnoredDirs: those are skipped silently, unlike configured exclusions.
func ignoredName(rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	for _, d := range vault.IgnoredDirs {
		if strings.EqualFold(first, d) {
			return true
		}
	}
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}
