package index

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// TestIdleConnectionsKept: concurrent searches (loci serve's sessions)
// each hold a connection; when they finish, the connections must stay
// open for the next ones instead of being closed (database/sql kept 2 by
// default, so a server opened and closed a connection for most queries).
// 16 connections are held at once, then released: none may be closed.
func TestIdleConnectionsKept(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.md"), []byte("# A\n\nalpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix := openTest(t, root)
	mustSync(t, ix, SyncOptions{})
	ctx := context.Background()
	const n = 16
	for round := range 2 {
		for _, c := range holdConns(t, ix, n) {
			var s string
			if err := c.QueryRowContext(ctx, "SELECT title FROM notes WHERE path='a.md'").Scan(&s); err != nil || s != "A" {
				t.Fatalf("query on a held connection: %q, %v", s, err)
			}
			c.Close() // back to the pool
		}
		st := ix.DB.Stats()
		if st.MaxIdleClosed != 0 || st.Idle < n {
			t.Fatalf("round %d: after %d connections were released, %d were closed as surplus and %d are idle; want 0 and ≥ %d", round, n, st.MaxIdleClosed, st.Idle, n)
		}
	}
}

// holdConns takes n connections from ix's pool at once.
func holdConns(t *testing.T, ix *Index, n int) []*sql.Conn {
	t.Helper()
	out := make([]*sql.Conn, 0, n)
	for range n {
		c, err := ix.DB.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}
