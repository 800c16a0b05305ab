// Package index keeps the SQLite index of a vault: schema and migrations,
// incremental sync (stat → hash → parse → upsert, prune deleted), link
// resolution and the single-writer lock. It is a cache: deleting
// <vault>/.loci/ loses nothing that the notes do not hold.
package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"strings"

	"modernc.org/sqlite" // the "sqlite" driver (pure Go, FTS5 built in)

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/safefs"
	"github.com/loci-dev/loci/internal/vault"
)

// DBName is the index file inside the index directory.
const DBName = "index.db"

// dbFiles are the files SQLite keeps for the index, and the index's own
// files beside it.
var dbFiles = []string{DBName, DBName + "-wal", DBName + "-shm", DBName + "-journal", "index.lock", "vectors.cache"}

// Index is an open index for one vault.
type Index struct {
	Vault *vault.Vault
	Dir   string // index directory (default <vault>/.loci)
	DB    *sql.DB
	// Loc reaches Dir without following links (from the vault root when
	// Dir is inside the vault): every file loci writes there goes through it.
	Loc safefs.Loc

	writeMu sync.Mutex // serializes writers inside this process

	resMu  sync.Mutex // guards the cached resolver (see CachedResolver)
	res    *Resolver
	resKey string

	afterWalk func()          // test hook: runs between the walk and parsing
	atLinks   func()          // test hook: runs as the links start to be resolved
	atEmbed   func(*sql.Conn) // test hook: runs as a sync's own embedding pass starts, on its connection

	emb *embedState // embedding provider and in-memory vectors (vectors.go)
	bg  *embedJob   // the background embedder, when BackgroundEmbed was called (embedjob.go)
}

// Options configure Open.
type Options struct {
	// Dir overrides the index directory (default <vault>/.loci).
	Dir string
	// ReadOnly opens an existing index for queries only; a missing index is
	// an index_missing error rather than being created.
	ReadOnly bool
	// NoEmbed switches embeddings off for this handle (no embedding pass
	// in Sync, no semantic search), whatever the settings say.
	NoEmbed bool
	// Embedder overrides the provider resolved from the vault's settings
	// (config file embed section and LOCI_EMBED_*); EmbedSettings then
	// supplies on_mismatch and int8.
	Embedder      embed.Provider
	EmbedSettings embed.Settings
}

// DefaultDir returns the index directory for a vault root.
func DefaultDir(root string) string { return filepath.Join(root, ".loci") }

// Open opens (creating and migrating when needed) the index of v.
func Open(ctx context.Context, v *vault.Vault, opt Options) (*Index, error) {
	dir := opt.Dir
	if dir == "" {
		dir = DefaultDir(v.Root)
	}
	dir, _ = filepath.Abs(dir)
	loc := safefs.At(dir, v.Root)
	dbPath := filepath.Join(dir, DBName)
	if opt.ReadOnly {
		if _, err := loc.Root.Lstat(loc.Name(DBName)); err != nil {
			if safefs.IsDenied(err) {
				return nil, err
			}
			return nil, errs.New(errs.CodeIndexMissing, "no index at %s; run `loci index %s` first", dbPath, v.Root).With("index", dbPath)
		}
	} else if err := loc.MkdirAll(0o755); err != nil {
		if safefs.IsDenied(err) {
			return nil, err
		}
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot create index directory").With("dir", dir)
	}
	// SQLite opens these by path; none may be a link planted in the vault
	// (.loci/index.db-wal → ~/.bashrc would be written through).
	if err := loc.Check(dbFiles...); err != nil {
		return nil, err
	}
	// cache_size is per connection (8 MB; reads of the file go through
	// the 256 MB mmap): at 32 MB it was a third of a full build's peak
	// RSS (obsidian-hub 154–157 MB, 105–109 MB at 8 MB; docs/performance.md).
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_size_limit(67108864)", "journal_mode(WAL)", "synchronous(NORMAL)", "temp_store(MEMORY)", "cache_size(-8000)", "mmap_size(268435456)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+dbPath+"?"+q.Encode())
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "cannot open index")
	}
	// database/sql keeps 2 idle connections by default: under concurrent
	// searches (loci serve, 32 MCP sessions) every other query opened a
	// connection (7 pragmas, the schema parsed again, a cold page cache)
	// and closed it after, ~10% of the server's CPU. Idle connections are
	// kept for as many queries as are likely to run at once, and closed
	// after a minute unused.
	db.SetMaxIdleConns(idleConns)
	db.SetConnMaxIdleTime(time.Minute)
	ix := &Index{Vault: v, Dir: dir, DB: db, Loc: loc}
	ix.setupEmbed(opt)
	if err := ix.migrate(ctx, opt.ReadOnly); err != nil {
		db.Close()
		return nil, err
	}
	return ix, nil
}

// idleConns is the number of idle SQLite connections an Index keeps.
const idleConns = 32

// The hook is registered before any connection can be opened.
func init() { sqlite.RegisterConnectionHook(persistWAL) }

// persistWAL keeps an index's -wal and -shm files when its last connection
// closes (SQLITE_FCNTL_PERSIST_WAL): the WAL is checkpointed and truncated
// to nothing (journal_size_limit is set, which also caps it at 64 MB
// between checkpoints), the files stay. Deleting them made every process
// create both again, and creating two files on ext4 (its inode allocator
// steps over recently deleted inodes) was ~7% of a CLI search's CPU. The
// hook is the driver's, run for every SQLite connection of the process;
// it acts on index databases only.
func persistWAL(conn sqlite.ExecQuerierContext, dsn string) error {
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	if filepath.Base(path) != DBName {
		return nil
	}
	if fc, ok := conn.(sqlite.FileControl); ok {
		fc.FileControlPersistWAL("main", 1)
	}
	return nil
}

// Close stops the background embedder, if any, and closes the database.
func (ix *Index) Close() error {
	if ix.bg != nil {
		ix.bg.stop()
	}
	if ix.emb != nil {
		ix.emb.releaseMatrices()
	}
	return ix.DB.Close()
}

func (ix *Index) migrate(ctx context.Context, readOnly bool) error {
	var v int
	if err := ix.DB.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return errs.Wrap(err, errs.CodeInternal, "cannot read index schema version; the index file may be damaged, run `loci index --reset`")
	}
	if v > SchemaVersion {
		return errs.New(errs.CodeIndexSchema, "index schema v%d is newer than this loci (v%d); upgrade loci or run `loci index --reset`", v, SchemaVersion).
			With("index_version", v).With("supported_version", SchemaVersion)
	}
	if v == SchemaVersion {
		if readOnly {
			return nil
		}
		return ix.ensureIndexes(ctx)
	}
	if readOnly {
		return errs.New(errs.CodeIndexSchema, "index schema v%d needs migrating to v%d; run `loci index`", v, SchemaVersion)
	}
	conn, err := ix.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for ; v < SchemaVersion; v++ {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return errs.Wrap(err, errs.CodeIndexBusy, "cannot migrate index")
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			tx.Rollback()
			return errs.Wrap(err, errs.CodeInternal, fmt.Sprintf("index migration %d→%d failed", v, v+1))
		}
		if fill := migrationFill[v]; fill != nil {
			if err := fill(ctx, tx); err != nil {
				tx.Rollback()
				return errs.Wrap(err, errs.CodeInternal, fmt.Sprintf("index migration %d→%d failed", v, v+1))
			}
		}
		if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(v+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return ix.ensureIndexes(ctx)
}

func (ix *Index) ensureIndexes(ctx context.Context) error {
	for _, ddl := range secondaryIndexes {
		if _, err := ix.DB.ExecContext(ctx, ddl); err != nil {
			return errs.Wrap(err, errs.CodeInternal, "cannot create index")
		}
	}
	return nil
}

// Meta reads a value from the meta table ("" when absent).
func (ix *Index) Meta(ctx context.Context, key string) string {
	var s string
	err := ix.DB.QueryRowContext(ctx, "SELECT value FROM meta WHERE key=?", key).Scan(&s)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return ""
	}
	return s
}

// bumpContentRev advances the content revision; every transaction that
// changes notes or what hangs off them runs it before committing.
const bumpContentRev = `INSERT INTO meta(key,value) VALUES('content_rev','1')
	ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1`

// ContentRev is the index's content revision: it changes with every
// committed change to notes, their links, tags, properties, tasks or
// blocks (from this process or another), so a cache of anything derived
// from them can be keyed by it. "" before the first write.
func (ix *Index) ContentRev(ctx context.Context) string { return ix.Meta(ctx, "content_rev") }

// Interrupted reports whether the last sync that changed the index did not
// finish (killed, crashed, cancelled): notes may lack their links until
// the next sync, which finishes it.
func (ix *Index) Interrupted(ctx context.Context) bool {
	return ix.Meta(ctx, metaIncomplete) != ""
}

// metaIncomplete is set in the first transaction of a sync that changes
// the index (to "reset" by a reset, else "sync") and cleared in its last;
// a sync that finds it set finishes the interrupted run (see Sync).
const metaIncomplete = "sync_incomplete"

func metaValue(ctx context.Context, q queryer, key string) string {
	var s string
	if err := q.QueryRowContext(ctx, "SELECT value FROM meta WHERE key=?", key).Scan(&s); err != nil {
		return ""
	}
	return s
}

func setMeta(ctx context.Context, tx *sql.Tx, kv map[string]string) error {
	for k, v := range kv {
		if _, err := tx.ExecContext(ctx, "INSERT INTO meta(key,value) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value", k, v); err != nil {
			return err
		}
	}
	return nil
}
