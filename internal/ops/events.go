package ops

import (
	"context"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/index"
)

// Change says which notes of a vault were added, updated or removed by a sync.
type Change struct {
	Vault string
	Paths []string
	// ListChanged is true when notes were added or removed (not only edited).
	ListChanged bool
}

// Event kinds published on the bus (GET /v1/events, the NDJSON events log).
const (
	EventNoteCreated       = "note.created"
	EventNoteUpdated       = "note.updated"
	EventNoteDeleted       = "note.deleted"
	EventNoteMoved         = "note.moved"
	EventSyncStarted       = "index.sync_started"
	EventSyncFinished      = "index.sync_finished"
	EventSyncFailed        = "index.sync_failed"
	EventSyncProgress      = "index.sync_progress"
	EventFileFailed        = "index.file_failed"
	EventEmbedFinished     = "index.embed_finished"
	EventEmbedFailed       = "index.embed_failed"
	EventEmbedProgress     = "index.embed_progress"
	EventWriteApplied      = "write.applied"
	EventWatcherStarted    = "watcher.started"
	EventWatcherStopped    = "watcher.stopped"
	EventWatcherError      = "watcher.error"
	EventWatcherOverflow   = "watcher.overflow"
	EventWatcherExcluded   = "watcher.path_excluded"
	EventWatcherReconciled = "watcher.reconciled"
)

// EventKinds lists every kind, for documentation and filters.
var EventKinds = []string{
	EventNoteCreated, EventNoteUpdated, EventNoteDeleted, EventNoteMoved,
	EventSyncStarted, EventSyncProgress, EventSyncFinished, EventSyncFailed, EventFileFailed, EventEmbedProgress, EventEmbedFinished, EventEmbedFailed,
	EventWriteApplied,
	EventWatcherStarted, EventWatcherStopped, EventWatcherError, EventWatcherOverflow, EventWatcherExcluded, EventWatcherReconciled,
	EventConfirmationPending, EventConfirmationDecided,
}

// Event is one typed event of the bus.
type Event struct {
	// ID increases by one per event within a process.
	ID   uint64    `json:"id"`
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// Vault is the vault's name, when the event is about one.
	Vault string `json:"vault,omitempty"`
	// Path is the vault-relative path the event is about, if any; From is
	// the old path of a move.
	Path string `json:"path,omitempty"`
	From string `json:"from,omitempty"`
	// Data holds kind-specific fields (counts, errors, undo ids, ...).
	Data map[string]any `json:"data,omitempty"`
}

// bus fans out index changes and typed events to surfaces (MCP resource
// notifications, GET /v1/events, the events log, the web UI).
type bus struct {
	mu     sync.Mutex
	subs   map[int]func(Change)
	evSubs map[int]func(Event)
	next   int
	seq    uint64
}

// Subscribe registers fn for every change; the returned func unsubscribes.
func (e *Env) Subscribe(fn func(Change)) func() {
	e.bus.mu.Lock()
	defer e.bus.mu.Unlock()
	if e.bus.subs == nil {
		e.bus.subs = map[int]func(Change){}
	}
	id := e.bus.next
	e.bus.next++
	e.bus.subs[id] = fn
	return func() {
		e.bus.mu.Lock()
		delete(e.bus.subs, id)
		e.bus.mu.Unlock()
	}
}

// SubscribeEvents registers fn for every typed event; the returned func
// unsubscribes. fn runs on the publisher's goroutine and must not block
// (queue the event and return).
func (e *Env) SubscribeEvents(fn func(Event)) func() {
	e.bus.mu.Lock()
	defer e.bus.mu.Unlock()
	if e.bus.evSubs == nil {
		e.bus.evSubs = map[int]func(Event){}
	}
	id := e.bus.next
	e.bus.next++
	e.bus.evSubs[id] = fn
	return func() {
		e.bus.mu.Lock()
		delete(e.bus.evSubs, id)
		e.bus.mu.Unlock()
	}
}

// Emit publishes a typed event, stamping its ID and time (if unset).
func (e *Env) Emit(ev Event) {
	e.bus.mu.Lock()
	e.bus.seq++
	ev.ID = e.bus.seq
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	subs := make([]func(Event), 0, len(e.bus.evSubs))
	for _, fn := range e.bus.evSubs {
		subs = append(subs, fn)
	}
	e.bus.mu.Unlock()
	for _, fn := range subs {
		fn(ev)
	}
}

func (e *Env) hasEventSubs() bool {
	e.bus.mu.Lock()
	defer e.bus.mu.Unlock()
	return len(e.bus.evSubs) > 0
}

func (e *Env) publish(c Change) {
	e.bus.mu.Lock()
	subs := make([]func(Change), 0, len(e.bus.subs))
	for _, fn := range e.bus.subs {
		subs = append(subs, fn)
	}
	e.bus.mu.Unlock()
	for _, fn := range subs {
		fn(c)
	}
}

// SyncState is what index_status reports about background syncing.
type SyncState struct {
	Running    bool      `json:"running" jsonschema:"a sync is running now"`
	LastError  string    `json:"last_error,omitempty" jsonschema:"error of the last sync, if it failed"`
	LastSyncAt time.Time `json:"last_sync_at,omitzero" jsonschema:"when the last sync ended (UTC)"`
	// LastFullSyncAt and LastIncrementalSyncAt split LastSyncAt by scope.
	LastFullSyncAt        time.Time `json:"last_full_sync_at,omitzero" jsonschema:"when the last whole-vault sync of this process ended (UTC)"`
	LastIncrementalSyncAt time.Time `json:"last_incremental_sync_at,omitzero" jsonschema:"when the last sync of changed paths only (watcher, writes) ended (UTC)"`
	// LastSyncDuration is how long the last successful sync took (/metrics).
	LastSyncDuration time.Duration `json:"-"`
}

// WatchState is what index_status reports about the file watcher.
type WatchState struct {
	State       string    `json:"state" jsonschema:"off, starting, watching, degraded (watching with errors) or stopped"`
	Heartbeat   time.Time `json:"heartbeat,omitzero" jsonschema:"last time the watcher loop reported alive (UTC)"`
	Dirs        int       `json:"dirs" jsonschema:"folders watched"`
	Queue       int       `json:"queue" jsonschema:"changed paths waiting for the next batch"`
	DebounceMs  int64     `json:"debounce_ms" jsonschema:"batching delay after the last change"`
	LastEventAt time.Time `json:"last_event_at,omitzero" jsonschema:"last file event seen (UTC)"`
	// PendingSince is when the oldest change still in the queue was seen.
	PendingSince  time.Time `json:"pending_since,omitzero" jsonschema:"when the oldest change still waiting to be indexed was seen (UTC); absent when none waits"`
	Events        int64     `json:"events" jsonschema:"file events acted on since start"`
	LastBatchAt   time.Time `json:"last_batch_at,omitzero" jsonschema:"last batch synced (UTC)"`
	LastReconcile time.Time `json:"last_reconcile_at,omitzero" jsonschema:"last periodic reconcile scan (UTC)"`
	Batches       int64     `json:"batches" jsonschema:"batches synced since start"`
	Overflows     int64     `json:"overflows" jsonschema:"times the OS dropped events (a full sync followed)"`
	LastError     string    `json:"last_error,omitempty" jsonschema:"last watcher error"`
}

// Sync brings one vault's index up to date and publishes what changed.
func (e *Env) Sync(ctx context.Context, vh *VaultHandle, opt index.SyncOptions) (*index.SyncResult, error) {
	full := len(opt.Paths) == 0
	if e.hasEventSubs() {
		e.Emit(Event{Kind: EventSyncStarted, Vault: vh.Name, Data: map[string]any{"full": full, "paths": len(opt.Paths)}})
	}
	vh.mu.Lock()
	vh.state.Running = true
	vh.mu.Unlock()
	vh.syncing.Add(1)
	if e.hasEventSubs() {
		opt.Progress = e.progressEvents(vh, EventSyncProgress, map[string]any{"full": full}, opt.Progress)
	}
	res, err := vh.Index.Sync(ctx, opt)
	vh.syncGen.Add(1)
	vh.syncing.Add(-1)
	vh.mu.Lock()
	vh.state.Running = false
	now := time.Now().UTC()
	vh.state.LastSyncAt = now
	vh.state.LastError = ""
	if err != nil {
		vh.state.LastError = err.Error()
	} else if full {
		vh.state.LastSyncDuration = res.Duration
		vh.state.LastFullSyncAt = now
	} else {
		vh.state.LastSyncDuration = res.Duration
		vh.state.LastIncrementalSyncAt = now
	}
	vh.mu.Unlock()
	if err == nil && len(res.Changed) > 0 {
		e.publish(Change{Vault: vh.Name, Paths: res.Changed, ListChanged: res.Removed > 0 || res.Added > 0})
	}
	if e.hasEventSubs() {
		e.emitSync(vh, full, res, err)
	}
	return res, err
}

// progressInterval is the least time between two progress events of one
// run (the first and the last, done == total, are always sent).
const progressInterval = 250 * time.Millisecond

// progressEvents returns a progress callback that publishes kind events
// (data: done, total, rate per second since the first call, elapsed_ms and
// the fields of extra), at most one per progressInterval, then calls next.
func (e *Env) progressEvents(vh *VaultHandle, kind string, extra map[string]any, next func(done, total int)) func(done, total int) {
	var start, last time.Time
	prev := -1
	return func(done, total int) {
		if next != nil {
			next(done, total)
		}
		if !e.hasEventSubs() {
			return
		}
		now := time.Now()
		if start.IsZero() || done < prev { // the first call, or a new run (the embedder's)
			start = now
		} else if done < total && now.Sub(last) < progressInterval {
			return
		}
		last, prev = now, done
		el := now.Sub(start)
		data := map[string]any{"done": done, "total": total, "elapsed_ms": el.Milliseconds()}
		if s := el.Seconds(); s > 0 {
			data["rate"] = float64(int(float64(done)/s*10+0.5)) / 10
		}
		for k, v := range extra {
			data[k] = v
		}
		e.Emit(Event{Kind: kind, Vault: vh.Name, Data: data})
	}
}

func (e *Env) emitSync(vh *VaultHandle, full bool, res *index.SyncResult, err error) {
	if err != nil {
		e.Emit(Event{Kind: EventSyncFailed, Vault: vh.Name, Data: map[string]any{"full": full, "error": err.Error()}})
		return
	}
	created := map[string]bool{}
	for _, p := range res.Created {
		created[p] = true
	}
	deleted := map[string]bool{}
	for _, p := range res.Deleted {
		deleted[p] = true
	}
	for _, p := range res.Changed {
		kind := EventNoteUpdated
		switch {
		case created[p]:
			kind = EventNoteCreated
		case deleted[p]:
			kind = EventNoteDeleted
		}
		e.Emit(Event{Kind: kind, Vault: vh.Name, Path: p})
	}
	for _, f := range res.Failures {
		e.Emit(Event{Kind: EventFileFailed, Vault: vh.Name, Path: f.Path, Data: map[string]any{"error": f.Error}})
	}
	e.Emit(Event{Kind: EventSyncFinished, Vault: vh.Name, Data: map[string]any{
		"full": full, "indexed": res.Indexed, "unchanged": res.Unchanged, "removed": res.Removed,
		"failed": res.Failed, "duration_ms": res.Duration.Milliseconds(),
	}})
}

// BackgroundEmbed gives vh's index a background embedder (servers: a sync
// commits the lexical index and returns; index.BackgroundEmbed) and
// publishes each of its runs that did something as index.embed_finished or
// index.embed_failed.
func (e *Env) BackgroundEmbed(vh *VaultHandle) {
	vh.Index.BackgroundEmbed()
	vh.Index.OnEmbedProgress(e.progressEvents(vh, EventEmbedProgress, nil, nil))
	vh.Index.OnEmbedRun(func(st index.EmbedJob, complete bool) {
		if !e.hasEventSubs() {
			return
		}
		if st.LastError != "" { // a run that succeeds clears it
			e.Emit(Event{Kind: EventEmbedFailed, Vault: vh.Name, Data: map[string]any{
				"error": st.LastError, "failures": st.Failures, "next_retry_at": st.NextRetryAt, "done": st.Done, "todo": st.Todo}})
			return
		}
		e.Emit(Event{Kind: EventEmbedFinished, Vault: vh.Name, Data: map[string]any{
			"done": st.Done, "todo": st.Todo, "rate": st.Rate, "complete": complete,
			"duration_ms": st.FinishedAt.Sub(st.StartedAt).Milliseconds()}})
	})
}

// State returns the vault's background sync state.
func (vh *VaultHandle) State() SyncState {
	vh.mu.Lock()
	defer vh.mu.Unlock()
	return vh.state
}

// WatchState returns the vault's watcher state (nil when no watcher runs).
func (vh *VaultHandle) WatchState() *WatchState {
	vh.mu.Lock()
	defer vh.mu.Unlock()
	if vh.watch == nil {
		return nil
	}
	w := *vh.watch
	return &w
}

// UpdateWatchState lets the watcher record its state under the handle's lock.
func (vh *VaultHandle) UpdateWatchState(fn func(*WatchState)) {
	vh.mu.Lock()
	defer vh.mu.Unlock()
	if vh.watch == nil {
		vh.watch = &WatchState{State: "starting"}
	}
	fn(vh.watch)
}

// EventAIInvocation is the event of every AI operation call (no prompts,
// no outputs: paths, counts, tokens, cost, duration).
const EventAIInvocation = "ai.invocation"
