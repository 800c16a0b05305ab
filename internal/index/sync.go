package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/markdown"
	"github.com/loci-dev/loci/internal/textseg"
	"github.com/loci-dev/loci/internal/vault"
)

// bulkGCPercent is the Go GC's target (GOGC) at the end of a bulk build
// (from the link resolution to the commit): the heap grows to live + 50%
// between collections instead of live + 100%.
var bulkGCPercent = 50

var bulkGCState struct {
	sync.Mutex
	n, old int // builds under way; the GC percent before the first
}

// bulkGC lowers the GC percent for a bulk build (process-wide: the first
// of concurrent builds sets it, the last restores it) and returns the
// function that restores it. A lower percent, or GOGC=off (a process
// run with a memory limit instead), is left as it is.
func bulkGC() func() {
	st := &bulkGCState
	st.Lock()
	defer st.Unlock()
	if st.n == 0 {
		st.old = debug.SetGCPercent(bulkGCPercent)
		if st.old < bulkGCPercent {
			debug.SetGCPercent(st.old)
		}
	}
	st.n++
	return func() {
		st.Lock()
		defer st.Unlock()
		if st.n--; st.n == 0 {
			debug.SetGCPercent(st.old)
		}
	}
}

// SyncOptions control one sync run.
type SyncOptions struct {
	// Paths limits the run to these vault-relative paths (added, changed or
	// deleted); empty means the whole vault.
	Paths []string
	// Reset drops everything and rebuilds from scratch.
	Reset bool
	// Wait blocks on another process's writer lock instead of failing fast.
	Wait bool
	// Progress, when set, is called from the writer goroutine as notes are
	// processed (done counts every file looked at).
	Progress func(done, total int)
	// Workers is the number of parse workers (default GOMAXPROCS).
	Workers int
	// NoEmbed skips the embedding pass of this run (chunks without a
	// vector are embedded by the next run that does not skip it).
	NoEmbed bool
	// EmbedProgress, when set, is called as texts are embedded.
	EmbedProgress func(done, total int)
}

// Failure is a file that could not be indexed, with the reason.
type Failure struct {
	Path  string `json:"path" jsonschema:"vault-relative path"`
	Error string `json:"error" jsonschema:"what went wrong"`
}

// SyncResult summarizes a run.
type SyncResult struct {
	Indexed   int           `json:"indexed"`
	Added     int           `json:"-"` // new notes among Indexed
	Unchanged int           `json:"unchanged"`
	Removed   int           `json:"removed"`
	Failed    int           `json:"failed"`
	Failures  []Failure     `json:"failures,omitempty"`
	Duration  time.Duration `json:"-"`
	Millis    int64         `json:"duration_ms"`
	// Changed lists the vault-relative paths added, updated or removed.
	Changed []string `json:"-"`
	// Created and Deleted are the paths of Changed that were added or
	// removed (the rest were updated).
	Created []string `json:"-"`
	Deleted []string `json:"-"`
	// Embed reports the embedding pass (nil when embeddings are off).
	Embed *EmbedStats `json:"embed,omitempty"`
	// Recovered is set when this run finished an earlier one that was
	// interrupted (killed, crashed, cancelled) after committing part of
	// its work: every note's links were rebuilt and re-resolved.
	Recovered bool `json:"recovered,omitempty"`
}

type existing struct {
	id    int64
	size  int64
	mtime int64
	hash  string
}

type job struct {
	file   vault.File
	prev   *existing
	relink bool // finishing an interrupted run: rebuild the links even if unchanged
	// reparse indexes the note again even if unchanged (a journal whose
	// graph's journal formats changed).
	reparse bool
}

type parsed struct {
	file   vault.File
	prev   *existing
	hash   string
	doc    *markdown.Doc
	lines  int
	words  int
	gone   bool  // vanished before it could be read
	err    error // could not be read
	sameAs bool  // content unchanged (only stat differed)
	relink bool  // sameAs, but its links must be rebuilt (doc is parsed)

	outline, journal bool // a Logseq page / journal
}

// Sync brings the index up to date with the files on disk.
func (ix *Index) Sync(ctx context.Context, opt SyncOptions) (*SyncResult, error) {
	res, err := ix.sync(ctx, opt)
	if err == nil && ix.bg != nil && ix.bg.inline() {
		// An in-process embedder (builtin, model2vec) is fast: the sync
		// returns once the job has embedded what it changed, so the next
		// search sees the vectors too, as without a background job.
		ix.bg.waitIdle(ctx)
	}
	return res, err
}

func (ix *Index) sync(ctx context.Context, opt SyncOptions) (*SyncResult, error) {
	start := time.Now()
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	lock, err := acquireWriter(ix.Loc, opt.Wait)
	if err != nil {
		return nil, err
	}
	defer lock.release()

	conn, err := ix.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()

	embedOn := ix.emb.provider != nil && !opt.NoEmbed
	// An embedder that cannot run (embedding_unavailable: a model2vec
	// provider without its model folder, say) does not stop the lexical
	// index: it is built, and the error is reported after it is committed
	// (or, with a background embedder, recorded there).
	embedDown := ix.emb.err != nil && errs.Code(ix.emb.err) == errs.CodeEmbedUnavailable
	if embedOn || (ix.emb.err != nil && !embedDown) {
		// Before anything is written: a model mismatch fails fast.
		if err := ix.checkIdentity(ctx, conn, opt.Reset); err != nil {
			return nil, err
		}
	}
	if opt.Reset {
		if err := resetAll(ctx, conn); err != nil {
			return nil, err
		}
		crashPoint("reset")
	}
	// A run that committed part of its work and then died (kill -9, power
	// cut, Ctrl-C) left sync_incomplete set: notes may be stored without
	// their links, or with links resolved against names that have changed
	// since. This run finishes it, whatever it was asked to do: a walk of
	// the whole vault that rebuilds every note's links and re-resolves them.
	heal := !opt.Reset && metaValue(ctx, conn, metaIncomplete) != ""
	paths := opt.Paths
	if heal {
		paths = nil
	}
	// Journals are titled by their graph's formats: when these changed
	// since the last full run, every journal is indexed again (a full walk).
	journals := ix.JournalFormats()
	rejournal := !opt.Reset && metaValue(ctx, conn, metaJournalFormats) != journals.Key
	if rejournal {
		paths = nil
	}

	known, err := loadExisting(ctx, conn)
	if err != nil {
		return nil, err
	}

	// 1. Decide what to look at.
	var files []vault.File
	var seen map[string]bool // only to find removed notes: none in a build from empty
	if len(known) > 0 {
		seen = make(map[string]bool, len(known))
	}
	var removed []string
	if len(paths) == 0 {
		err = ix.Vault.Walk(ctx, func(f vault.File) error {
			files = append(files, f)
			if seen != nil {
				seen[f.Rel] = true
			}
			return nil
		})
		if err != nil {
			return nil, errs.Wrap(err, errs.CodeInternal, "cannot walk the vault")
		}
		for p := range known {
			if !seen[p] {
				removed = append(removed, p)
			}
		}
	} else {
		for _, p := range paths {
			// A malformed path (absolute, '..', NUL, encoded traversal, an
			// ignored folder) is the caller's error. Anything else the note
			// rule refuses (a link out of the vault or to a hidden file, an
			// excluded path, a FIFO) is not a note, as in the walk: gone
			// from the index if it was in it, else skipped, and the other
			// paths are still synced.
			if _, err := vault.CleanRel(p); err != nil {
				return nil, err
			}
			rel, real, err := ix.Vault.Resolve(p)
			var st fs.FileInfo
			if err == nil {
				st, err = ix.Vault.FS().Lstat(real)
			}
			switch {
			case err == nil && st.Mode().IsRegular():
				files = append(files, vault.File{Rel: rel, Size: st.Size(), ModTime: st.ModTime().UnixNano()})
			case err == nil && st.IsDir():
				return nil, errs.New(errs.CodeInvalidInput, "--paths takes files, %q is a folder", rel)
			default:
				if _, ok := known[rel]; ok {
					removed = append(removed, rel)
				}
			}
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Rel < files[j].Rel })
	if ix.afterWalk != nil {
		ix.afterWalk()
	}
	sort.Strings(removed)

	res := &SyncResult{Recovered: heal}
	var jobs []job
	for _, f := range files {
		if e, ok := known[f.Rel]; ok {
			reparse := false
			if rejournal {
				_, reparse = ix.Vault.LogseqFile(f.Rel)
			}
			if e.size == f.Size && e.mtime == f.ModTime && !heal && !reparse {
				res.Unchanged++
				continue
			}
			e := e
			jobs = append(jobs, job{file: f, prev: &e, relink: heal, reparse: reparse})
		} else {
			jobs = append(jobs, job{file: f})
		}
	}
	total := len(files)
	files, seen = nil, nil // the jobs hold what is left to do
	done := res.Unchanged
	if opt.Progress != nil {
		opt.Progress(done, total)
	}

	// A bulk build from empty drops the secondary indexes and creates them
	// once at the end (see secondaryIndexes).
	bulk := len(known) == 0 && len(jobs) >= 1000
	if bulk {
		if _, err := conn.ExecContext(ctx, "PRAGMA wal_autocheckpoint=0"); err == nil {
			defer conn.ExecContext(context.Background(), "PRAGMA wal_autocheckpoint=1000")
		}
		// The secondary indexes are sorted into being at the end of the
		// build: with temp_store=MEMORY the sorter's spill files are memory,
		// as large as the index (at 300,000 notes the process grew from
		// 1.4 to 2.3 GB there). On disk, the sort stays within cache_size.
		if _, err := conn.ExecContext(ctx, "PRAGMA temp_store=FILE"); err == nil {
			defer conn.ExecContext(context.Background(), "PRAGMA temp_store=MEMORY")
		}
	}

	// 2. Parse in parallel, write from this goroutine.
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	in := make(chan job)
	out := make(chan parsed, 64)
	var wg sync.WaitGroup
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range in {
				select {
				case out <- ix.parseOne(j, journals.Of(j.file.Rel)):
				case <-pctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(in)
		for _, j := range jobs {
			select {
			case in <- j:
			case <-pctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()

	allAnchors := heal || opt.Reset || len(known) == 0
	w := &writer{ctx: ctx, conn: conn, now: time.Now().UnixNano(), allAnchors: allAnchors}
	if err := conn.QueryRowContext(ctx, "SELECT COALESCE((SELECT MAX(id) FROM notes),0), COALESCE((SELECT MAX(id) FROM chunks),0)").Scan(&w.nextNote, &w.nextChunk); err != nil {
		return nil, err
	}
	if w.failed, err = loadFailed(ctx, conn); err != nil {
		return nil, err
	}
	if bulk {
		if err := w.ensureTx(); err != nil {
			return nil, err
		}
		for _, ddl := range secondaryIndexes {
			name := strings.Fields(strings.TrimPrefix(ddl, "CREATE INDEX IF NOT EXISTS "))[0]
			if _, err := w.tx.ExecContext(ctx, "DROP INDEX IF EXISTS "+name); err != nil {
				return nil, err
			}
		}
	}
	defer w.rollback()
	namesChanged := len(removed) > 0 || opt.Reset || heal
	for p := range out {
		if err := w.ensureTx(); err != nil {
			return nil, err
		}
		done++
		switch {
		case p.gone:
			if p.prev != nil {
				removed = append(removed, p.file.Rel)
				namesChanged = true
			}
		case p.err != nil:
			res.Failed++
			res.Failures = append(res.Failures, Failure{Path: p.file.Rel, Error: p.err.Error()})
			if err := w.recordFailure(p.file.Rel, p.err.Error()); err != nil {
				return nil, err
			}
		case p.sameAs:
			res.Unchanged++
			if err := w.touch(p.prev.id, p.file); err != nil {
				return nil, err
			}
			if p.relink {
				if err := w.relink(p.prev.id, p.doc.Links); err != nil {
					return nil, err
				}
				if err := w.retask(p.prev.id, p.doc.Tasks, p.doc.Fields); err != nil {
					return nil, err
				}
				crashPoint("relink")
			}
		default:
			id, nc, err := w.upsert(p)
			if err != nil {
				return nil, errs.Wrap(err, errs.CodeInternal, "cannot write note "+p.file.Rel)
			}
			namesChanged = namesChanged || nc
			_ = id
			crashPoint("notes")
			res.Indexed++
			if p.prev == nil {
				res.Added++
				res.Created = append(res.Created, p.file.Rel)
			}
			res.Changed = append(res.Changed, p.file.Rel)
		}
		if w.pending >= txRows {
			if err := w.commit(); err != nil {
				return nil, err
			}
			crashPoint("commit")
			if bulk {
				ix.checkpointBulk(ctx, conn)
			}
		}
		if opt.Progress != nil {
			opt.Progress(done, total)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := w.ensureTx(); err != nil {
		return nil, err
	}
	for _, rel := range removed {
		if e, ok := known[rel]; ok {
			if err := w.deleteNote(e.id); err != nil {
				return nil, err
			}
			res.Removed++
			res.Changed = append(res.Changed, rel)
			res.Deleted = append(res.Deleted, rel)
		}
		if _, err := w.tx.ExecContext(ctx, "DELETE FROM failures WHERE path=?", rel); err != nil {
			return nil, err
		}
	}
	crashPoint("before-links")
	if bulk {
		// The parse is over: its garbage goes, and the pages the Go heap
		// held at its peak go back to the system before the end of the
		// build (link resolution, anchor text, index creation), where
		// SQLite's file-backed pages make the process's peak; until the
		// build ends, the heap grows less between collections.
		defer bulkGC()()
		debug.FreeOSMemory()
	}
	if ix.atLinks != nil {
		ix.atLinks()
	}
	if res.Indexed > 0 || res.Removed > 0 || heal {
		if err := w.resolveLinks(ix.Vault.Kind, namesChanged, bulk); err != nil {
			return nil, errs.Wrap(err, errs.CodeInternal, "cannot resolve links")
		}
		crashPoint("before-anchors")
		profiles := w.anchorsDirty // their note vectors embed the anchor text
		if err := w.refreshAnchors(allAnchors); err != nil {
			return nil, errs.Wrap(err, errs.CodeInternal, "cannot index anchor text")
		}
		if err := w.staleProfiles(profiles, allAnchors); err != nil {
			return nil, err
		}
	}
	if bulk {
		if err := w.flushAll(); err != nil {
			return nil, err
		}
		crashPoint("before-indexes")
		for _, ddl := range secondaryIndexes {
			if _, err := w.tx.ExecContext(ctx, ddl); err != nil {
				return nil, err
			}
		}
	}
	nowS := strconv.FormatInt(time.Now().Unix(), 10)
	meta := map[string]string{"last_index_at": nowS, "vault_root": ix.Vault.Root, "vault_kind": string(ix.Vault.Kind)}
	if len(paths) == 0 {
		meta["last_full_index_at"] = nowS
		meta[metaJournalFormats] = journals.Key
	}
	if opt.Reset {
		meta["last_reset_at"] = nowS
	}
	if res.Indexed > 0 || res.Removed > 0 || opt.Reset {
		meta["embed_complete"] = "0" // the embedding pass below (or a later one) sets it
	}
	if err := setMeta(ctx, w.tx, meta); err != nil {
		return nil, err
	}
	// The run is complete once this transaction commits.
	if _, err := w.tx.ExecContext(ctx, "DELETE FROM meta WHERE key=?", metaIncomplete); err != nil {
		return nil, err
	}
	crashPoint("before-commit")
	if err := w.commit(); err != nil {
		return nil, err
	}
	crashPoint("before-embed")
	if bulk {
		// The bulk build ends with that commit. The embedding pass below
		// writes on the same connection: with automatic checkpoints still
		// off its WAL grew without bound (2.4 GB at 80,000 notes, a 200k
		// build filled the disk), so they are back on before it.
		conn.ExecContext(ctx, "PRAGMA wal_autocheckpoint=1000")
	}
	changed := res.Indexed > 0 || res.Removed > 0 || opt.Reset
	embedDown = embedDown && !opt.NoEmbed
	if bg := ix.bg; bg != nil && (embedOn || embedDown) {
		// A server: the lexical index is committed; the embedding runs
		// in the background job, which this sync wakes (embedjob.go).
		if embedDown {
			bg.unavailable(ix.emb.err)
		} else {
			bg.kick(changed, changed && len(paths) == 0)
		}
		id := embed.Identity{Provider: ix.emb.settings.Provider}
		if ix.emb.provider != nil {
			id = ix.emb.provider.Identity()
		}
		res.Embed = &EmbedStats{Provider: id.Provider, Model: id.Model, Dims: id.Dims, Background: true}
		embedOn = false
	} else if embedDown {
		res.finish(start)
		return res, ix.emb.err
	}
	if embedOn {
		// A sync that changed nothing skips the pass when the last one
		// left every section embedded (embed_complete, cleared by any
		// sync that writes notes).
		if changed || ix.Meta(ctx, "embed_complete") != "1" {
			if ix.atEmbed != nil {
				ix.atEmbed(conn)
			}
			if res.Embed, err = ix.embedPass(ctx, conn, changed, len(paths) == 0, passOptions{progress: opt.EmbedProgress}); err != nil {
				// The lexical index is committed: the result says what it
				// holds, the error why the vectors are not complete.
				res.finish(start)
				return res, err
			}
			conn.ExecContext(ctx, "INSERT INTO meta(key,value) VALUES('embed_complete','1') ON CONFLICT(key) DO UPDATE SET value='1'")
		} else {
			res.Embed = &EmbedStats{}
			id := ix.emb.provider.Identity()
			res.Embed.Provider, res.Embed.Model, res.Embed.Dims = id.Provider, id.Model, id.Dims
		}
	}
	if bulk {
		conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
	if res.Indexed+res.Removed > 500 {
		conn.ExecContext(ctx, "PRAGMA optimize")
	}
	res.finish(start)
	return res, nil
}

func (res *SyncResult) finish(start time.Time) {
	res.Duration = time.Since(start)
	res.Millis = res.Duration.Milliseconds()
}

// parseOne reads and parses one note; jf are the journal formats of its
// graph.
func (ix *Index) parseOne(j job, jf markdown.JournalFormats) parsed {
	p := parsed{file: j.file, prev: j.prev}
	// Read through the vault's one rule for notes: a file swapped for a
	// link (to .loci/token, outside the vault) or a FIFO since the walk
	// saw it is refused here, never read or blocked on.
	b, _, err := ix.Vault.ReadNote(j.file.Rel)
	if err != nil {
		if errs.Code(err) == errs.CodeNotFound || errors.Is(err, fs.ErrNotExist) {
			p.gone = true
		} else {
			p.err = err
		}
		return p
	}
	p.file.Size = int64(len(b))
	p.hash = vault.Etag(b)
	if j.prev != nil && j.prev.hash == p.hash && !j.reparse {
		p.sameAs = true
		if !j.relink {
			return p
		}
		p.relink = true
	}
	p.outline, p.journal = ix.Vault.LogseqFile(j.file.Rel)
	p.doc = markdown.Parse(b, markdown.Options{Path: j.file.Rel, Logseq: p.outline, Journal: p.journal, JournalFormats: jf})
	if p.relink {
		return p
	}
	p.lines = countLines(b)
	p.words = countWords(b)
	return p
}

func countLines(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	n := 1
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	if b[len(b)-1] == '\n' {
		n--
	}
	return n
}

func countWords(b []byte) int {
	n, in := 0, false
	for _, c := range b {
		sp := c == ' ' || c == '\n' || c == '\t' || c == '\r'
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}

func loadFailed(ctx context.Context, conn *sql.Conn) (map[string]bool, error) {
	rows, err := conn.QueryContext(ctx, "SELECT path FROM failures")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string]bool{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		m[p] = true
	}
	return m, rows.Err()
}

func loadExisting(ctx context.Context, conn *sql.Conn) (map[string]existing, error) {
	rows, err := conn.QueryContext(ctx, "SELECT id, path, size, mtime, hash FROM notes")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string]existing{}
	for rows.Next() {
		var e existing
		var p string
		if err := rows.Scan(&e.id, &p, &e.size, &e.mtime, &e.hash); err != nil {
			return nil, err
		}
		m[p] = e
	}
	return m, rows.Err()
}

// bulkWALLimit bounds the write-ahead log of a bulk build. A bulk build
// turns automatic checkpoints off (they would copy pages to the database
// file after every 1,000 pages written); without a bound the whole new
// index sits in the WAL until the end, so a 2.4 GB index needed 2.4 GB
// more disk for its WAL. Past the limit the build checkpoints between its
// transactions, and the log is reused from its start.
var bulkWALLimit int64 = 256 << 20

// checkpointBulk checkpoints when the WAL has grown past bulkWALLimit.
// Passive: it never waits for readers (a reader still on old frames just
// leaves those for the next checkpoint).
func (ix *Index) checkpointBulk(ctx context.Context, conn *sql.Conn) {
	fi, err := ix.Loc.Root.Lstat(ix.Loc.Name(DBName + "-wal"))
	if err != nil || fi.Size() <= bulkWALLimit {
		return
	}
	conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
}

func resetAll(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return errs.Wrap(err, errs.CodeIndexBusy, "cannot reset index")
	}
	defer tx.Rollback()
	stmts := []string{"DELETE FROM notes", "DELETE FROM failures", "INSERT INTO chunks_fts(chunks_fts) VALUES('delete-all')", "DELETE FROM anchors_fts", "DELETE FROM descriptions_fts"}
	for _, t := range childTables {
		stmts = append(stmts, "DELETE FROM "+t)
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	if err := setMeta(ctx, tx, map[string]string{metaIncomplete: "reset", "embed_complete": "0"}); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, bumpContentRev); err != nil {
		return err
	}
	return tx.Commit()
}

// writer batches upserts into transactions with prepared statements.
type writer struct {
	ctx     context.Context
	conn    *sql.Conn
	tx      *sql.Tx
	stmts   map[string]*sql.Stmt
	pending int
	now     int64
	// Ids are assigned here so rows can be inserted in multi-row batches.
	nextNote, nextChunk int64
	batches             map[string]*batch
	failed              map[string]bool // paths with a recorded failure
	linkSrcs            []int64         // notes whose links this run wrote, unresolved (see resolveLinks)
	allAnchors          bool            // the run rebuilds every note's anchor text: no need to track dirty notes
	marked              bool            // sync_incomplete is set in the open (or a committed) transaction
	touched             bool            // a note's size or mtime changed (not its bytes): file.mtime readers must see it
	// fts rows are written last in each transaction, one per statement: a
	// multi-row INSERT (into any table) opens a statement savepoint, and FTS5
	// flushes its in-memory segment at every savepoint once it has pending
	// rows, which multiplies segments and merge work (measured: ~2x slower).
	fts []ftsRow
	// anchorsDirty are the notes whose incoming links changed: their
	// anchor text is rebuilt at the end of the run (refreshAnchors).
	anchorsDirty map[int64]bool
}

type ftsRow struct {
	id   int64
	cols [4]string
}

var writerSQL = map[string]string{
	"note_ins": `INSERT INTO notes(id,path,path_key,stem_key,title,title_key,title_source,kind,size,mtime,hash,frontmatter,fm_keys,fm_error,aliases,headings,created,updated,words,lines,indexed_at)
		VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
	"note_upd":  `UPDATE notes SET path_key=?,stem_key=?,title=?,title_key=?,title_source=?,kind=?,size=?,mtime=?,hash=?,frontmatter=?,fm_keys=?,fm_error=?,aliases=?,headings=?,created=?,updated=?,words=?,lines=?,indexed_at=? WHERE id=?`,
	"note_old":  `SELECT title_key, aliases FROM notes WHERE id=?`,
	"touch":     `UPDATE notes SET size=?, mtime=? WHERE id=?`,
	"chunk":     `INSERT INTO chunks(id,note_id,seq,heading_path,start_line,end_line,text) VALUES(?,?,?,?,?,?,?)`,
	"fts":       `INSERT INTO chunks_fts(rowid,title,headings,body,tags) VALUES(?,?,?,?,?)`,
	"fts_del":   `DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE note_id=?)`,
	"desc_ins":  `INSERT INTO descriptions_fts(rowid, description) VALUES(?,?)`,
	"desc_del":  `DELETE FROM descriptions_fts WHERE rowid=?`,
	"link":      `INSERT INTO links(src_id,kind,target,heading,block_id,display,rel_key,line,attachment,dst_id,context) VALUES(?,?,?,?,?,?,?,?,?,?,?)`,
	"tag":       `INSERT INTO tags(note_id,tag,tag_key,line,source) VALUES(?,?,?,?,?)`,
	"alias":     `INSERT INTO aliases(note_id,alias,alias_key) VALUES(?,?,?)`,
	"prop":      `INSERT INTO props(note_id,key,value) VALUES(?,?,?)`,
	"field":     `INSERT INTO fields(note_id,key,key_norm,value,line) VALUES(?,?,?,?,?)`,
	"task":      `INSERT INTO tasks(note_id,line,status,text,marker,due,scheduled,start,done,priority,block_uuid) VALUES(?,?,?,?,?,?,?,?,?,?,?)`,
	"block":     `INSERT INTO blocks(note_id,seq,uuid,parent_seq,depth,line,end_line,content,properties) VALUES(?,?,?,?,?,?,?,?,?)`,
	"anchor":    `INSERT INTO block_anchors(note_id,anchor,line) VALUES(?,?,?)`,
	"fail":      `INSERT INTO failures(path,error,at) VALUES(?,?,?) ON CONFLICT(path) DO UPDATE SET error=excluded.error, at=excluded.at`,
	"fail_del":  `DELETE FROM failures WHERE path=?`,
	"note_del":  `DELETE FROM notes WHERE id=?`,
	"unresolve": `UPDATE links SET dst_id=NULL WHERE dst_id=?`,
}

func (w *writer) ensureTx() error {
	if w.tx != nil {
		return nil
	}
	tx, err := w.conn.BeginTx(w.ctx, nil)
	if err != nil {
		return errs.Wrap(err, errs.CodeIndexBusy, "cannot start an index transaction")
	}
	w.tx = tx
	w.stmts = map[string]*sql.Stmt{}
	return nil
}

func (w *writer) stmt(name string) *sql.Stmt {
	if s, ok := w.stmts[name]; ok {
		return s
	}
	s, err := w.tx.PrepareContext(w.ctx, writerSQL[name])
	if err != nil {
		panic(fmt.Sprintf("index: bad statement %s: %v", name, err)) // programming error, caught by tests
	}
	w.stmts[name] = s
	return s
}

func (w *writer) exec(name string, args ...any) (sql.Result, error) {
	return w.stmt(name).ExecContext(w.ctx, args...)
}

// batchRows is the number of rows per multi-row INSERT; one statement per
// row costs several microseconds of driver overhead, which dominates a bulk
// index otherwise.
const batchRows = 64

type batch struct {
	rows int
	args []any
}

// add queues one row for a multi-row INSERT of the named statement.
func (w *writer) add(name string, args ...any) error {
	if w.batches == nil {
		w.batches = map[string]*batch{}
	}
	b := w.batches[name]
	if b == nil {
		b = &batch{}
		w.batches[name] = b
	}
	b.args = append(b.args, args...)
	b.rows++
	if b.rows == batchRows {
		return w.flush(name, b)
	}
	return nil
}

func (w *writer) flush(name string, b *batch) error {
	if b.rows == 0 {
		return nil
	}
	key := name + "#" + strconv.Itoa(b.rows)
	st, ok := w.stmts[key]
	if !ok {
		q := writerSQL[name]
		i := strings.LastIndex(q, "VALUES")
		group := strings.TrimSpace(q[i+len("VALUES"):])
		var sb strings.Builder
		sb.WriteString(q[:i+len("VALUES")])
		for r := 0; r < b.rows; r++ {
			if r > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(group)
		}
		var err error
		if st, err = w.tx.PrepareContext(w.ctx, sb.String()); err != nil {
			return err
		}
		w.stmts[key] = st
	}
	_, err := st.ExecContext(w.ctx, b.args...)
	b.rows, b.args = 0, b.args[:0]
	return err
}

// flushAll writes every queued row, in an order that keeps references valid.
func (w *writer) flushAll() error {
	for _, name := range []string{"note_ins", "chunk", "tag", "alias", "prop", "task", "field", "block", "anchor", "link"} {
		if b := w.batches[name]; b != nil {
			if err := w.flush(name, b); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *writer) commit() error {
	if w.tx == nil {
		return nil
	}
	if err := w.flushAll(); err != nil {
		return err
	}
	for _, r := range w.fts {
		if _, err := w.exec("fts", r.id, r.cols[0], r.cols[1], r.cols[2], r.cols[3]); err != nil {
			return err
		}
	}
	w.fts = w.fts[:0]
	if w.marked || w.touched { // this run changed something: readers' caches must see it
		if _, err := w.tx.ExecContext(w.ctx, bumpContentRev); err != nil {
			return err
		}
	}
	for _, s := range w.stmts {
		s.Close()
	}
	err := w.tx.Commit()
	w.tx, w.stmts, w.pending, w.touched = nil, nil, 0, false
	return err
}

func (w *writer) rollback() {
	w.batches = nil
	w.fts = nil
	if w.tx != nil {
		for _, s := range w.stmts {
			s.Close()
		}
		w.tx.Rollback()
		w.tx = nil
	}
}

// markIncomplete records, in the transaction about to hold the run's first
// change, that the run has started: until the last transaction of the run
// clears it, a crash leaves the marker behind and the next sync finishes
// the work (see Sync). It also invalidates embed_complete, so an
// interrupted run's notes are embedded by the next sync.
func (w *writer) markIncomplete() error {
	if w.marked {
		return nil
	}
	if err := setMeta(w.ctx, w.tx, map[string]string{metaIncomplete: "sync", "embed_complete": "0"}); err != nil {
		return err
	}
	w.marked = true
	return nil
}

// relink replaces the stored links of an unchanged note with its parsed
// ones (inserted now, resolved by resolveLinks).
func (w *writer) relink(id int64, links []markdown.Link) error {
	if err := w.markIncomplete(); err != nil {
		return err
	}
	if err := w.dirtyTargets(id); err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(w.ctx, "DELETE FROM links WHERE src_id=?", id); err != nil {
		return err
	}
	if err := w.addLinks(id, links); err != nil {
		return err
	}
	w.pending++
	return nil
}

// addTasks inserts the tasks of note id.
func (w *writer) addTasks(id int64, tasks []markdown.Task) error {
	for _, t := range tasks {
		if err := w.add("task", id, t.Line, t.Status, t.Text, t.Marker, t.Due, t.Scheduled, t.Start, t.Done, t.Priority, t.Block); err != nil {
			return err
		}
	}
	return nil
}

// addFields inserts the inline fields of note id.
func (w *writer) addFields(id int64, fields []markdown.Field) error {
	for _, f := range fields {
		if err := w.add("field", id, f.Key, markdown.NormalizeFieldKey(f.Key), f.Value, f.Line); err != nil {
			return err
		}
	}
	return nil
}

// retask rewrites the tasks and inline fields of an unchanged note during
// a healing sync (an index migrated from before the task fields, or the
// inline fields, has them empty).
func (w *writer) retask(id int64, tasks []markdown.Task, fields []markdown.Field) error {
	for _, t := range []string{"tasks", "fields"} {
		if _, err := w.tx.ExecContext(w.ctx, "DELETE FROM "+t+" WHERE note_id=?", id); err != nil {
			return err
		}
	}
	if err := w.addTasks(id, tasks); err != nil {
		return err
	}
	return w.addFields(id, fields)
}

// addLinks queues the links of note id for insertion with the note's other
// rows. Their targets are resolved at the end of the run, against the
// final set of notes (resolveLinks), in the table: nothing of them stays in
// memory, which at 100,000 notes was ~1.8 KB a note. Until then a link's
// dst_id is NULL, except a link into its own note ([[#Heading]]), final now.
func (w *writer) addLinks(id int64, links []markdown.Link) error {
	if len(links) == 0 {
		return nil
	}
	for _, l := range links {
		var dst any
		att := 0
		if isAttachment(l) {
			att = 1
		} else if l.Kind != markdown.LinkBlockRef && strings.TrimSpace(l.Target) == "" {
			dst = id
			w.dirty(id)
		}
		if err := w.add("link", id, l.Kind, l.Target, nullStr(l.Heading), nullStr(l.BlockID), nullStr(l.Display), nullStr(l.Key), l.Line, att, dst, nullStr(l.Context)); err != nil {
			return err
		}
	}
	w.linkSrcs = append(w.linkSrcs, id)
	return nil
}

func (w *writer) touch(id int64, f vault.File) error {
	w.touched = true
	_, err := w.exec("touch", f.Size, f.ModTime, id)
	w.pending++
	return err
}

func (w *writer) recordFailure(rel, msg string) error {
	_, err := w.exec("fail", rel, msg, time.Now().Unix())
	return err
}

func (w *writer) deleteChildren(id int64) error {
	if _, err := w.exec("fts_del", id); err != nil {
		return err
	}
	if _, err := w.exec("desc_del", id); err != nil {
		return err
	}
	if err := w.dirtyTargets(id); err != nil {
		return err
	}
	for _, t := range childTables {
		if _, err := w.tx.ExecContext(w.ctx, "DELETE FROM "+t+" WHERE "+childKey(t)+"=?", id); err != nil {
			return err
		}
	}
	return nil
}

func childKey(table string) string {
	if table == "links" {
		return "src_id"
	}
	return "note_id"
}

func (w *writer) deleteNote(id int64) error {
	if err := w.markIncomplete(); err != nil {
		return err
	}
	if err := w.deleteChildren(id); err != nil {
		return err
	}
	if _, err := w.exec("unresolve", id); err != nil {
		return err
	}
	w.dirty(id) // its anchor text goes
	_, err := w.exec("note_del", id)
	w.pending++
	return err
}

// upsert writes one parsed note; namesChanged reports whether its title or
// aliases (what other notes' links resolve against) may have changed.
func (w *writer) upsert(p parsed) (int64, bool, error) {
	d := p.doc
	rel := p.file.Rel
	stem := strings.TrimSuffix(path.Base(rel), path.Ext(rel))
	pathKey := strings.ToLower(strings.TrimSuffix(rel, path.Ext(rel)))
	kind := "note"
	if p.outline {
		kind = "page"
		if p.journal {
			kind = "journal"
		}
	}
	fmJSON, keysJSON := "", ""
	if d.Frontmatter != nil {
		b, _ := json.Marshal(d.Frontmatter)
		fmJSON = string(b)
		k, _ := json.Marshal(d.FrontmatterKeys)
		keysJSON = string(k)
	}
	aliasJSON := ""
	if len(d.Aliases) > 0 {
		b, _ := json.Marshal(d.Aliases)
		aliasJSON = string(b)
	}
	headingsJSON := ""
	if len(d.Headings) > 0 {
		b, _ := json.Marshal(d.Headings)
		headingsJSON = string(b)
	}
	created := fmString(d.Frontmatter, "created", "date", "created_at")
	updated := fmString(d.Frontmatter, "updated", "modified", "updated_at", "last_modified")
	titleKey := strings.ToLower(d.Title)

	if err := w.markIncomplete(); err != nil {
		return 0, false, err
	}
	var id int64
	namesChanged := false
	if p.prev != nil {
		id = p.prev.id
		var oldTitle, oldAliases sql.NullString
		if err := w.stmt("note_old").QueryRowContext(w.ctx, id).Scan(&oldTitle, &oldAliases); err != nil {
			return 0, false, err
		}
		namesChanged = oldTitle.String != titleKey || oldAliases.String != aliasJSON
		if err := w.deleteChildren(id); err != nil {
			return 0, false, err
		}
		if _, err := w.exec("note_upd", pathKey, strings.ToLower(stem), d.Title, titleKey, d.TitleSource, kind, p.file.Size, p.file.ModTime, p.hash,
			nullStr(fmJSON), nullStr(keysJSON), nullStr(d.FrontmatterError), nullStr(aliasJSON), nullStr(headingsJSON), nullStr(created), nullStr(updated), p.words, p.lines, w.now, id); err != nil {
			return 0, false, err
		}
	} else {
		namesChanged = true
		w.nextNote++
		id = w.nextNote
		err := w.add("note_ins", id, rel, pathKey, strings.ToLower(stem), d.Title, titleKey, d.TitleSource, kind, p.file.Size, p.file.ModTime, p.hash,
			nullStr(fmJSON), nullStr(keysJSON), nullStr(d.FrontmatterError), nullStr(aliasJSON), nullStr(headingsJSON), nullStr(created), nullStr(updated), p.words, p.lines, w.now)
		if err != nil {
			return 0, false, err
		}
	}
	if w.failed[rel] {
		if _, err := w.exec("fail_del", rel); err != nil {
			return 0, false, err
		}
	}

	seenTag := map[string]bool{}
	for _, t := range d.Tags {
		k := strings.ToLower(t.Name)
		if k == "" || seenTag[k+"\x00"+t.Source+strconv.Itoa(t.Line)] {
			continue
		}
		seenTag[k+"\x00"+t.Source+strconv.Itoa(t.Line)] = true
		if err := w.add("tag", id, t.Name, k, t.Line, t.Source); err != nil {
			return 0, false, err
		}
	}
	chunks, rows := FTSRows(d)
	for i, c := range chunks {
		hp := "[]"
		if len(c.HeadingPath) > 0 {
			b, _ := json.Marshal(c.HeadingPath)
			hp = string(b)
		}
		w.nextChunk++
		cid := w.nextChunk
		if err := w.add("chunk", cid, id, i, hp, c.StartLine, c.EndLine, c.Text); err != nil {
			return 0, false, err
		}
		row := rows[i]
		w.fts = append(w.fts, ftsRow{cid, row})
	}
	if err := w.writeDescription(id, descriptionText(d)); err != nil {
		return 0, false, err
	}
	// Links go in now, unresolved; resolveLinks resolves them at the end of
	// the run against the final set of notes.
	if err := w.addLinks(id, d.Links); err != nil {
		return 0, false, err
	}
	for _, a := range d.Aliases {
		if err := w.add("alias", id, a, strings.ToLower(a)); err != nil {
			return 0, false, err
		}
	}
	for _, k := range d.FrontmatterKeys {
		for _, v := range flattenValue(d.Frontmatter[k]) {
			if err := w.add("prop", id, k, v); err != nil {
				return 0, false, err
			}
		}
	}
	if err := w.addTasks(id, d.Tasks); err != nil {
		return 0, false, err
	}
	if err := w.addFields(id, d.Fields); err != nil {
		return 0, false, err
	}
	for i, b := range d.Blocks {
		props := ""
		if len(b.Properties) > 0 {
			pb, _ := json.Marshal(b.Properties)
			props = string(pb)
		}
		if err := w.add("block", id, i, nullStr(b.UUID), b.Parent, b.Depth, b.Line, b.EndLine, b.Content, nullStr(props)); err != nil {
			return 0, false, err
		}
	}
	for _, a := range d.BlockIDs {
		if err := w.add("anchor", id, a.ID, a.Line); err != nil {
			return 0, false, err
		}
	}
	w.pending += 1 + len(chunks)
	return id, namesChanged, nil
}

// isAttachment reports whether a link points at a non-Markdown file (an
// image, a PDF, ...), which the index does not hold as a note.
func isAttachment(l markdown.Link) bool {
	switch l.Kind {
	case markdown.LinkBlockRef, markdown.LinkTagRef, markdown.LinkTyped:
		return false
	}
	ext := strings.ToLower(path.Ext(l.Target))
	if ext == "" || ext == ".md" {
		return false
	}
	// "Note v1.2" has an extension-looking suffix that is not a file type.
	if len(ext) > 6 || strings.ContainsAny(ext, " ") {
		return false
	}
	for _, c := range ext[1:] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	if _, err := strconv.Atoi(ext[1:]); err == nil {
		return false // "Version 1.2"
	}
	return true
}

// FTSRows returns the chunks stored for a note (at least one, so a note
// with an empty body is still found by its title) and, for each, the text
// of the four FTS columns: title (with aliases), heading path, body and
// tags, segmented for CJK. The frontmatter's searchable text joins the
// first chunk's body.
func FTSRows(d *markdown.Doc) ([]markdown.Chunk, [][4]string) {
	titleText := textseg.ForIndex(strings.Join(append([]string{d.Title}, d.Aliases...), " "))
	tagSet := make([]string, 0, len(d.Tags))
	seen := map[string]bool{}
	for _, t := range d.Tags {
		k := strings.ToLower(t.Name)
		if k != "" && !seen[k] {
			seen[k] = true
			tagSet = append(tagSet, t.Name)
		}
	}
	tagText := textseg.ForIndex(strings.Join(tagSet, " "))
	fmText := textseg.ForIndex(frontmatterText(d))
	chunks := d.Chunks
	if len(chunks) == 0 {
		chunks = []markdown.Chunk{{StartLine: max(d.BodyLine, 1), EndLine: max(d.BodyLine, 1)}}
	}
	rows := make([][4]string, len(chunks))
	for i, c := range chunks {
		body := textseg.ForIndex(c.Text)
		if i == 0 && fmText != "" {
			body = fmText + "\n" + body
		}
		rows[i] = [4]string{titleText, textseg.ForIndex(strings.Join(c.HeadingPath, " \u203a ")), body, tagText}
	}
	return chunks, rows
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func fmString(fm map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := fm[k]; ok && v != nil {
			switch x := v.(type) {
			case string:
				return x
			case int64, float64, bool:
				return fmt.Sprint(x)
			}
		}
	}
	return ""
}

// frontmatterText is the searchable text of the frontmatter: string values of
// every key except the ones indexed elsewhere (title, aliases, tags).
func frontmatterText(d *markdown.Doc) string {
	var parts []string
	for _, k := range d.FrontmatterKeys {
		switch strings.ToLower(k) {
		case "title", "aliases", "alias", "tags", "tag", "id", "uuid", "cssclasses", "cssclass", "permalink", "publish", "created", "updated", "date", "modified":
			continue
		}
		for _, v := range flattenValue(d.Frontmatter[k]) {
			if len(v) > 1 {
				parts = append(parts, v)
			}
		}
	}
	return strings.Join(parts, " \n")
}

// flattenValue turns a frontmatter value into the strings a filter can match:
// scalars as text, lists item by item; nested maps are skipped.
func flattenValue(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return []string{x}
	case bool:
		return []string{strconv.FormatBool(x)}
	case int64:
		return []string{strconv.FormatInt(x, 10)}
	case float64:
		return []string{strconv.FormatFloat(x, 'f', -1, 64)}
	case []any:
		var out []string
		for _, e := range x {
			switch e.(type) {
			case []any, map[string]any:
				continue
			}
			out = append(out, flattenValue(e)...)
		}
		return out
	}
	return nil
}
