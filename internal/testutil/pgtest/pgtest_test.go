package pgtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func connect(t *testing.T, ctx context.Context, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func TestFindBinDirOverride(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("LOCI_PG_BINDIR", empty)
	if _, err := FindBinDir(); !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("FindBinDir with an empty LOCI_PG_BINDIR: err = %v, want ErrNoBinaries", err)
	}
	// A directory with files of those names that are not executable is
	// not a PostgreSQL bin dir either.
	for _, n := range []string{"initdb", "postgres"} {
		if err := os.WriteFile(filepath.Join(empty, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := FindBinDir(); !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("FindBinDir with non-executable files: err = %v, want ErrNoBinaries", err)
	}
}

func TestMajorVersion(t *testing.T) {
	for in, want := range map[string]string{
		"postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)\n": "15",
		"postgres (PostgreSQL) 17.2\n":                         "17",
		"postgres (PostgreSQL) 16beta1":                        "16beta1",
		"garbage":                                              "",
		"":                                                     "",
	} {
		if got := majorVersion(in); got != want {
			t.Errorf("majorVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTable: a fresh database per test, a table, rows in and out, and the
// database really is separate from another test's.
func TestTable(t *testing.T) {
	c := Shared(t)
	t.Logf("PostgreSQL %s from %s, shared cluster started in %s", c.Version, c.BinDir, c.StartTime)
	ctx := ctxT(t)
	dsn1, dsn2 := c.NewDatabase(t), c.NewDatabase(t)
	if dsn1 == dsn2 {
		t.Fatalf("NewDatabase returned the same DSN twice: %s", dsn1)
	}
	a := connect(t, ctx, dsn1)
	if _, err := a.Exec(ctx, `CREATE TABLE notes (path text PRIMARY KEY, body text NOT NULL, tsv tsvector)`); err != nil {
		t.Fatal(err)
	}
	// tsvector literals built from loci's own tokens (title weight A, body
	// D), cast without any PostgreSQL parser or dictionary, as the design
	// note plans: CJK bigrams, a stemmed "run", and a token with a hyphen
	// that PostgreSQL's parser would split.
	if _, err := a.Exec(ctx, `INSERT INTO notes VALUES ($1, $2, $3::tsvector), ($4, $5, $6::tsvector)`,
		"a.md", "東京の天気", "'東京':1A '京の':2A 'の天':3A '天気':4A 'wi-fi':10D",
		"b.md", "Running late", "'run':1A 'late':2A 'weather':10D"); err != nil {
		t.Fatal(err)
	}
	match := func(q string) []string {
		t.Helper()
		rows, err := a.Query(ctx, `SELECT path FROM notes WHERE tsv @@ $1::tsquery ORDER BY path`, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		paths, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return paths
	}
	for q, want := range map[string]string{
		`'天気'`:               "a.md",
		`'東京' <-> '京の'`:      "a.md", // adjacent bigrams: a phrase
		`'東京' <-> 'の天'`:      "",     // not adjacent
		`'run' & 'late'`:     "b.md",
		`'run' <-> 'late'`:   "b.md",
		`'late' <-> 'run'`:   "",
		`'wea':*`:            "b.md", // prefix
		`'weather':A`:        "",     // body only, weight D
		`'late':A`:           "b.md",
		`'wi-fi'`:            "a.md", // kept whole
		`'wi'`:               "",
		`'run' | '天気'`:       "a.md,b.md",
		`'run' & !'weather'`: "",
		`'天気' & !'weather'`:  "a.md",
	} {
		if got := strings.Join(match(q), ","); got != want {
			t.Errorf("tsquery %s matched %q, want %q", q, got, want)
		}
	}
	// What the literal avoids: PostgreSQL's parser splits a hyphenated word.
	var parsed string
	if err := a.QueryRow(ctx, `SELECT to_tsvector('simple', 'wi-fi')::text`).Scan(&parsed); err != nil {
		t.Fatal(err)
	}
	if parsed != "'fi':3 'wi':2 'wi-fi':1" {
		t.Errorf("to_tsvector('simple','wi-fi') = %s; the design note's reason for literals changed", parsed)
	}
	var n int
	// The other database does not see the table.
	b := connect(t, ctx, dsn2)
	err := b.QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Fatalf("notes in the second database: err=%v, want undefined_table (42P01)", err)
	}
}

// TestNewDatabaseDropped: a test's database is gone after the test, even
// when the test left a connection to it open.
func TestNewDatabaseDropped(t *testing.T) {
	c := Shared(t)
	ctx := ctxT(t)
	var dsn string
	var leaked *pgx.Conn
	t.Run("inner", func(t *testing.T) {
		dsn = c.NewDatabase(t)
		var err error
		if leaked, err = pgx.Connect(ctx, dsn); err != nil {
			t.Fatal(err)
		}
	})
	defer leaked.Close(ctx)
	_, name, ok := strings.Cut(dsn, "dbname=")
	name, _, _ = strings.Cut(name, " ")
	if !ok || name == "" {
		t.Fatalf("no dbname in %q", dsn)
	}
	admin := connect(t, ctx, c.DSN(""))
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s still exists after its test", name)
	}
	if err := leaked.Ping(ctx); err == nil {
		t.Fatal("the leaked connection still works after its database was dropped")
	}
}

// TestListenNotify: what the change fan-out between replicas needs. A
// notification reaches a listener on another connection with its payload
// and the sender's backend pid; one sent in a rolled-back transaction is
// never delivered; those of a committed transaction arrive in order, at
// commit.
func TestListenNotify(t *testing.T) {
	c := Shared(t)
	ctx := ctxT(t)
	dsn := c.NewDatabase(t)
	listener := connect(t, ctx, dsn)
	sender := connect(t, ctx, dsn)
	if _, err := listener.Exec(ctx, `LISTEN loci_events`); err != nil {
		t.Fatal(err)
	}

	tx, err := sender.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify('loci_events', 'rolled-back')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err = sender.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{`{"op":"write","path":"a.md"}`, `{"op":"delete","path":"b.md"}`} {
		if _, err := tx.Exec(ctx, `SELECT pg_notify('loci_events', $1)`, p); err != nil {
			t.Fatal(err)
		}
	}
	// Another channel nobody listens to: not delivered to the listener.
	if _, err := tx.Exec(ctx, `NOTIFY other_channel, 'x'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"op":"write","path":"a.md"}`, `{"op":"delete","path":"b.md"}`}
	senderPID := sender.PgConn().PID()
	for i, w := range want {
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("notification %d: %v", i, err)
		}
		if n.Channel != "loci_events" || n.Payload != w || n.PID != senderPID {
			t.Fatalf("notification %d = {%s %q pid %d}, want {loci_events %q pid %d}", i, n.Channel, n.Payload, n.PID, w, senderPID)
		}
	}
	// Nothing else is pending: a marker sent now is the next one received
	// (the rolled-back payload and the other channel never arrive).
	if _, err := sender.Exec(ctx, `NOTIFY loci_events, 'marker'`); err != nil {
		t.Fatal(err)
	}
	n, err := listener.WaitForNotification(ctx)
	if err != nil || n.Payload != "marker" {
		t.Fatalf("after the committed ones: %+v, %v; want the marker", n, err)
	}
}

// TestAdvisoryLocks: what the sync leader and per-note write locks need.
// A session lock held by one session is refused to another (try, and a
// blocking wait with lock_timeout fails with lock_not_available); it passes
// on at unlock and when the holding session ends (a dead leader frees the
// lock); a transaction lock ends with its transaction.
func TestAdvisoryLocks(t *testing.T) {
	c := Shared(t)
	ctx := ctxT(t)
	dsn := c.NewDatabase(t)
	a := connect(t, ctx, dsn)
	b := connect(t, ctx, dsn)
	const leaderKey = 7_105_110 // any int8; the store would derive it from the vault id

	try := func(conn *pgx.Conn, sql string, args ...any) bool {
		t.Helper()
		var ok bool
		if err := conn.QueryRow(ctx, sql, args...).Scan(&ok); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return ok
	}
	if !try(a, `SELECT pg_try_advisory_lock($1)`, leaderKey) {
		t.Fatal("a: first try_advisory_lock refused")
	}
	if try(b, `SELECT pg_try_advisory_lock($1)`, leaderKey) {
		t.Fatal("b: got the lock a holds")
	}
	// Re-entrant for the holder (counted): a second lock needs a second unlock.
	if !try(a, `SELECT pg_try_advisory_lock($1)`, leaderKey) {
		t.Fatal("a: re-lock refused")
	}
	if _, err := b.Exec(ctx, `SET lock_timeout = '100ms'`); err != nil {
		t.Fatal(err)
	}
	_, err := b.Exec(ctx, `SELECT pg_advisory_lock($1)`, leaderKey)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("b: blocking lock while a holds it: err=%v, want lock_not_available (55P03)", err)
	}
	if !try(a, `SELECT pg_advisory_unlock($1)`, leaderKey) {
		t.Fatal("a: unlock 1 failed")
	}
	if try(b, `SELECT pg_try_advisory_lock($1)`, leaderKey) {
		t.Fatal("b: got the lock after one of a's two unlocks")
	}
	if !try(a, `SELECT pg_advisory_unlock($1)`, leaderKey) {
		t.Fatal("a: unlock 2 failed")
	}
	if !try(b, `SELECT pg_try_advisory_lock($1)`, leaderKey) {
		t.Fatal("b: lock refused after a released it")
	}

	// The holder's session ends without unlocking (a replica dies): the
	// lock is freed. b holds it now; end b and let a wait for it.
	if _, err := a.Exec(ctx, `SET lock_timeout = 0`); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, `SELECT pg_advisory_lock($1)`, leaderKey); err != nil {
		t.Fatalf("a: lock after b's session ended: %v", err)
	}

	// Transaction-scoped lock on a note key: held until commit.
	b = connect(t, ctx, dsn)
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const note = "Projects/plan.md"
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(1, hashtext($1))`, note); err != nil {
		t.Fatal(err)
	}
	if try(b, `SELECT pg_try_advisory_xact_lock(1, hashtext($1))`, note) {
		t.Fatal("b: got the note lock a's transaction holds")
	}
	if !try(b, `SELECT pg_try_advisory_xact_lock(1, hashtext($1))`, "Projects/other.md") {
		t.Fatal("b: lock on another note refused")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !try(b, `SELECT pg_try_advisory_xact_lock(1, hashtext($1))`, note) {
		t.Fatal("b: note lock refused after a's commit")
	}
}

// TestStartOwnCluster: Start gives a test its own cluster, distinct from the
// shared one, and stops it; Stop twice is harmless.
func TestStartOwnCluster(t *testing.T) {
	c := Start(t)
	t.Logf("own cluster started in %s", c.StartTime)
	s := Shared(t)
	if c.DataDir == s.DataDir || c.SocketDir == s.SocketDir {
		t.Fatalf("Start reused the shared cluster's directories: %s %s", c.DataDir, c.SocketDir)
	}
	ctx := ctxT(t)
	conn, err := pgx.Connect(ctx, c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if err := conn.QueryRow(ctx, `SHOW server_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if c.Version == "" || len(v) < len(c.Version) || v[:len(c.Version)] != c.Version {
		t.Fatalf("server_version %q does not start with the major version %q", v, c.Version)
	}
	_ = conn.Close(ctx)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(c.SocketDir); !os.IsNotExist(err) {
		t.Fatalf("socket dir %s still there after Stop (err=%v)", c.SocketDir, err)
	}
	if _, err := pgx.Connect(ctx, c.DSN("")); err == nil {
		t.Fatal("connected to a stopped cluster")
	}
}

// TestTemplateCache: the first cluster of a cache is made by initdb and
// fills the cache; the next one is copied from it and works; with the cache
// off, initdb runs every time.
func TestTemplateCache(t *testing.T) {
	t.Setenv("LOCI_PG_CACHE", t.TempDir())
	first := Start(t)
	second := Start(t)
	if first.FromTemplate || !second.FromTemplate {
		t.Fatalf("FromTemplate: first %v, second %v; want false, true", first.FromTemplate, second.FromTemplate)
	}
	t.Logf("initdb start %s, template start %s", first.StartTime, second.StartTime)
	ctx := ctxT(t)
	for _, c := range []*Cluster{first, second} {
		conn := connect(t, ctx, c.NewDatabase(t))
		if _, err := conn.Exec(ctx, `CREATE TABLE x (n int); INSERT INTO x VALUES (1)`); err != nil {
			t.Fatalf("cluster from template=%v: %v", c.FromTemplate, err)
		}
	}
	t.Setenv("LOCI_PG_CACHE", "off")
	if c := Start(t); c.FromTemplate {
		t.Fatal("LOCI_PG_CACHE=off: cluster copied from a template")
	}
}

func TestCopyTreeRefusesLinks(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "PG_VERSION"), []byte("15\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := copyTree(src, dst, nil); err == nil {
		t.Fatal("copyTree copied a symbolic link")
	}
	if _, err := os.Lstat(filepath.Join(dst, "link")); !os.IsNotExist(err) {
		t.Fatalf("link created in the copy: %v", err)
	}
}

// BenchmarkStart measures a cluster's start plus stop: by initdb (cache
// off) and by copying the template. Run with -count to alternate them.
func BenchmarkStart(b *testing.B) {
	cache := b.TempDir()
	for _, mode := range []string{"initdb", "template"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "initdb" {
				b.Setenv("LOCI_PG_CACHE", "off")
			} else {
				b.Setenv("LOCI_PG_CACHE", cache)
			}
			for b.Loop() {
				c := Start(b)
				if err := c.Stop(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
