package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/server"
)

// TestServeEventsAndWatcher: `loci serve` watches the vault; a note written
// on disk reaches a real HTTP client on GET /v1/events as note.created, and
// the note is searchable; index_status reports the watcher.
func TestServeEventsAndWatcher(t *testing.T) {
	t.Setenv(server.EnvToken, "")
	v := demoCopy(t)
	var stdout, stderr bytes.Buffer
	g := &globals{vault: ".", format: "text", stdout: &stdout, stderr: &stderr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logPath := filepath.Join(t.TempDir(), "events.ndjson")
	s, err := g.startServe(ctx, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn",
		fresh: freshOptions{debounce: 20 * time.Millisecond, eventsLog: logPath}})
	if err != nil {
		t.Fatal(err)
	}
	watching := make(chan struct{}, 1)
	unsub := s.env.SubscribeEvents(func(ev ops.Event) {
		if ev.Kind == ops.EventWatcherStarted {
			select {
			case watching <- struct{}{}:
			default:
			}
		}
	})
	defer unsub()
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	select {
	case <-watching:
	case <-time.After(20 * time.Second):
		t.Fatal("watcher did not start")
	}
	base := s.srv.URL()

	// Unauthenticated: 401.
	resp, err := http.Get(base + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("events without token: %d", resp.StatusCode)
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/events?kinds=note", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	type rec struct{ kind, data string }
	recs := make(chan rec, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		var r rec
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				r.kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				r.data = strings.TrimPrefix(line, "data: ")
			case line == "" && r.kind != "":
				recs <- r
				r = rec{}
			}
		}
		close(recs)
	}()
	// The stream's first comment came before any event: the subscription is live.
	// The note appears whole (written aside, then renamed in, as editors
	// save): os.WriteFile creates it empty first, and under load the
	// watcher could index that empty file and announce it before the text
	// lands, so the search below would race the second sync.
	tmp := filepath.Join(v, ".fresh.tmp")
	if err := os.WriteFile(tmp, []byte("# Fresh\n\nquokkaword\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v, "Fresh note.md")); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(20 * time.Second)
	for got := false; !got; {
		select {
		case r, ok := <-recs:
			if !ok {
				t.Fatal("stream ended")
			}
			if !strings.HasPrefix(r.kind, "note.") {
				t.Fatalf("filter let %q through", r.kind)
			}
			var ev ops.Event
			if err := json.Unmarshal([]byte(r.data), &ev); err != nil {
				t.Fatal(err)
			}
			got = r.kind == ops.EventNoteCreated && ev.Path == "Fresh note.md"
		case <-timeout:
			t.Fatal("no note.created event")
		}
	}
	// Searchable now, and the status shows the watcher.
	res := registry().Call(ctx, s.env, ops.Caller{Surface: "test"}, "search_notes", json.RawMessage(`{"query":"quokkaword"}`))
	if res.Err != nil || !strings.Contains(string(mustJSON(t, res.Output)), "Fresh note.md") {
		t.Fatalf("search: %v %s", res.Err, mustJSON(t, res.Output))
	}
	st := registry().Call(ctx, s.env, ops.Caller{Surface: "test"}, "index_status", json.RawMessage(`{}`))
	out := string(mustJSON(t, st.Output))
	// The note may be picked up by the watcher's incremental sync or by the
	// start-up full sync racing with the file's creation: either records a sync.
	if !strings.Contains(out, `"watcher":{"state":"watching"`) || !strings.Contains(out, `"last_sync_at"`) {
		t.Fatalf("status: %s", out)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	logged, _ := os.ReadFile(logPath)
	if !strings.Contains(string(logged), `"kind":"note.created","time"`) || !strings.Contains(string(logged), `"kind":"watcher.started"`) {
		t.Fatalf("events log:\n%s", logged)
	}
	// Progress is for live views: the log records what happened.
	if strings.Contains(string(logged), "_progress") || !strings.Contains(string(logged), `"kind":"index.sync_finished"`) {
		t.Errorf("events log has progress events or misses sync_finished:\n%s", logged)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
