package index

import (
	"context"
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
