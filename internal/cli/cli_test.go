package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/testutil"
)

func demoCopy(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "vault")
	testutil.CopyTree(t, testutil.DemoVault(), dst)
	return dst
}

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// serveForTest starts `loci serve` in-process on dirs as the command does
// (startServe, then run in the background) and stops it when the test ends:
// cancel, wait for run to return, unsubscribe. before runs between
// startServe and run, where the command prints its banner. synced is
// closed at the first index change: the background sync's first build
// (never, with noSync).
func serveForTest(t *testing.T, g *globals, dirs []string, o serveOptions, before ...func(*serving)) (s *serving, synced <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := g.startServe(ctx, dirs, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for _, f := range before {
		f(s)
	}
	first := make(chan struct{})
	var once sync.Once
	unsub := s.env.Subscribe(func(ops.Change) { once.Do(func() { close(first) }) })
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		unsub()
	})
	return s, first
}

func TestIndexThenQuery(t *testing.T) {
	v := demoCopy(t)
	out, errOut, code := run(t, "index", v)
	if code != 0 || !strings.Contains(out, "indexed 16, unchanged 0, removed 0, failed 0") {
		t.Fatalf("index: code %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "indexing: 16/16 notes (100%)") {
		t.Errorf("no plain progress lines on a non-terminal: %q", errOut)
	}
	out, _, _ = run(t, "index", v, "-q")
	if !strings.Contains(out, "indexed 0, unchanged 16") {
		t.Errorf("second index: %s", out)
	}

	out, errOut, code = run(t, "search", "spaced", "repetition", "--vault", v, "--format", "json", "--limit", "2")
	if code != 0 {
		t.Fatalf("search: %d %s", code, errOut)
	}
	var sr struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &sr); err != nil {
		t.Fatalf("search json: %v\n%s", err, out)
	}
	if len(sr.Results) != 2 || sr.Results[0]["path"] != "Ideas/Spaced repetition.md" {
		t.Fatalf("search results: %s", out)
	}
	for _, k := range []string{"path", "title", "heading_path", "line", "score", "snippet"} {
		if _, ok := sr.Results[0][k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
	out, _, code = run(t, "search", "note", "--vault", v, "--tag", "learning", "--path-glob", "Ideas/**")
	if code != 0 || !strings.Contains(out, "Ideas/") || strings.Contains(out, "Projects/") {
		t.Errorf("filtered search: %s", out)
	}

	out, _, code = run(t, "read", "Ideas/Zettelkasten.md", "--vault", v)
	if code != 0 || !strings.HasPrefix(out, "---\naliases: [slip box]") {
		t.Errorf("read: %d %q", code, out)
	}
	out, _, _ = run(t, "read", "Ideas/Spaced repetition.md", "--vault", v, "--heading", "Why it works")
	if !strings.HasPrefix(out, "## Why it works") || strings.Contains(out, "## Tools") {
		t.Errorf("read --heading: %q", out)
	}
	out, _, _ = run(t, "links", "Projects/Project Atlas.md", "--vault", v)
	for _, want := range []string{"backlinks (4)", "Ada Lovelace → People/Ada Lovelace.md  [owner]", "Meetings/2026-11-02 Atlas kickoff.md:8"} {
		if !strings.Contains(out, want) {
			t.Errorf("links output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = run(t, "tags", "--vault", v)
	if !strings.Contains(out, "#learning/memory") || !strings.Contains(out, "#知识") {
		t.Errorf("tags: %s", out)
	}
	out, _, _ = run(t, "status", "--vault", v, "--format", "json")
	var st map[string]any
	json.Unmarshal([]byte(out), &st)
	if st["notes"] != float64(16) || st["schema_version"] != float64(index.SchemaVersion) {
		t.Errorf("status: %s", out)
	}
	if fe, _ := st["frontmatter_errors"].([]any); len(fe) != 1 {
		t.Errorf("status frontmatter errors: %v", st["frontmatter_errors"])
	}
}

func TestExitCodes(t *testing.T) {
	v := demoCopy(t)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"read", "../etc/passwd", "--vault", v}, 4, "path_denied"},
		{[]string{"read", "/etc/passwd", "--vault", v}, 4, "path_denied"},
		{[]string{"read", ".obsidian/app.json", "--vault", v}, 4, "path_denied"},
		{[]string{"read", "Nope.md", "--vault", v}, 3, "note_not_found"},
		{[]string{"links", "Nope.md", "--vault", v}, 3, "note_not_found"},
		{[]string{"search", "x", "--vault", filepath.Join(v, "missing")}, 3, "vault_not_found"},
		{[]string{"search", "x", "--vault", v, "--format", "yaml"}, 2, "validation_failed"},
		{[]string{"search", "x", "--vault", v, "--limit", "1000"}, 2, "validation_failed"},
		{[]string{"search", "x", "--vault", v, "--path-glob", "[bad"}, 2, "validation_failed"},
		{[]string{"search", "--vault", v}, 2, "validation_failed"},
		{[]string{"search", "x", "--vault", v, "--no-such-flag"}, 2, "validation_failed"},
	}
	for _, c := range cases {
		_, errOut, code := run(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d (want %d), stderr %q", c.args, code, c.code, errOut)
		}
	}
	_, errOut, _ := run(t, "read", "Nope.md", "--vault", v, "--format", "json")
	var e struct {
		OK    bool `json:"ok"`
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.OK || e.Error.Code != "note_not_found" || e.Error.Details["path"] != "Nope.md" {
		t.Errorf("json error: %q (%v)", errOut, err)
	}
}

func TestIndexPathsAndReset(t *testing.T) {
	v := demoCopy(t)
	run(t, "index", v, "-q")
	os.WriteFile(filepath.Join(v, "Inbox", "New idea.md"), []byte("# New idea\n\nquasar lighthouse\n"), 0o644)
	out, _, code := run(t, "index", v, "--paths", "Inbox/New idea.md", "-q")
	if code != 0 || !strings.Contains(out, "indexed 1,") {
		t.Fatalf("--paths: %s", out)
	}
	out, _, _ = run(t, "search", "quasar", "--vault", v)
	if !strings.Contains(out, "Inbox/New idea.md") {
		t.Errorf("new note not found: %s", out)
	}
	out, _, _ = run(t, "index", v, "--reset", "-q")
	if !strings.Contains(out, "indexed 17, unchanged 0") {
		t.Errorf("--reset: %s", out)
	}
	out, _, code = run(t, "index", v, "--paths", "../x.md")
	if code != 4 {
		t.Errorf("--paths traversal: %d %s", code, out)
	}
}

// TestQuickStartBinary builds the real binary and runs the README's main
// command on a copy of the demo vault, as a new user would.
func TestQuickStartBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := testutil.LociBinary(t)
	v := demoCopy(t)
	cmd := exec.Command(bin, "search", "spaced repetition", "--vault", v)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("loci search: %v", err)
	}
	if !strings.HasPrefix(string(out), " 1. Spaced repetition") {
		t.Errorf("quick start output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(v, ".loci", "index.db")); err != nil {
		t.Errorf("index not created inside the vault: %v", err)
	}
}

// TestQueryFinishesInterruptedIndex: a query command on an index whose last
// run was killed after its notes were committed but before their links
// (what kill -9 during `loci index --reset` leaves) finishes that run first.
func TestQueryFinishesInterruptedIndex(t *testing.T) {
	v := demoCopy(t)
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Fatal(errOut)
	}
	db, err := sql.Open("sqlite", filepath.Join(v, ".loci", "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var links int
	db.QueryRow("SELECT COUNT(*) FROM links").Scan(&links)
	if _, err := db.Exec("DELETE FROM links; INSERT INTO meta(key,value) VALUES('sync_incomplete','reset')"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "links", "Ideas/Spaced repetition.md", "--vault", v)
	if code != 0 || !strings.Contains(errOut, "finishing an interrupted index run") {
		t.Fatalf("links: code %d\n%s\n%s", code, out, errOut)
	}
	var after int
	db.QueryRow("SELECT COUNT(*) FROM links").Scan(&after)
	if after != links || links == 0 {
		t.Fatalf("links after the query: %d, want %d", after, links)
	}
	if strings.TrimSpace(out) == "" {
		t.Errorf("links printed nothing")
	}
}

// TestQueryUpgradesOldIndex: a read on an index of the previous schema
// migrates it in place, says so (not "for the first time"), and answers
// from it; the v4 migration fills the notes' descriptions.
func TestQueryUpgradesOldIndex(t *testing.T) {
	v := demoCopy(t)
	if err := os.WriteFile(filepath.Join(v, "Described.md"), []byte("---\ndescription: a note that says what it is\n---\n# Described\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Fatal(errOut)
	}
	db, err := sql.Open("sqlite", filepath.Join(v, ".loci", "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var want int
	db.QueryRow("SELECT COUNT(*) FROM descriptions_fts").Scan(&want)
	// Back to schema v3: without the descriptions (v4) and the task fields (v5).
	var down strings.Builder
	for _, c := range []string{"marker", "due", "scheduled", "start", "done", "priority", "block_uuid"} {
		fmt.Fprintf(&down, "ALTER TABLE tasks DROP COLUMN %s; ", c)
	}
	if _, err := db.Exec(down.String() + "DROP TABLE descriptions_fts; PRAGMA user_version = 3"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "status", "--vault", v, "--format", "json")
	if code != 0 || !strings.Contains(errOut, "upgraded the index") || !strings.Contains(errOut, fmt.Sprintf("schema v%d", index.SchemaVersion)) || strings.Contains(errOut, "first time") {
		t.Fatalf("status: code %d\n%s\n%s", code, out, errOut)
	}
	var got int
	db.QueryRow("SELECT COUNT(*) FROM descriptions_fts").Scan(&got)
	if got != want || want == 0 {
		t.Errorf("descriptions after the upgrade: %d, want %d (> 0)", got, want)
	}
}
