package index

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/loci-dev/loci/internal/vault"
)

// TestWALPersists: closing the index keeps its -wal and -shm files (the
// next process need not create them), with the WAL checkpointed into the
// database and truncated to nothing; the notes written are all there when
// the index is opened again.
func TestWALPersists(t *testing.T) {
	root := t.TempDir()
	for i, name := range []string{"a.md", "b.md", "c.md"} {
		os.WriteFile(filepath.Join(root, name), []byte("# Note "+name+"\n\nbody text "+string(rune('x'+i))+"\n"), 0o644)
	}
	open := func() *Index {
		v, err := vault.Open(root, nil)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := Open(context.Background(), v, Options{NoEmbed: true})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	ix := open()
	if _, err := ix.Sync(context.Background(), SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	dir := filepath.Join(root, ".loci")
	wal, err := os.Stat(filepath.Join(dir, DBName+"-wal"))
	if err != nil || wal.Size() != 0 {
		t.Fatalf("after close: -wal %v, size %v; want it kept and empty", err, wal)
	}
	if _, err := os.Stat(filepath.Join(dir, DBName+"-shm")); err != nil {
		t.Fatalf("after close: -shm %v; want it kept", err)
	}
	ix = open()
	defer ix.Close()
	if n := count(t, ix, "SELECT COUNT(*) FROM notes"); n != 3 {
		t.Fatalf("reopened: %d notes, want 3", n)
	}
}

// TestBulkBuildEmbedsWithCheckpoints: a bulk build turns automatic
// checkpoints off for its own writes; the embedding pass that follows on
// the same connection must have them back, or its WAL grows without
// bound (2.4 GB at 80,000 notes; a 200,000-note build filled the disk).
func TestBulkBuildEmbedsWithCheckpoints(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 1000; i++ { // a bulk build needs 1,000 notes to write
		os.WriteFile(filepath.Join(root, fmt.Sprintf("n%04d.md", i)), []byte(fmt.Sprintf("# Note %d\n\nheron marsh reed %d\n", i, i)), 0o644)
	}
	v, err := vault.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Open(context.Background(), v, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var during []int
	ix.atEmbed = func(conn *sql.Conn) {
		var n int
		if err := conn.QueryRowContext(context.Background(), "PRAGMA wal_autocheckpoint").Scan(&n); err != nil {
			t.Error(err)
		}
		during = append(during, n)
	}
	res, err := ix.Sync(context.Background(), SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Indexed != 1000 || res.Embed == nil {
		t.Fatalf("indexed %d, embed %+v: want a bulk build of 1,000 notes with its embedding pass", res.Indexed, res.Embed)
	}
	if len(during) != 1 || during[0] != 1000 {
		t.Fatalf("wal_autocheckpoint during the embedding pass: %v, want [1000]", during)
	}
}
