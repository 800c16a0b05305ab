package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// harness is a vault under a running watcher, with the bus's events on a
// channel. Tests wait on that channel (bounded by a guard timeout), never
// on sleeps.
type harness struct {
	t      *testing.T
	root   string
	env    *ops.Env
	vh     *ops.VaultHandle
	events chan ops.Event
	// batched gets a value after each batch (its state is then updated).
	batched chan struct{}
	done    chan struct{}
}

const guard = 20 * time.Second

func start(t *testing.T, files map[string]string) *harness {
	t.Helper()
	root := t.TempDir()
	for p, body := range files {
		write(t, root, p, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	vh, err := ops.OpenVault(ctx, root, t.TempDir(), []string{"private/**"}, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, root: root, env: env, vh: vh, events: make(chan ops.Event, 1<<16), batched: make(chan struct{}, 1), done: make(chan struct{})}
	unsub := env.SubscribeEvents(func(ev ops.Event) {
		select {
		case h.events <- ev:
		default:
		}
	})
	ready := make(chan struct{})
	go func() {
		defer close(h.done)
		Run(ctx, env, vh, Options{Debounce: 30 * time.Millisecond, NoInitialSync: true, Reconcile: -1, Ready: ready, Batched: h.batched})
	}()
	select {
	case <-ready:
	case <-time.After(guard):
		t.Fatal("watcher did not start")
	}
	t.Cleanup(func() {
		cancel()
		<-h.done
		unsub()
		env.Close()
	})
	return h
}

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) count(where string, args ...any) int {
	var n int
	if err := h.vh.Index.DB.QueryRow("SELECT COUNT(*) FROM notes WHERE "+where, args...).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) has(rel string) bool { return h.count("path=?", rel) == 1 }

// until waits, event by event, for cond to hold after a sync finished.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(guard)
	for {
		if cond() {
			return
		}
		select {
		case <-h.events:
		case <-h.batched:
		case <-deadline:
			st := h.vh.WatchState()
			h.t.Fatalf("timed out waiting for %s (watcher: %+v)", what, st)
		}
	}
}

func (h *harness) titleOf(rel string) string {
	var s string
	h.vh.Index.DB.QueryRow("SELECT title FROM notes WHERE path=?", rel).Scan(&s)
	return s
}

func TestEditAndCreate(t *testing.T) {
	h := start(t, map[string]string{"a.md": "# A\n"})
	write(t, h.root, "a.md", "# A2\n\nchanged\n")
	write(t, h.root, "b.md", "# B\n")
	h.until("edit and create", func() bool { return h.titleOf("a.md") == "A2" && h.has("b.md") })
	h.until("batch recorded", func() bool { return h.vh.WatchState().Batches > 0 })
	st := h.vh.WatchState()
	if st == nil || st.State != "watching" || st.Batches == 0 {
		t.Fatalf("watch state %+v", st)
	}
	// /metrics figures: events counted, and the lag's start cleared with
	// the queue (both change under one lock).
	if st.Events < 2 || (st.Queue == 0) != st.PendingSince.IsZero() {
		t.Errorf("events %d, queue %d, pending since %v", st.Events, st.Queue, st.PendingSince)
	}
}

func TestRenameOverFile(t *testing.T) {
	h := start(t, map[string]string{"note.md": "# Old\n"})
	// The editor pattern: write a temp file, rename it over the note.
	write(t, h.root, ".note.md.tmp123", "# New\n")
	if err := os.Rename(filepath.Join(h.root, ".note.md.tmp123"), filepath.Join(h.root, "note.md")); err != nil {
		t.Fatal(err)
	}
	// vim: swap file and backup next to the note.
	write(t, h.root, ".note.md.swp", "swap")
	write(t, h.root, "note.md~", "backup")
	h.until("atomic replace indexed", func() bool { return h.titleOf("note.md") == "New" })
	if n := h.count("1=1"); n != 1 {
		t.Fatalf("%d notes, want 1 (temp or swap files indexed?)", n)
	}
}

func TestDeleteAndRecreate(t *testing.T) {
	h := start(t, map[string]string{"x.md": "# X1\n", "y.md": "# Y\n"})
	if err := os.Remove(filepath.Join(h.root, "y.md")); err != nil {
		t.Fatal(err)
	}
	h.until("delete", func() bool { return !h.has("y.md") })
	os.Remove(filepath.Join(h.root, "x.md"))
	write(t, h.root, "x.md", "# X2\n")
	h.until("recreate", func() bool { return h.titleOf("x.md") == "X2" })
}

func TestBulkCreate(t *testing.T) {
	h := start(t, nil)
	const n = 5000
	for i := range n {
		write(t, h.root, fmt.Sprintf("bulk/d%02d/n%04d.md", i%50, i), fmt.Sprintf("# Note %d\n", i))
	}
	h.until("5,000 notes", func() bool { return h.count("path LIKE 'bulk/%'") == n })
	if st := h.vh.WatchState(); st.Dirs < 51 {
		t.Fatalf("watched %d dirs, want the new folders too", st.Dirs)
	}
	// New folders are watched: an edit deep inside is picked up.
	write(t, h.root, "bulk/d07/n0007.md", "# Edited\n")
	h.until("edit in a new folder", func() bool { return h.titleOf("bulk/d07/n0007.md") == "Edited" })
}

func TestFolderMovedInAndDeleted(t *testing.T) {
	h := start(t, map[string]string{"keep.md": "# Keep\n"})
	outside := t.TempDir()
	write(t, outside, "proj/one.md", "# One\n")
	write(t, outside, "proj/sub/two.md", "# Two\n")
	if err := os.Rename(filepath.Join(outside, "proj"), filepath.Join(h.root, "proj")); err != nil {
		t.Fatal(err)
	}
	h.until("folder moved in", func() bool { return h.has("proj/one.md") && h.has("proj/sub/two.md") })
	write(t, h.root, "proj/sub/three.md", "# Three\n")
	h.until("file in moved-in folder", func() bool { return h.has("proj/sub/three.md") })
	if err := os.RemoveAll(filepath.Join(h.root, "proj")); err != nil {
		t.Fatal(err)
	}
	h.until("folder deleted", func() bool { return h.count("path LIKE 'proj/%'") == 0 })
	if !h.has("keep.md") {
		t.Fatal("keep.md lost")
	}
}

func TestIgnoredAndExcluded(t *testing.T) {
	h := start(t, nil)
	write(t, h.root, ".obsidian/workspace.md", "# ws\n")
	write(t, h.root, ".git/x.md", "# git\n")
	write(t, h.root, "private/secret.md", "# Secret\n")
	write(t, h.root, "public.md", "# Public\n")
	sawExcluded := false
	deadline := time.After(guard)
	for !(sawExcluded && h.has("public.md")) {
		select {
		case ev := <-h.events:
			if ev.Kind == ops.EventWatcherExcluded && strings.HasPrefix(ev.Path, "private/") {
				sawExcluded = true
			}
		case <-deadline:
			t.Fatalf("excluded event %v, public indexed %v", sawExcluded, h.has("public.md"))
		}
	}
	if n := h.count("path LIKE '.%' OR path LIKE 'private/%'"); n != 0 {
		t.Fatalf("%d ignored notes indexed", n)
	}
}

// TestOwnWritesDoNotLoop: a sync of paths the index already has at their
// size and mtime changes nothing and publishes no note event.
func TestOwnWritesDoNotLoop(t *testing.T) {
	h := start(t, map[string]string{"w.md": "# W\n"})
	write(t, h.root, "w.md", "# W2\n")
	// What the write pipeline does: re-index at once.
	if _, err := h.env.Sync(context.Background(), h.vh, index.SyncOptions{Paths: []string{"w.md"}}); err != nil {
		t.Fatal(err)
	}
	// Drain until the watcher's own batch for w.md has finished.
	notes := 0
	deadline := time.After(guard)
	count := func(ev ops.Event) {
		if strings.HasPrefix(ev.Kind, "note.") {
			notes++
		}
	}
	for batched := false; !batched; {
		select {
		case ev := <-h.events:
			count(ev)
		case <-h.batched:
			batched = true
		case <-deadline:
			t.Fatal("no watcher batch")
		}
	}
	// Everything the batch published is in the channel by now.
	for len(h.events) > 0 {
		count(<-h.events)
	}
	if notes != 1 {
		t.Fatalf("%d note events, want 1 (the write's own re-index only)", notes)
	}
}

// TestVimSave: vim's default save renames the note to a backup, writes a
// new file under the note's name (probing with a file named 4913 first) and
// deletes the backup; the note must stay indexed with the new text.
func TestVimSave(t *testing.T) {
	h := start(t, map[string]string{"v.md": "# V1\n"})
	p := filepath.Join(h.root, "v.md")
	write(t, h.root, "4913", "")
	os.Remove(filepath.Join(h.root, "4913"))
	if err := os.Rename(p, p+"~"); err != nil {
		t.Fatal(err)
	}
	write(t, h.root, "v.md", "# V2\n")
	os.Remove(p + "~")
	h.until("vim save", func() bool { return h.titleOf("v.md") == "V2" })
	if n := h.count("1=1"); n != 1 {
		t.Fatalf("%d notes, want 1", n)
	}
}

// TestFolderRenamedInside: a folder renamed within the vault moves its notes.
func TestFolderRenamedInside(t *testing.T) {
	h := start(t, map[string]string{"old/a.md": "# A\n", "old/deep/b.md": "# B\n"})
	if err := os.Rename(filepath.Join(h.root, "old"), filepath.Join(h.root, "new")); err != nil {
		t.Fatal(err)
	}
	h.until("folder renamed", func() bool {
		return h.has("new/a.md") && h.has("new/deep/b.md") && h.count("path LIKE 'old/%'") == 0
	})
	write(t, h.root, "new/deep/c.md", "# C\n")
	h.until("file in renamed folder", func() bool { return h.has("new/deep/c.md") })
}

// TestEventsReadDuringSync: the watcher goes on reading events while a
// batch syncs (a sync waits for the built-in embedder too, which once held
// every later edit back until it was done), and the batch those events
// make is synced right after. The first sync is held at its start by an
// event subscriber; the second edit must be recorded, queued, and indexed
// once the first sync is let go.
func TestEventsReadDuringSync(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.md", "# A\n")
	ctx, cancel := context.WithCancel(context.Background())
	vh, err := ops.OpenVault(ctx, root, t.TempDir(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	held := false
	unsub := env.SubscribeEvents(func(ev ops.Event) {
		if ev.Kind == ops.EventSyncStarted && !held {
			held = true // only the sync goroutine emits this: no race
			close(started)
			<-release
		}
	})
	ready, batched, recorded, done := make(chan struct{}), make(chan struct{}, 4), make(chan struct{}, 64), make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, env, vh, Options{Debounce: 10 * time.Millisecond, NoInitialSync: true, Reconcile: -1, Ready: ready, Batched: batched, Recorded: recorded})
	}()
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
		cancel()
		<-done
		unsub()
		env.Close()
	})
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(guard):
			t.Fatalf("timed out waiting for %s (watcher: %+v)", what, vh.WatchState())
		}
	}
	wait("the watcher", ready)
	write(t, root, "a.md", "# A2\n")
	wait("the first sync to start", started)
	for len(recorded) > 0 { // a.md's events
		<-recorded
	}
	write(t, root, "b.md", "# B\n")
	wait("b.md's event, read while the first sync runs", recorded)
	if st := vh.WatchState(); st.Queue != 1 || st.Batches != 0 {
		t.Fatalf("during the first sync: queue %d, batches %d; want b.md queued (1) and no batch done (0)", st.Queue, st.Batches)
	}
	close(release)
	released = true
	// b.md's later events (it gives several) may make a third batch.
	indexed := func() int {
		var n int
		if err := vh.Index.DB.QueryRow("SELECT COUNT(*) FROM notes WHERE (path='a.md' AND title='A2') OR path='b.md'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.After(guard)
	for {
		st := vh.WatchState()
		if st.Batches >= 2 && st.Queue == 0 && st.PendingSince.IsZero() && indexed() == 2 {
			break
		}
		select {
		case <-batched:
		case <-deadline:
			t.Fatalf("timed out waiting for a.md and b.md to be indexed, nothing queued (watcher: %+v, indexed %d of 2)", st, indexed())
		}
	}
}
