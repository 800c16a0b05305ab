package index

import (
	"context"
	"database/sql"
)

// SchemaVersion is stored in PRAGMA user_version. Bump it and append a
// migration when the schema changes; an index written by a newer loci is
// refused with a message that says to run `loci index --reset`.
const SchemaVersion = 6

// FTSTableArgs is the FTS5 declaration of chunks_fts (shared with the
// benchmark's bare-insert baseline so both measure the same table).
const FTSTableArgs = `fts5(title, headings, body, tags, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2')`

// AnchorsTableArgs is the FTS5 declaration of anchors_fts: one row per
// linked note (rowid = the target's note id) holding the anchor text other
// notes give it (see anchors.go). It keeps its text (bounded per note):
// unlike a contentless table, its BM25 totals then drop what a deleted row
// held, so they do not depend on the history of updates.
const AnchorsTableArgs = `fts5(anchor, tokenize='porter unicode61 remove_diacritics 2')`

// DescriptionsTableArgs is the FTS5 declaration of descriptions_fts: one
// row per note with a frontmatter description or summary (rowid = the
// note id; see descriptions.go). It keeps its (bounded) text, as
// anchors_fts does, for exact BM25 totals.
const DescriptionsTableArgs = `fts5(description, tokenize='porter unicode61 remove_diacritics 2')`

// migrations[i] upgrades a database from version i to i+1.
var migrations = []string{
	// 0 → 1: the initial schema.
	`
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

CREATE TABLE notes (
	id           INTEGER PRIMARY KEY,
	path         TEXT NOT NULL UNIQUE,
	path_key     TEXT NOT NULL,            -- lower-cased path without .md, for link resolution
	stem_key     TEXT NOT NULL,            -- lower-cased file name without .md
	title        TEXT NOT NULL,
	title_key    TEXT NOT NULL,
	title_source TEXT NOT NULL,
	kind         TEXT NOT NULL,            -- note | page | journal
	size         INTEGER NOT NULL,
	mtime        INTEGER NOT NULL,         -- UnixNano
	hash         TEXT NOT NULL,            -- etag: hex SHA-256 of the bytes
	frontmatter  TEXT,                     -- JSON object
	fm_keys      TEXT,                     -- JSON array, file order
	fm_error     TEXT,
	aliases      TEXT,                     -- JSON array
	headings     TEXT,                     -- JSON array of {level,text,line}
	created      TEXT,                     -- frontmatter created/date as written
	updated      TEXT,                     -- frontmatter updated/modified as written
	words        INTEGER NOT NULL,
	lines        INTEGER NOT NULL,
	indexed_at   INTEGER NOT NULL
);

CREATE TABLE chunks (
	id           INTEGER PRIMARY KEY,      -- also the rowid in chunks_fts
	note_id      INTEGER NOT NULL,
	seq          INTEGER NOT NULL,
	heading_path TEXT NOT NULL,            -- JSON array
	start_line   INTEGER NOT NULL,
	end_line     INTEGER NOT NULL,
	text         TEXT NOT NULL
);

-- Contentless: the text lives once, in chunks; snippets are cut in Go.
CREATE VIRTUAL TABLE chunks_fts USING ` + FTSTableArgs + `;

CREATE TABLE links (
	src_id     INTEGER NOT NULL,
	kind       TEXT NOT NULL,              -- wikilink | embed | markdown | typed | blockref | tag
	target     TEXT NOT NULL,              -- as written
	heading    TEXT,
	block_id   TEXT,
	display    TEXT,
	rel_key    TEXT,                       -- typed links: the frontmatter key / property
	line       INTEGER NOT NULL,
	dst_id     INTEGER,                    -- resolved note, NULL when unresolved
	attachment INTEGER NOT NULL DEFAULT 0  -- target is a non-Markdown file
);

CREATE TABLE tags (
	note_id INTEGER NOT NULL,
	tag     TEXT NOT NULL,                 -- as written, without '#'
	tag_key TEXT NOT NULL,                 -- lower-cased
	line    INTEGER NOT NULL,
	source  TEXT NOT NULL
);

CREATE TABLE aliases (note_id INTEGER NOT NULL, alias TEXT NOT NULL, alias_key TEXT NOT NULL);

-- Frontmatter flattened for filters: one row per scalar (list items each get a row).
CREATE TABLE props (note_id INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);

CREATE TABLE tasks (note_id INTEGER NOT NULL, line INTEGER NOT NULL, status TEXT NOT NULL, text TEXT NOT NULL);

CREATE TABLE blocks (
	note_id    INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	uuid       TEXT,
	parent_seq INTEGER NOT NULL,
	depth      INTEGER NOT NULL,
	line       INTEGER NOT NULL,
	end_line   INTEGER NOT NULL,
	content    TEXT NOT NULL,
	properties TEXT
);

CREATE TABLE block_anchors (note_id INTEGER NOT NULL, anchor TEXT NOT NULL, line INTEGER NOT NULL);

CREATE TABLE failures (path TEXT PRIMARY KEY, error TEXT NOT NULL, at INTEGER NOT NULL) WITHOUT ROWID;
`,
	// 1 → 2: embeddings (see vectors.go). The vectors are a cache keyed by
	// the hash of the text embedded, so a renamed or moved note, or a
	// chunk whose text did not change, is never embedded again.
	`
CREATE TABLE vectors (
	hash BLOB PRIMARY KEY,                 -- first 16 bytes of SHA-256 of the text embedded
	vec  BLOB NOT NULL                     -- little-endian float32, unit length
) WITHOUT ROWID;

-- The vector of each chunk (its heading path and text).
CREATE TABLE chunk_vectors (
	chunk_id INTEGER PRIMARY KEY,
	note_id  INTEGER NOT NULL,
	hash     BLOB NOT NULL
);

-- The vector of each note's title, blended into its chunks' vectors.
CREATE TABLE note_vectors (
	note_id INTEGER PRIMARY KEY,
	hash    BLOB NOT NULL
);
`,
	// 2 → 3: anchor text (see anchors.go). Each link keeps the text around
	// it; anchors_fts holds, per target note, its incoming links' texts. An
	// index with notes is marked for a healing sync, which re-parses every
	// note's links (their context is not stored in v2) and rebuilds every
	// target's anchor text; nothing else is re-indexed.
	`
ALTER TABLE links ADD COLUMN context TEXT;  -- the sentence or list item around the link
CREATE VIRTUAL TABLE anchors_fts USING ` + AnchorsTableArgs + `;
INSERT INTO meta(key, value) SELECT 'sync_incomplete', 'sync' WHERE EXISTS (SELECT 1 FROM notes)
	ON CONFLICT(key) DO NOTHING;
`,
	// 3 → 4: descriptions (see descriptions.go), filled from the props
	// table by migrationFill[3]: no note is re-parsed.
	`
CREATE VIRTUAL TABLE descriptions_fts USING ` + DescriptionsTableArgs + `;
`,
	// 4 → 5: task fields (see Tasks in query.go). The columns start empty;
	// an index with notes is marked for a healing sync, which re-parses
	// every note and rewrites its tasks (see writer.relink).
	migrationTaskFields,
	// 5 → 6: Dataview inline fields. The table starts empty; an index
	// with notes is marked for a healing sync, which re-parses every note
	// and writes its fields (and its tasks: dates from [due:: …] fields).
	migrationInlineFields,
}

// migrationInlineFields adds the fields table: one row per Dataview
// inline field (Key:: value, [key:: value], (key:: value)) of an Obsidian
// note's body, value as written (typed by the reader, like frontmatter).
const migrationInlineFields = `
CREATE TABLE IF NOT EXISTS fields (
	note_id  INTEGER NOT NULL,
	key      TEXT NOT NULL,                -- as written
	key_norm TEXT NOT NULL,                -- lower-cased, spaces as '-' (markdown.NormalizeFieldKey)
	value    TEXT NOT NULL,                -- raw text, trimmed
	line     INTEGER NOT NULL
);
INSERT INTO meta(key, value) SELECT 'sync_incomplete', 'sync' WHERE EXISTS (SELECT 1 FROM notes)
	ON CONFLICT(key) DO NOTHING;
`

// migrationTaskFields adds the parsed fields of a task: its marker as
// written, its dates, priority and Logseq block id. Self-contained (it
// only alters tasks and sets the healing flag), so it can be renumbered.
const migrationTaskFields = `
ALTER TABLE tasks ADD COLUMN marker TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN due TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN scheduled TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN start TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN done TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN priority TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN block_uuid TEXT NOT NULL DEFAULT '';
INSERT INTO meta(key, value) SELECT 'sync_incomplete', 'sync' WHERE EXISTS (SELECT 1 FROM notes)
	ON CONFLICT(key) DO NOTHING;
`

// migrationFill[i], when set, runs in the transaction of migrations[i],
// after its SQL: data a migration derives in Go.
var migrationFill = map[int]func(context.Context, *sql.Tx) error{
	3: fillDescriptions,
}

// secondaryIndexes are created after the tables, on every read-write open
// (IF NOT EXISTS), and dropped during a bulk build from empty, where
// creating them once at the end is cheaper than maintaining them row by row.
// Recreating them on open means a bulk build interrupted by a crash heals.
var secondaryIndexes = []string{
	"CREATE INDEX IF NOT EXISTS notes_stem ON notes(stem_key)",
	"CREATE INDEX IF NOT EXISTS notes_title ON notes(title_key)",
	"CREATE INDEX IF NOT EXISTS notes_mtime ON notes(mtime)",
	"CREATE INDEX IF NOT EXISTS chunks_note ON chunks(note_id)",
	"CREATE INDEX IF NOT EXISTS links_src ON links(src_id)",
	"CREATE INDEX IF NOT EXISTS links_dst ON links(dst_id)",
	"CREATE INDEX IF NOT EXISTS tags_note ON tags(note_id)",
	"CREATE INDEX IF NOT EXISTS tags_key ON tags(tag_key)",
	"CREATE INDEX IF NOT EXISTS aliases_note ON aliases(note_id)",
	"CREATE INDEX IF NOT EXISTS aliases_key ON aliases(alias_key)",
	"CREATE INDEX IF NOT EXISTS props_note ON props(note_id)",
	"CREATE INDEX IF NOT EXISTS props_key ON props(key, value)",
	"CREATE INDEX IF NOT EXISTS tasks_note ON tasks(note_id)",
	"CREATE INDEX IF NOT EXISTS fields_note ON fields(note_id)",
	"CREATE INDEX IF NOT EXISTS blocks_note ON blocks(note_id)",
	"CREATE INDEX IF NOT EXISTS blocks_uuid ON blocks(uuid) WHERE uuid IS NOT NULL",
	"CREATE INDEX IF NOT EXISTS block_anchors_note ON block_anchors(note_id)",
	"CREATE INDEX IF NOT EXISTS chunk_vectors_note ON chunk_vectors(note_id)",
}

// childTables hold rows keyed by note_id that are rewritten on every re-index of a note.
// chunk_vectors and note_vectors only point into the vectors cache, which
// outlives them (a note changed back, or renamed, finds its vectors there).
var childTables = []string{"chunks", "links", "tags", "aliases", "props", "tasks", "fields", "blocks", "block_anchors", "chunk_vectors", "note_vectors"}
