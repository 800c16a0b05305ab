package vault

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
)

func TestFormatRoundTrip(t *testing.T) {
	cases := []struct {
		name, in string
		want     Format
		text     string
	}{
		{"lf", "a\nb\n", Format{FinalNewline: true}, "a\nb\n"},
		{"no final newline", "a\nb", Format{}, "a\nb"},
		{"crlf", "a\r\nb\r\n", Format{CRLF: true, FinalNewline: true}, "a\nb\n"},
		{"bom crlf", "\uFEFFa\r\nb", Format{BOM: true, CRLF: true}, "a\nb"},
		{"bom", "\uFEFF# T\n", Format{BOM: true, FinalNewline: true}, "# T\n"},
		{"mixed stays raw", "a\r\nb\nc\r\n", Format{FinalNewline: true}, "a\r\nb\nc\r\n"},
		{"empty", "", Format{FinalNewline: true}, ""},
	}
	for _, c := range cases {
		f := DetectFormat([]byte(c.in))
		if f != c.want {
			t.Errorf("%s: DetectFormat = %+v, want %+v", c.name, f, c.want)
		}
		text := f.Decode([]byte(c.in))
		if text != c.text {
			t.Errorf("%s: Decode = %q, want %q", c.name, text, c.text)
		}
		if got := string(f.Encode(text)); got != c.in {
			t.Errorf("%s: Encode(Decode(x)) = %q, want %q", c.name, got, c.in)
		}
	}
	// New lines in an edited CRLF file get CRLF; the final newline stays as it was.
	f := DetectFormat([]byte("\uFEFFa\r\nb"))
	if got := string(f.Encode("a\nx\nb\n")); got != "\uFEFFa\r\nx\r\nb" {
		t.Errorf("Encode into a CRLF file without final newline: %q", got)
	}
	if err := CheckText("x.md", []byte("ok\xff")); errs.Code(err) != errs.CodeInvalidUTF8 {
		t.Errorf("invalid UTF-8 accepted: %v", err)
	}
	if err := CheckText("x.md", []byte("a\x00b")); errs.Code(err) != errs.CodeInvalidUTF8 {
		t.Errorf("NUL accepted: %v", err)
	}
}

func newTestWriter(t *testing.T, files map[string]string, opt WriterOptions) (*Writer, string) {
	t.Helper()
	root := t.TempDir()
	for rel, body := range files {
		writeFile(t, root, rel, body)
	}
	v, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(v, opt)
	if err != nil {
		t.Fatal(err)
	}
	return w, v.Root
}

func TestWriteAtomicKeepsModeAndAdvancesMtime(t *testing.T) {
	w, root := newTestWriter(t, map[string]string{"a.md": "old\n"}, WriterOptions{})
	p := filepath.Join(root, "a.md")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, future, future); err != nil {
		t.Fatal(err)
	}
	unlock, err := w.Lock(context.Background(), "a.md")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := w.Commit(context.Background(), &Change{Operation: "test", Ops: []FileOp{{Kind: OpPut, Path: "a.md", Data: []byte("new\n"), Guard: true, Etag: Etag([]byte("old\n"))}}})
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if !st.ModTime().After(future) {
		t.Errorf("mtime %v not after the old one %v (an incremental index would miss the write)", st.ModTime(), future)
	}
	if b, _ := os.ReadFile(p); string(b) != "new\n" {
		t.Errorf("content %q", b)
	}
	if rec.ID == "" || len(rec.Files) != 1 || rec.Files[0].OldEtag != Etag([]byte("old\n")) || rec.Files[0].NewEtag != Etag([]byte("new\n")) {
		t.Errorf("receipt %+v", rec)
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".loci-") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

func TestTargetPolicy(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, outside, "secret.md", "secret")
	w, root := newTestWriter(t, map[string]string{"ok.md": "x", "Private/p.md": "p", "dir/real.md": "r", "Public/a.md": "a"},
		WriterOptions{WritePaths: []string{"**/*.md"}, DenyPaths: []string{"Private/**"}})
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "escape.md")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	os.Symlink(outside, filepath.Join(root, "outdir"))
	os.Symlink(filepath.Join(root, "ok.md"), filepath.Join(root, "inner.md"))
	os.Symlink(filepath.Join(root, "dir"), filepath.Join(root, "linkdir"))
	for _, p := range []string{
		"../x.md", "/etc/passwd.md", "%2e%2e/x.md", `..\x.md`, ".obsidian/app.md", ".git/x.md", ".trash/x.md", ".loci/x.md",
		".hidden/x.md", "dir/.x.md", "notes.txt", "image.png", "noext", "escape.md", "outdir/secret.md", "inner.md", "linkdir/real.md",
		"Private/p.md", "node_modules/x.md", "dir", "ok.md/x.md",
	} {
		if _, err := w.Target(p); errs.Code(err) != errs.CodePathDenied {
			t.Errorf("Target(%q) = %v, want path_denied", p, err)
		}
	}
	for _, p := range []string{"ok.md", "new/deep/n.md", "dir/real.md", "Public/a.md", "Café.md"} {
		if _, err := w.Target(p); err != nil {
			t.Errorf("Target(%q) refused: %v", p, err)
		}
	}
	w2, _ := newTestWriter(t, nil, WriterOptions{WritePaths: []string{"Inbox/**"}})
	if _, err := w2.Target("Projects/x.md"); errs.Code(err) != errs.CodePathDenied {
		t.Errorf("outside write_paths: %v", err)
	}
	if _, err := w2.Target("Inbox/x.md"); err != nil {
		t.Errorf("inside write_paths: %v", err)
	}
	if _, err := NewWriter(w2.v, WriterOptions{DenyPaths: []string{"[bad"}}); errs.Code(err) != errs.CodeInvalidInput {
		t.Errorf("bad glob accepted: %v", err)
	}
}

func TestCommitJournalAuditAndRollback(t *testing.T) {
	w, root := newTestWriter(t, map[string]string{"a.md": "A\n", "b.md": "B\n", "blocker": "a file, not a folder"}, WriterOptions{})
	ctx := context.Background()
	// The second op fails (its folder is a file): the first is rolled back.
	_, err := w.Commit(ctx, &Change{Operation: "test", Ops: []FileOp{
		{Kind: OpPut, Path: "a.md", Data: []byte("A2\n")},
		{Kind: OpCreate, Path: "blocker/c.md", Data: []byte("C\n")},
	}})
	if err == nil {
		t.Fatal("commit into a file-as-folder succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.md")); string(b) != "A\n" {
		t.Errorf("a.md not restored: %q", b)
	}
	if es, _ := w.Journal(); len(es) != 0 {
		t.Errorf("a rolled-back change stays in the journal: %+v", es)
	}
	// Guards.
	_, err = w.Commit(ctx, &Change{Ops: []FileOp{{Kind: OpPut, Path: "a.md", Data: []byte("x"), Guard: true, Etag: Etag([]byte("other"))}}})
	if errs.Code(err) != errs.CodeEtagMismatch || errs.As(err).Details["current_etag"] != Etag([]byte("A\n")) {
		t.Errorf("guard: %v", err)
	}
	if _, err = w.Commit(ctx, &Change{Ops: []FileOp{{Kind: OpCreate, Path: "a.md", Data: []byte("x")}}}); errs.Code(err) != errs.CodeConflict {
		t.Errorf("create over an existing note: %v", err)
	}
	// A change of two files, one deleted to the trash.
	rec, err := w.Commit(ctx, &Change{Operation: "edit_note", Surface: "mcp", Session: "s1", IdempotencyKey: "k1", Ops: []FileOp{
		{Kind: OpPut, Path: "a.md", Data: []byte("A3\n")},
		{Kind: OpTrash, Path: "b.md"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".trash", "b.md")); string(b) != "B\n" {
		t.Errorf("trash copy: %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "b.md")); !os.IsNotExist(err) {
		t.Errorf("b.md still there")
	}
	e, err := w.JournalEntry(rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e.Session != "s1" || len(e.Files) != 2 || e.Files[1].TrashPath != ".trash/b.md" {
		t.Errorf("journal entry %+v", e)
	}
	for i, want := range []string{"A\n", "B\n"} {
		if b, err := w.JournalBlob(rec.ID, e.Files[i].Blob); err != nil || string(b) != want {
			t.Errorf("blob %d: %q %v", i, b, err)
		}
	}
	// A second delete of a same-named note takes the next free trash name.
	writeFile(t, root, "b.md", "B2\n")
	rec2, err := w.Commit(ctx, &Change{Ops: []FileOp{{Kind: OpTrash, Path: "b.md"}}})
	if err != nil || rec2.Files[0].TrashPath != ".trash/b 2.md" {
		t.Errorf("second trash: %+v %v", rec2, err)
	}
	// The audit log: one line per applied change, no contents.
	log, err := os.ReadFile(w.AuditPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 2 {
		t.Fatalf("audit lines: %d\n%s", len(lines), log)
	}
	var r WriteRecord
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		t.Fatal(err)
	}
	if r.Operation != "edit_note" || r.Surface != "mcp" || r.Session != "s1" || r.IdempotencyKey != "k1" || r.UndoID != rec.ID ||
		len(r.Changes) != 2 || r.Changes[0].OldEtag != Etag([]byte("A\n")) || r.Changes[0].NewEtag != Etag([]byte("A3\n")) {
		t.Errorf("audit record %+v", r)
	}
	for _, secret := range []string{"A3", `"A\n"`, "B2"} {
		if bytes.Contains(log, []byte(secret)) {
			t.Errorf("audit log holds note contents %q", secret)
		}
	}
	// A change that changes nothing is not journaled.
	rec3, err := w.Commit(ctx, &Change{Ops: []FileOp{{Kind: OpPut, Path: "a.md", Data: []byte("A3\n")}}})
	if err != nil || rec3.ID != "" {
		t.Errorf("no-op commit: %+v %v", rec3, err)
	}
}

func TestJournalBounds(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	w, _ := newTestWriter(t, map[string]string{"a.md": "0"}, WriterOptions{JournalMaxBytes: 4000, JournalMaxAge: 48 * time.Hour, Now: clock})
	ctx := context.Background()
	// Random-ish bytes do not compress: every entry is ~1 KB.
	big := func(i int) []byte {
		var b bytes.Buffer
		x := uint32(i*7919 + 1)
		for b.Len() < 1000 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			fmt.Fprintf(&b, "%08x", x)
		}
		return b.Bytes()
	}
	for i := 1; i <= 10; i++ {
		if _, err := w.Commit(ctx, &Change{Ops: []FileOp{{Kind: OpPut, Path: "a.md", Data: big(i)}}}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	w.PruneJournal()
	es, _ := w.Journal()
	var total int64
	for _, e := range es {
		total += e.Bytes
	}
	if len(es) == 0 || len(es) >= 10 || total > 4000 {
		t.Errorf("size bound: %d entries, %d bytes", len(es), total)
	}
	// Age: three days later only the newest entry stays.
	now = now.Add(72 * time.Hour)
	w.PruneJournal()
	es, _ = w.Journal()
	if len(es) != 1 {
		t.Errorf("age bound: %d entries left", len(es))
	}
}

// The cross-process lock: a helper process and this one increment a counter
// in a note with read-modify-write under the note's lock, with no etag
// guard. Without the lock increments would be lost.
func TestLockAcrossProcesses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("record locks are POSIX")
	}
	if testing.Short() {
		t.Skip("starts a helper process")
	}
	w, root := newTestWriter(t, map[string]string{"counter.md": "0"}, WriterOptions{})
	const n = 150
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), "LOCI_LOCK_HELPER="+root, "LOCI_LOCK_N="+strconv.Itoa(n))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Start incrementing once the helper runs, so that both really overlap.
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("helper did not start: %q", sc.Text())
	}
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Go(func() {
			for i := 0; i < n; i++ {
				if err := increment(w); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for sc.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "counter.md"))
	if got, want := string(b), strconv.Itoa(3*n); got != want {
		t.Errorf("counter = %s, want %s (increments were lost)", got, want)
	}
}

func increment(w *Writer) error {
	ctx := context.Background()
	unlock, err := w.Lock(ctx, "counter.md")
	if err != nil {
		return err
	}
	defer unlock()
	b, _, _, err := w.ReadState("counter.md")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("counter %q: %v", b, err)
	}
	_, err = w.Commit(ctx, &Change{Operation: "increment", Ops: []FileOp{{Kind: OpPut, Path: "counter.md", Data: []byte(strconv.Itoa(n + 1))}}})
	return err
}

func TestLockHelperProcess(t *testing.T) {
	root := os.Getenv("LOCI_LOCK_HELPER")
	if root == "" {
		t.Skip("helper process for TestLockAcrossProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("LOCI_LOCK_N"))
	v, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(v, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	for i := 0; i < n; i++ {
		if err := increment(w); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLockTimeout(t *testing.T) {
	w, _ := newTestWriter(t, nil, WriterOptions{LockTimeout: 50 * time.Millisecond})
	unlock, err := w.Lock(context.Background(), "a.md", "b.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Lock(context.Background(), "B.md"); errs.Code(err) != errs.CodeNoteLocked {
		t.Errorf("second lock of the same note (case-folded): %v", err)
	}
	other, err := w.Lock(context.Background(), "c.md")
	if err != nil {
		t.Errorf("another note must not wait: %v", err)
	} else {
		other()
	}
	unlock()
	again, err := w.Lock(context.Background(), "b.md")
	if err != nil {
		t.Fatal(err)
	}
	again()
}

func TestIdempotencyStore(t *testing.T) {
	w, _ := newTestWriter(t, nil, WriterOptions{})
	if r, err := w.IdempotencyLookup("k"); r != nil || err != nil {
		t.Fatalf("empty store: %v %v", r, err)
	}
	if err := w.IdempotencyStore(&IdempotencyRecord{Key: "k", Operation: "edit_note", InputHash: "h", Result: json.RawMessage(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	r, err := w.IdempotencyLookup("k")
	if err != nil || r == nil || r.Operation != "edit_note" || string(r.Result) != `{"a":1}` {
		t.Errorf("lookup: %+v %v", r, err)
	}
}

// TestNewNamesRefuseWindowsCharacters: a name a write creates may not hold
// < > : " | ? * (Windows and Obsidian refuse them; "a:b" names an NTFS
// stream of "a"); a note or folder that already has one stays writable.
func TestNewNamesRefuseWindowsCharacters(t *testing.T) {
	w, _ := newTestWriter(t, map[string]string{"Old: notes/a?.md": "a"}, WriterOptions{})
	for _, c := range []string{"<", ">", ":", `"`, "|", "?", "*"} {
		for _, p := range []string{"a" + c + "b.md", "Dir" + c + "/x.md", "Old: notes/new" + c + ".md"} {
			_, err := w.Target(p)
			if errs.Code(err) != errs.CodePathDenied || !strings.Contains(err.Error(), c) {
				t.Errorf("Target(%q) = %v, want path_denied naming %s", p, err, c)
			}
		}
	}
	for _, p := range []string{"Old: notes/a?.md", "Old: notes/b.md"} {
		if _, err := w.Target(p); err != nil {
			t.Errorf("Target(%q) refused: %v", p, err)
		}
	}
}
