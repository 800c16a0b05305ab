package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/config"
	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/errs"
)

// Embeddings. After the notes are written, Sync embeds what has no vector
// yet: each chunk (heading path and text) and each note's title (with its
// aliases). Vectors are cached by the SHA-256 of the text embedded, so only
// new text costs anything; chunk_vectors and note_vectors point into the
// cache. In memory, a chunk's row is its vector plus TitleWeight × its note's
// title vector, normalized: the title is part of what a section is about.
//
// The index records the provider, model and dimension that wrote the
// vectors (meta embed_*); a sync or a query with another one fails with
// embedding_mismatch unless embed.on_mismatch is reembed.

// EmbedStats summarizes the embedding pass of a sync.
type EmbedStats struct {
	Provider string  `json:"provider"`
	Model    string  `json:"model"`
	Dims     int     `json:"dims"`
	Chunks   int     `json:"chunks"`   // chunk vectors written
	Titles   int     `json:"titles"`   // title vectors written
	Embedded int     `json:"embedded"` // texts sent to the provider
	Cached   int     `json:"cached"`   // texts found in the cache
	Tokens   int64   `json:"tokens"`   // tokens used (reported or estimated)
	CostUSD  float64 `json:"cost_usd"` // estimated, from embed.price_per_mtok
	Millis   int64   `json:"duration_ms"`
	// Background is set when the pass was left to the background job
	// (a server's sync): the counts are then zero.
	Background bool `json:"background,omitempty"`
}

// VectorStatus is the embedding part of index_status.
type VectorStatus struct {
	Provider     string `json:"provider,omitempty" jsonschema:"provider that wrote the vectors (builtin, openai)"`
	Model        string `json:"model,omitempty" jsonschema:"embedding model of the vectors"`
	Dims         int    `json:"dims,omitempty" jsonschema:"vector dimension"`
	Chunks       int    `json:"chunks" jsonschema:"sections with a vector"`
	Cached       int    `json:"cached" jsonschema:"distinct vectors in the content-hash cache"`
	Configured   string `json:"configured" jsonschema:"the embedding provider configured now (none when disabled)"`
	Mismatch     bool   `json:"mismatch,omitempty" jsonschema:"true when the configured model differs from the index's; run loci index --reset"`
	MemoryBytes  int64  `json:"memory_bytes,omitempty" jsonschema:"memory the vectors take when loaded for search"`
	DefaultMode  string `json:"default_mode" jsonschema:"the search mode used when none is given: hybrid once every section has its vector, else lexical"`
	ConfigError  string `json:"config_error,omitempty" jsonschema:"why the embedding settings are invalid, if they are"`
	LastEmbedded string `json:"last_embedded_at,omitempty" jsonschema:"time of the last embedding pass (UTC, RFC 3339)"`
	// Progress: texts are sections and note titles (each gets a vector).
	Embedded int       `json:"embedded" jsonschema:"texts (sections and note titles) with a vector"`
	Total    int       `json:"total" jsonschema:"texts (sections and note titles) in the index"`
	Pending  int       `json:"pending" jsonschema:"texts still waiting for a vector"`
	Complete bool      `json:"complete" jsonschema:"every text has its vector; until then the default search mode is lexical"`
	Job      *EmbedJob `json:"job,omitempty" jsonschema:"the background embedder of a server (loci serve, loci mcp): running, progress, rate, last error; absent when each sync embeds (loci index)"`
}

// embedState is the embedding configuration of an open index.
type embedState struct {
	provider embed.Provider
	settings embed.Settings
	err      error // invalid settings: reported by Sync and by queries
	search   config.Search

	mu     sync.Mutex
	matrix *embed.Matrix
	rev    string
	// allowStale lets a long-running server answer with the previous matrix
	// while the new one loads in the background after a sync (lexical
	// results are fresh at once; the vectors catch up within ~0.5 s).
	allowStale bool
	reloading  bool
	// unmaps release the memory-mapped cache files of the matrices loaded
	// so far (readMatrixCache), when the index closes.
	unmaps []func()
}

// AllowStaleMatrix makes VectorMatrix return the previous matrix while a
// newer one loads in the background, instead of blocking the query. Long-
// running servers turn it on so that a sync never stalls searches.
func (ix *Index) AllowStaleMatrix() {
	ix.emb.mu.Lock()
	ix.emb.allowStale = true
	ix.emb.mu.Unlock()
}

// TitleWeight is how much of a note's title vector joins each of its
// chunks' vectors (tuned on the golden sets; docs/search.md).
var TitleWeight = float32(1)

func (ix *Index) setupEmbed(opt Options) {
	st := &embedState{}
	ix.emb = st
	if cfg, _, err := config.Load(ix.Vault.Root); err == nil {
		st.search = cfg.Search
	}
	if opt.NoEmbed {
		st.settings.Provider = "none"
		return
	}
	if opt.Embedder != nil {
		st.provider = opt.Embedder
		st.settings = opt.EmbedSettings
		if st.settings.OnMismatch == "" {
			st.settings.OnMismatch = "fail"
		}
		return
	}
	s, err := embed.Resolve(ix.Vault.Root)
	st.settings = s
	if err != nil {
		st.err = err
		return
	}
	st.provider, st.err = embed.New(s)
	if st.err != nil {
		st.provider = nil // embed.New may return a typed nil with its error
	}
}

// Embedder returns the configured embedding provider (nil when disabled).
func (ix *Index) Embedder() embed.Provider { return ix.emb.provider }

// SearchSettings returns the search section of the vault's config.
func (ix *Index) SearchSettings() config.Search { return ix.emb.search }

// StoredIdentity returns the identity recorded in the index (ok=false when
// the index has no vectors yet).
func (ix *Index) StoredIdentity(ctx context.Context) (embed.Identity, bool) {
	return storedIdentity(ctx, ix.DB)
}

type queryer interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

func storedIdentity(ctx context.Context, q queryer) (embed.Identity, bool) {
	var p, m, d sql.NullString
	q.QueryRowContext(ctx, `SELECT (SELECT value FROM meta WHERE key='embed_provider'), (SELECT value FROM meta WHERE key='embed_model'), (SELECT value FROM meta WHERE key='embed_dims')`).Scan(&p, &m, &d)
	if !p.Valid || p.String == "" {
		return embed.Identity{}, false
	}
	n, _ := strconv.Atoi(d.String)
	return embed.Identity{Provider: p.String, Model: m.String, Dims: n}, true
}

// sameSpace reports whether vectors of a and b can be compared; a remote
// model whose dimension is not known yet matches on provider and model.
func sameSpace(stored, cur embed.Identity) bool {
	if stored.Provider != cur.Provider || stored.Model != cur.Model {
		return false
	}
	return cur.Dims == 0 || stored.Dims == cur.Dims
}

func mismatchError(stored, cur embed.Identity) error {
	return errs.New(errs.CodeEmbedMismatch,
		"the index holds vectors of %s but the configured embedder is %s; run `loci index --reset` to re-embed (or set embed.on_mismatch: reembed, or LOCI_EMBED_ON_MISMATCH=reembed, to do it on the next sync; or restore the previous embed settings)",
		stored, cur).With("index", stored).With("configured", cur)
}

// checkIdentity runs before a sync writes anything: it fails on a
// mismatch, or clears the vectors when re-embedding is allowed.
func (ix *Index) checkIdentity(ctx context.Context, conn *sql.Conn, reset bool) error {
	st := ix.emb
	if st.err != nil {
		return st.err
	}
	if st.provider == nil {
		return nil
	}
	stored, ok := storedIdentity(ctx, conn)
	if !ok || sameSpace(stored, st.provider.Identity()) {
		return nil
	}
	// The built-in embedder re-embeds a vault in seconds, with nothing to
	// pay: an index made by an older version of it (another data file) is
	// re-embedded rather than refused.
	builtinUpgrade := stored.Provider == "builtin" && st.provider.Identity().Provider == "builtin"
	if !reset && !builtinUpgrade && st.settings.OnMismatch != "reembed" {
		return mismatchError(stored, st.provider.Identity())
	}
	return clearVectors(ctx, conn)
}

func clearVectors(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return errs.Wrap(err, errs.CodeIndexBusy, "cannot clear vectors")
	}
	defer tx.Rollback()
	for _, s := range []string{"DELETE FROM vectors", "DELETE FROM chunk_vectors", "DELETE FROM note_vectors",
		"DELETE FROM meta WHERE key IN ('embed_provider','embed_model','embed_dims','embed_complete')"} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

type vecHash [16]byte

func textHash(s string) vecHash {
	sum := sha256.Sum256([]byte(s))
	var h vecHash
	copy(h[:], sum[:16])
	return h
}

// ChunkEmbedText is the text embedded for a chunk: its heading path, then its text.
func ChunkEmbedText(headingPathJSON, text string) string {
	var hp []string
	json.Unmarshal([]byte(headingPathJSON), &hp)
	if len(hp) == 0 {
		return text
	}
	return strings.Join(hp, " > ") + "\n" + text
}

// TitleEmbedText is the text embedded for a note's title: title and aliases.
func TitleEmbedText(title, aliasesJSON string) string {
	var al []string
	json.Unmarshal([]byte(aliasesJSON), &al)
	if len(al) == 0 {
		return title
	}
	return title + ", " + strings.Join(al, ", ")
}

// Profile is what describes a note as a whole, the source of its note
// vector: its title and aliases, its frontmatter description or summary,
// its headings and its anchor text (what other notes say where they link
// to it).
type Profile struct {
	Title       string
	AliasesJSON string
	Description string   // frontmatter description / summary values
	Headings    []string // the note's own headings, in order, de-duplicated
	Anchor      string   // anchor text (anchors_fts)
}

// ProfileParts chooses what of a Profile the note vector embeds (tuned on
// the golden sets; docs/search.md "What was tried").
var ProfileParts = struct{ Description, Headings, Anchor bool }{true, true, true}

// Caps on the profile's parts, so a note with a huge description, hundreds
// of headings or a hub with kilobytes of anchor text stays a bounded text
// to embed.
const (
	maxProfileDescription = 2 << 10
	maxProfileHeadings    = 2 << 10
	maxProfileAnchor      = 4 << 10
)

// ProfileWeight is the weight of the rest of the profile (description,
// headings, anchor text) against the title and aliases in the note vector:
// the two are embedded apart and the note vector is
// normalize(title + ProfileWeight × rest), so a hub's long, generic anchor
// text cannot drown what its title says.
var ProfileWeight = float32(0.5)

// NoteEmbedText is the text a note's vector is made from: its title and
// aliases, then the parts ProfileParts selects, one per line. The first
// line (title and aliases) and the rest are embedded apart (see
// ProfileWeight); rest is "" when there is none.
func NoteEmbedText(p Profile) (title, rest string) {
	title = TitleEmbedText(p.Title, p.AliasesJSON)
	var b strings.Builder
	line := func() {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
	}
	if ProfileParts.Description && p.Description != "" {
		b.WriteString(truncUTF8(p.Description, maxProfileDescription))
	}
	if ProfileParts.Headings && len(p.Headings) > 0 {
		line()
		n := 0
		for i, h := range p.Headings {
			if n += len(h) + 2; n > maxProfileHeadings {
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(h)
		}
	}
	if ProfileParts.Anchor && p.Anchor != "" {
		line()
		b.WriteString(truncUTF8(p.Anchor, maxProfileAnchor))
	}
	return title, b.String()
}

// truncUTF8 cuts s to at most n bytes, at a rune boundary.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// profileVersion names the composition of the note vector's text. An
// index whose note vectors were made otherwise (meta note_vector_text)
// drops them on its next embedding pass, so they are remade (the texts
// hash differently, so the cache cannot serve stale ones anyway).
const profileVersion = "profile-1"

// staleProfiles drops the note vectors of the notes whose anchor text was
// rebuilt (all of them when all is set): their profile text may have
// changed, and the next embedding pass remakes them (an unchanged profile
// is a cache hit, a changed one costs one embedding).
func (w *writer) staleProfiles(ids map[int64]bool, all bool) error {
	if !ProfileParts.Anchor || (!all && len(ids) == 0) {
		return nil
	}
	if all {
		if _, err := w.tx.ExecContext(w.ctx, "DELETE FROM note_vectors"); err != nil {
			return err
		}
	} else {
		del, err := w.tx.PrepareContext(w.ctx, "DELETE FROM note_vectors WHERE note_id=?")
		if err != nil {
			return err
		}
		defer del.Close()
		for id := range ids {
			if _, err := del.ExecContext(w.ctx, id); err != nil {
				return err
			}
		}
	}
	_, err := w.tx.ExecContext(w.ctx, "INSERT INTO meta(key,value) VALUES('embed_complete','0') ON CONFLICT(key) DO UPDATE SET value='0'")
	return err
}

type embedItem struct {
	chunk, note int64 // chunk 0: a note (its profile)
	hash        vecHash
	text        string
	rest        string // a note: the profile beyond the title (text), embedded apart
}

// passOptions tune one embedding pass.
type passOptions struct {
	// progress, when set, is called as pages are written (done and total
	// count texts: sections and titles).
	progress func(done, total int)
	// size is the number of texts per page (default embedGroupSize).
	size int
	// lock, when set, is taken around each page's write and released
	// before the next page is read: the pass holds no lock while the
	// provider works (the background job; see embedjob.go). Each page is
	// then checked again under the lock: only the sections and titles that
	// still exist with the text embedded, and still lack a vector, get one.
	lock func() (unlock func(), err error)
}

// embedPass embeds every chunk and title that has no vector yet.
func (ix *Index) embedPass(ctx context.Context, conn *sql.Conn, changed, full bool, po passOptions) (*EmbedStats, error) {
	p := ix.emb.provider
	progress := po.progress
	size := po.size
	if size <= 0 {
		size = embedGroupSize
	}
	start := time.Now()
	before := p.Usage()
	stats := &EmbedStats{}
	if changed {
		// Vectors of deleted chunks and notes go with them (childTables);
		// these catch rows left by an older loci or an interrupted run.
		if err := withLock(po.lock, func() error {
			for _, s := range []string{"DELETE FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)", "DELETE FROM note_vectors WHERE note_id NOT IN (SELECT id FROM notes)"} {
				if _, err := conn.ExecContext(ctx, s); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if v := ix.Meta(ctx, "note_vector_text"); v != profileVersion {
		// Note vectors made from another text (an older loci embedded the
		// title and aliases only): remake them all.
		if _, err := conn.ExecContext(ctx, "DELETE FROM note_vectors"); err != nil {
			return nil, err
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO meta(key,value) VALUES('note_vector_text',?) ON CONFLICT(key) DO UPDATE SET value=excluded.value", profileVersion); err != nil {
			return nil, err
		}
	}
	// Work in pages of embedGroupSize texts, read by id: memory stays bounded
	// and an interrupted run keeps the pages it wrote.
	total := 0
	if progress != nil {
		conn.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id))
			+ (SELECT COUNT(*) FROM notes n WHERE NOT EXISTS (SELECT 1 FROM note_vectors v WHERE v.note_id = n.id))`).Scan(&total)
		progress(0, total)
	}
	var cached map[vecHash]bool // the cache's hashes: all of them (cachedAll) or the pages' so far
	cachedAll := false
	done := 0
	for _, q := range []struct {
		sql   string
		title bool
	}{
		{`SELECT c.id, c.note_id, c.heading_path, c.text FROM chunks c
			WHERE c.id > ? AND NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id) ORDER BY c.id LIMIT ?`, false},
		{profileQuery(), true},
	} {
		last := int64(0)
		for {
			page, err := readPage(ctx, conn, q.sql, q.title, last, size)
			if err != nil {
				return nil, err
			}
			if len(page) == 0 {
				break
			}
			switch {
			case cachedAll:
			case cached == nil && len(page) == size:
				// A large pass: one scan of the cache costs less than a
				// lookup per text.
				if cached, err = loadHashes(ctx, conn); err != nil {
					return nil, err
				}
				cachedAll = true
			default:
				// A small pass (a watcher's batch: a few sections): look up
				// only its texts, not the whole cache.
				if cached == nil {
					cached = map[vecHash]bool{}
				}
				if err := lookupHashes(ctx, conn, page, cached); err != nil {
					return nil, err
				}
			}
			// The recheck reads from just before the page's first id (the
			// page is in id order): rows before it are not in the group,
			// and starting at the previous page's end would, for a small
			// pass (from 0), scan the whole table again.
			var from int64
			if q.title {
				from, last = page[0].note-1, page[len(page)-1].note
			} else {
				from, last = page[0].chunk-1, page[len(page)-1].chunk
			}
			var recheck func(queryer2) ([]embedItem, error)
			if po.lock != nil {
				recheck = func(q2 queryer2) ([]embedItem, error) { return readPage(ctx, q2, q.sql, q.title, from, size) }
			}
			if err := ix.embedGroup(ctx, conn, page, cached, stats, po.lock, recheck); err != nil {
				return nil, err
			}
			done += len(page)
			if progress != nil {
				progress(min(done, total), total)
			}
			crashPoint("embed")
			if len(page) < size {
				break
			}
		}
	}
	if full && changed {
		// Drop cached vectors nothing points to any more. Only on a
		// whole-vault sync, where a rename's two halves meet in one run.
		if err := withLock(po.lock, func() error {
			_, err := conn.ExecContext(ctx, `DELETE FROM vectors WHERE hash NOT IN (SELECT hash FROM chunk_vectors) AND hash NOT IN (SELECT hash FROM note_vectors)`)
			return err
		}); err != nil {
			return nil, err
		}
	}
	id := p.Identity()
	stats.Provider, stats.Model, stats.Dims = id.Provider, id.Model, id.Dims
	after := p.Usage()
	stats.Tokens = after.Tokens - before.Tokens
	stats.CostUSD = after.CostUSD - before.CostUSD
	stats.Millis = time.Since(start).Milliseconds()
	return stats, nil
}

// queryer2 runs a query: a connection or a transaction.
type queryer2 interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// withLock runs fn under lock, when there is one.
func withLock(lock func() (func(), error), fn func() error) error {
	if lock == nil {
		return fn()
	}
	unlock, err := lock()
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// readPage reads up to size sections (or titles) after id last that
// have no vector, with the text to embed and its hash.
func readPage(ctx context.Context, conn queryer2, q string, title bool, last int64, size int) ([]embedItem, error) {
	rows, err := conn.QueryContext(ctx, q, last, size)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var page []embedItem
	for rows.Next() {
		var it embedItem
		var a, b string
		if title {
			var desc, heads, anchor string
			if err := rows.Scan(&it.chunk, &it.note, &a, &b, &desc, &heads, &anchor); err != nil {
				return nil, err
			}
			it.chunk = 0
			it.text, it.rest = NoteEmbedText(Profile{Title: a, AliasesJSON: b, Description: desc, Headings: headingsOf(heads, a), Anchor: anchor})
		} else {
			if err := rows.Scan(&it.chunk, &it.note, &a, &b); err != nil {
				return nil, err
			}
			it.text = ChunkEmbedText(a, b)
		}
		if it.rest != "" {
			// The cache key covers both parts and their weight.
			it.hash = textHash(fmt.Sprintf("%s\x00%g\x00%s", it.text, ProfileWeight, it.rest))
		} else {
			it.hash = textHash(it.text)
		}
		page = append(page, it)
	}
	return page, rows.Err()
}

// profileQuery reads the notes without a note vector and what their
// profile needs (only the parts ProfileParts selects: the headings are the
// costliest to gather).
func profileQuery() string {
	desc, heads, anchor := `''`, `'[]'`, `''`
	if ProfileParts.Description {
		desc = `COALESCE((SELECT group_concat(p.value, '. ') FROM props p WHERE p.note_id = n.id AND p.key IN ('description','summary')), '')`
	}
	if ProfileParts.Headings {
		heads = `COALESCE((SELECT json_group_array(c.heading_path) FROM (SELECT heading_path FROM chunks WHERE note_id = n.id ORDER BY seq) c), '[]')`
	}
	if ProfileParts.Anchor {
		anchor = `COALESCE((SELECT a.anchor FROM anchors_fts a WHERE a.rowid = n.id), '')`
	}
	return `SELECT n.id, n.id, n.title, COALESCE(n.aliases,''), ` + desc + `, ` + heads + `, ` + anchor + `
		FROM notes n
		WHERE n.id > ? AND NOT EXISTS (SELECT 1 FROM note_vectors v WHERE v.note_id = n.id) ORDER BY n.id LIMIT ?`
}

// headingsOf turns a JSON array of the chunks' heading paths (JSON arrays
// themselves, as text) into the note's distinct headings, in order, but
// for one that repeats the title (an H1 often does).
func headingsOf(pathsJSON, title string) []string {
	var paths []string
	if json.Unmarshal([]byte(pathsJSON), &paths) != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		var hp []string
		json.Unmarshal([]byte(p), &hp)
		for _, h := range hp {
			if h = strings.TrimSpace(h); h != "" && !seen[h] && !strings.EqualFold(h, title) {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}

func loadHashes(ctx context.Context, conn *sql.Conn) (map[vecHash]bool, error) {
	rows, err := conn.QueryContext(ctx, "SELECT hash FROM vectors")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[vecHash]bool{}
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var h vecHash
		copy(h[:], b)
		m[h] = true
	}
	return m, rows.Err()
}

// lookupHashes marks in cached the hashes of page that the vectors table
// holds, looked up by key (a few hundred per statement).
func lookupHashes(ctx context.Context, conn *sql.Conn, page []embedItem, cached map[vecHash]bool) error {
	var keys []any
	seen := map[vecHash]bool{}
	for _, it := range page {
		if !cached[it.hash] && !seen[it.hash] {
			seen[it.hash] = true
			keys = append(keys, it.hash[:])
		}
	}
	const per = 500
	for len(keys) > 0 {
		n := min(len(keys), per)
		q := "SELECT hash FROM vectors WHERE hash IN (?" + strings.Repeat(",?", n-1) + ")"
		rows, err := conn.QueryContext(ctx, q, keys[:n]...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				rows.Close()
				return err
			}
			var h vecHash
			copy(h[:], b)
			cached[h] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// embedGroup embeds the texts of group not in the cache and writes the
// group's vectors. With lock, the write happens under it, and recheck
// (the page read again, in the write's transaction) narrows group to the
// items that are still there, unchanged, without a vector.
func (ix *Index) embedGroup(ctx context.Context, conn *sql.Conn, group []embedItem, cached map[vecHash]bool, stats *EmbedStats,
	lock func() (func(), error), recheck func(queryer2) ([]embedItem, error)) error {
	p := ix.emb.provider
	var texts []string
	var hashes []vecHash
	var rests []int // per hash: the index in texts of its rest part, or -1
	seen := map[vecHash]bool{}
	var restText []string
	for _, it := range group {
		if cached[it.hash] || seen[it.hash] {
			stats.Cached++
			continue
		}
		seen[it.hash] = true
		texts = append(texts, it.text)
		hashes = append(hashes, it.hash)
		restText = append(restText, it.rest)
	}
	// The rest parts go after every first part.
	for _, r := range restText {
		if r == "" {
			rests = append(rests, -1)
			continue
		}
		rests = append(rests, len(texts))
		texts = append(texts, r)
	}
	var vecs [][]float32
	if len(texts) > 0 {
		var err error
		vecs, err = p.Embed(ctx, texts)
		if err != nil {
			return err
		}
		if len(vecs) != len(texts) {
			return errs.New(errs.CodeEmbedMismatch, "the embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
		stats.Embedded += len(texts)
		// A note's vector: its title's plus ProfileWeight × its rest's.
		for j, r := range rests {
			if r < 0 || len(vecs[r]) != len(vecs[j]) {
				continue
			}
			v := embed.Normalize(append([]float32(nil), vecs[j]...))
			rv := embed.Normalize(append([]float32(nil), vecs[r]...))
			for d := range v {
				v[d] += ProfileWeight * rv[d]
			}
			vecs[j] = v
		}
		vecs = vecs[:len(hashes)]
	}
	if lock != nil {
		unlock, err := lock()
		if err != nil {
			return err
		}
		defer unlock()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return errs.Wrap(err, errs.CodeIndexBusy, "cannot write vectors")
	}
	defer tx.Rollback()
	if recheck != nil {
		now, err := recheck(tx)
		if err != nil {
			return err
		}
		type key struct {
			chunk, note int64
			hash        vecHash
		}
		still := make(map[key]bool, len(now))
		for _, it := range now {
			still[key{it.chunk, it.note, it.hash}] = true
		}
		kept := group[:0:0]
		for _, it := range group {
			if still[key{it.chunk, it.note, it.hash}] {
				kept = append(kept, it)
			}
		}
		group = kept
	}
	id := p.Identity()
	if stored, ok := storedIdentity(ctx, tx); !ok {
		if err := setMeta(ctx, tx, map[string]string{"embed_provider": id.Provider, "embed_model": id.Model, "embed_dims": strconv.Itoa(id.Dims)}); err != nil {
			return err
		}
	} else if !sameSpace(stored, id) {
		return mismatchError(stored, id)
	}
	// Multi-row inserts: one statement per row costs more than the rows.
	vrows := make([]vecRow, 0, len(vecs))
	for i, v := range vecs {
		if len(v) != id.Dims {
			return errs.New(errs.CodeEmbedMismatch, "the embedder returned %d dimensions, expected %d", len(v), id.Dims)
		}
		vrows = append(vrows, vecRow{hashes[i], embed.EncodeVector(embed.Normalize(v))})
		cached[hashes[i]] = true
	}
	// In key order, so the cache's B-tree grows at its end.
	sort.Slice(vrows, func(i, j int) bool { return bytes.Compare(vrows[i].hash[:], vrows[j].hash[:]) < 0 })
	if err := insertRows(ctx, tx, "INSERT OR IGNORE INTO vectors(hash, vec) VALUES", 2, len(vrows), func(i int) []any { return []any{vrows[i].hash[:], vrows[i].vec} }); err != nil {
		return err
	}
	var chunks, titles []embedItem
	for _, it := range group {
		if it.chunk != 0 {
			chunks = append(chunks, it)
		} else {
			titles = append(titles, it)
		}
	}
	if err := insertRows(ctx, tx, "INSERT OR REPLACE INTO chunk_vectors(chunk_id, note_id, hash) VALUES", 3, len(chunks), func(i int) []any {
		return []any{chunks[i].chunk, chunks[i].note, chunks[i].hash[:]}
	}); err != nil {
		return err
	}
	if err := insertRows(ctx, tx, "INSERT OR REPLACE INTO note_vectors(note_id, hash) VALUES", 2, len(titles), func(i int) []any {
		return []any{titles[i].note, titles[i].hash[:]}
	}); err != nil {
		return err
	}
	stats.Chunks += len(chunks)
	stats.Titles += len(titles)
	if err := setMeta(ctx, tx, map[string]string{"vectors_rev": strconv.FormatInt(time.Now().UnixNano(), 10), "last_embed_at": strconv.FormatInt(time.Now().Unix(), 10)}); err != nil {
		return err
	}
	return tx.Commit()
}

type vecRow struct {
	hash vecHash
	vec  []byte
}

// insertRows inserts n rows of cols values with multi-row INSERT statements
// of up to batchRows rows.
func insertRows(ctx context.Context, tx *sql.Tx, prefix string, cols, n int, row func(i int) []any) error {
	group := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	args := make([]any, 0, batchRows*cols)
	for start := 0; start < n; start += batchRows {
		k := min(batchRows, n-start)
		st := stmts[k]
		if st == nil {
			var err error
			st, err = tx.PrepareContext(ctx, prefix+strings.TrimSuffix(strings.Repeat(group+",", k), ","))
			if err != nil {
				return err
			}
			stmts[k] = st
		}
		args = args[:0]
		for i := start; i < start+k; i++ {
			args = append(args, row(i)...)
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// errNoVectors is returned by VectorMatrix when search cannot use vectors.
func (ix *Index) vectorsUsable(ctx context.Context) error {
	st := ix.emb
	if st.err != nil {
		return st.err
	}
	if st.provider == nil {
		return errs.New(errs.CodeEmbedUnavailable, "embeddings are disabled (embed.provider: none); use mode lexical, or enable them and run `loci index`")
	}
	stored, ok := storedIdentity(ctx, ix.DB)
	if !ok {
		if ix.bg != nil {
			return errs.New(errs.CodeEmbedUnavailable, "the index has no vectors yet: the background embedder has not written its first page (index_status shows its progress and any error); use mode lexical meanwhile")
		}
		return errs.New(errs.CodeEmbedUnavailable, "the index has no vectors yet; run `loci index` (embeddings are on by default) or use mode lexical")
	}
	if !sameSpace(stored, st.provider.Identity()) {
		if stored.Provider == "builtin" && st.provider.Identity().Provider == "builtin" {
			// An older built-in model: the next sync re-embeds (checkIdentity);
			// until then search is lexical.
			return errs.New(errs.CodeEmbedUnavailable, "the index holds vectors of an older built-in embedder (%s); the next sync (`loci index`) re-embeds them", stored)
		}
		return mismatchError(stored, st.provider.Identity())
	}
	return nil
}

// HasVectors reports whether semantic search can run: embeddings are
// configured, the index holds vectors and they are of the configured model.
// A mismatch is returned as an error (it needs the user's attention).
func (ix *Index) HasVectors(ctx context.Context) (bool, error) {
	err := ix.vectorsUsable(ctx)
	switch errs.Code(err) {
	case "":
		return true, nil
	case errs.CodeEmbedUnavailable:
		return false, nil
	}
	return false, err
}

// VectorMatrix returns the vectors of every chunk, loaded into memory on
// first use and reloaded when a sync (of this or another process) changed them.
func (ix *Index) VectorMatrix(ctx context.Context) (*embed.Matrix, error) {
	if err := ix.vectorsUsable(ctx); err != nil {
		return nil, err
	}
	rev := ix.Meta(ctx, "vectors_rev")
	st := ix.emb
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.matrix != nil && st.rev == rev {
		return st.matrix, nil
	}
	if st.matrix != nil && st.allowStale {
		if !st.reloading {
			st.reloading = true
			go func() {
				m, err := ix.buildMatrix(context.Background(), rev)
				st.mu.Lock()
				if err == nil {
					st.matrix, st.rev = m, rev
				}
				st.reloading = false
				st.mu.Unlock()
			}()
		}
		return st.matrix, nil
	}
	m, err := ix.buildMatrix(ctx, rev)
	if err != nil {
		return nil, err
	}
	st.matrix, st.rev = m, rev
	return m, nil
}

// buildMatrix loads the matrix of vectors revision rev: from the flat cache
// file beside the database when it matches (one read), else by decoding the
// BLOBs (~0.1 s per 10k chunks), which also rewrites the cache.
func (ix *Index) buildMatrix(ctx context.Context, rev string) (*embed.Matrix, error) {
	stored, _ := storedIdentity(ctx, ix.DB)
	key := fmt.Sprintf("%s|%s|%s|%d|int8=%v|title=%g|approx=%d", rev, stored.Provider, stored.Model, stored.Dims, ix.emb.settings.Int8, TitleWeight, ix.approxMinChunks())
	cache := ix.Loc.Name("vectors.cache")
	if m := ix.readMatrixCache(cache, key); m != nil {
		return m, nil
	}
	m, err := ix.loadMatrix(ctx)
	if err != nil {
		return nil, err
	}
	// Best effort: a read-only index dir (or a link planted at the cache's
	// name, which safefs refuses) just stays slower.
	ix.Loc.Root.WriteCacheFile(cache, m.MarshalBinary(key), 0o644)
	return m, nil
}

// readMatrixCache returns the matrix of the cache file when it holds key's,
// else nil. A process that does not serve (a CLI call) memory-maps the
// file: the matrix's arrays are the file's pages, shared with the page
// cache, with nothing decoded or copied; the mappings go when the index
// closes. That is safe because the cache is only ever replaced by a rename
// (safefs.WriteCacheFile), never written in place. A server (allowStale)
// reloads the matrix after syncs and never knows when the last search
// using an old one ends, so it reads the file into memory instead (one
// read of the exact size; the arrays are views of that buffer, which the
// garbage collector frees with the matrix).
func (ix *Index) readMatrixCache(cache, key string) *embed.Matrix {
	f, err := ix.Loc.Root.OpenFile(cache, os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= 0 || fi.Size() > math.MaxInt32*8 {
		return nil
	}
	size := int(fi.Size())
	if !ix.emb.allowStale {
		if b, unmap, ok := mapFile(f, size); ok {
			m, err := embed.UnmarshalMatrix(b, key)
			if err != nil {
				unmap()
				return nil
			}
			ix.emb.unmaps = append(ix.emb.unmaps, unmap) // under st.mu (VectorMatrix)
			return m
		}
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil
	}
	m, err := embed.UnmarshalMatrix(b, key)
	if err != nil {
		return nil
	}
	return m
}

// releaseMatrices unmaps the cache files of the matrices loaded (Close).
func (st *embedState) releaseMatrices() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, u := range st.unmaps {
		u()
	}
	st.unmaps = nil
	st.matrix = nil
}

// approxMinChunks is the number of vectors from which search uses the
// approximate index (search.approx_min_chunks; ≤ 0 after defaults: never).
func (ix *Index) approxMinChunks() int {
	switch n := ix.emb.search.ApproxMinChunks; {
	case n == 0:
		return embed.ANNMinRows
	case n < 0:
		return 0
	default:
		return n
	}
}

func (ix *Index) loadMatrix(ctx context.Context) (*embed.Matrix, error) {
	stored, _ := storedIdentity(ctx, ix.DB)
	var n int
	ix.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM chunk_vectors").Scan(&n)
	b := embed.NewMatrixBuilder(stored.Dims, ix.emb.settings.Int8, n)
	b.ApproxFrom(ix.approxMinChunks())
	// Title vectors, decoded once each.
	titles := map[int64][]float32{}
	rows, err := ix.DB.QueryContext(ctx, "SELECT nv.note_id, v.vec FROM note_vectors nv JOIN vectors v ON v.hash = nv.hash")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			rows.Close()
			return nil, err
		}
		titles[id] = embed.DecodeVector(blob, nil)
	}
	rows.Close()
	rows, err = ix.DB.QueryContext(ctx, `SELECT cv.chunk_id, cv.note_id, v.vec FROM chunk_vectors cv JOIN vectors v ON v.hash = cv.hash ORDER BY cv.note_id, cv.chunk_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var buf []float32
	for rows.Next() {
		var chunk, note int64
		var blob []byte
		if err := rows.Scan(&chunk, &note, &blob); err != nil {
			return nil, err
		}
		buf = embed.DecodeVector(blob, buf)
		if len(buf) != stored.Dims {
			continue
		}
		if t, ok := titles[note]; ok && TitleWeight != 0 && len(t) == len(buf) {
			for i := range buf {
				buf[i] += TitleWeight * t[i]
			}
			embed.Normalize(buf)
		}
		b.Add(note, chunk, buf)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return b.Matrix(), nil
}

// EmbedQuery embeds a query with the configured provider, after checking
// that it is the one the index's vectors came from.
func (ix *Index) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := ix.vectorsUsable(ctx); err != nil {
		return nil, err
	}
	return embed.QueryIn(ctx, ix.emb.provider, text, func(w string) bool { return ix.vaultHasWord(ctx, w) })
}

// vaultHasWord reports whether a word occurs in the vault's notes (their
// title, headings, text or tags; one FTS5 lookup): a query word the vault
// uses is no typo, even if the embedder does not know it.
func (ix *Index) vaultHasWord(ctx context.Context, w string) bool {
	var one int
	err := ix.DB.QueryRowContext(ctx, "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1", `"`+strings.ReplaceAll(w, `"`, `""`)+`"`).Scan(&one)
	return err == nil
}

func (ix *Index) vectorStatus(ctx context.Context) VectorStatus {
	vs := VectorStatus{Configured: "none", DefaultMode: "lexical"}
	st := ix.emb
	if st.err != nil {
		vs.ConfigError = st.err.Error()
		if st.settings.Provider != "" {
			vs.Configured = st.settings.Provider + " (unavailable)"
		}
	} else if st.provider != nil {
		vs.Configured = st.provider.Identity().String()
	}
	if id, ok := storedIdentity(ctx, ix.DB); ok {
		vs.Provider, vs.Model, vs.Dims = id.Provider, id.Model, id.Dims
		vs.Mismatch = st.provider != nil && !sameSpace(id, st.provider.Identity())
	}
	ix.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM chunk_vectors").Scan(&vs.Chunks)
	ix.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM vectors").Scan(&vs.Cached)
	ix.vectorCounts(ctx, &vs, nil)
	if ok, _ := ix.HasVectors(ctx); ok && vs.Chunks > 0 {
		if vs.Complete {
			vs.DefaultMode = "hybrid"
		}
		per := int64(vs.Dims) * 4
		if st.settings.Int8 || (ix.approxMinChunks() > 0 && vs.Chunks >= ix.approxMinChunks()) {
			per = int64(vs.Dims) + 4
		}
		vs.MemoryBytes = int64(vs.Chunks) * (per + 12)
	}
	if s := ix.Meta(ctx, "last_embed_at"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			vs.LastEmbedded = time.Unix(n, 0).UTC().Format(time.RFC3339)
		}
	}
	return vs
}

// LoadedVectorsRev is the vectors revision of the matrix in memory ("" when
// none is loaded): a server may search a matrix older than the index's
// vectors_rev while it reloads, and a result cache must not file such a
// result under the new revision.
func (ix *Index) LoadedVectorsRev() string {
	st := ix.emb
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.matrix == nil {
		return ""
	}
	return st.rev
}
