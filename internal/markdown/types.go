// Package markdown parses one Markdown note (Obsidian flavour or a Logseq outline
// page) into the structures loci indexes. It is pure: no I/O, no globals that
// change, safe for concurrent use, and it never panics on any input.
package markdown

// Doc is everything the index needs to know about one note.
type Doc struct {
	// Title is frontmatter `title` (or Logseq `title::`), else the first H1,
	// else the file name without extension (for Logseq: the page name).
	Title string `json:"title"`
	// TitleSource says where Title came from: "frontmatter", "property", "h1", "filename".
	TitleSource string `json:"title_source"`

	// Frontmatter holds the YAML frontmatter (or Logseq page properties) as
	// plain values: string, int64, float64, bool, nil, []any, map[string]any.
	// YAML timestamps and the keys id/created/updated keep their original text.
	Frontmatter map[string]any `json:"frontmatter,omitempty"`
	// FrontmatterKeys lists the top-level keys in file order.
	FrontmatterKeys []string `json:"frontmatter_keys,omitempty"`
	// FrontmatterError is set when the frontmatter block exists but is not valid
	// YAML (or not a mapping). The rest of the note is still parsed.
	FrontmatterError string `json:"frontmatter_error,omitempty"`
	// BodyLine is the 1-based line where the body starts (after frontmatter).
	BodyLine int `json:"body_line"`

	Aliases  []string  `json:"aliases,omitempty"`
	Tags     []Tag     `json:"tags,omitempty"`
	Headings []Heading `json:"headings,omitempty"`
	Chunks   []Chunk   `json:"chunks,omitempty"`
	Links    []Link    `json:"links,omitempty"`
	Tasks    []Task    `json:"tasks,omitempty"`
	// Fields are Dataview inline fields (Key:: value, [key:: value],
	// (key:: value)) of an Obsidian note's body, in file order; a Logseq
	// page has none (its key:: value lines are properties).
	Fields []Field `json:"fields,omitempty"`
	// BlockIDs are Obsidian `^block-id` anchors.
	BlockIDs []BlockID `json:"block_ids,omitempty"`
	// Blocks is the Logseq outline (only when Options.Logseq), in file order.
	Blocks []Block `json:"blocks,omitempty"`
}

// Tag is one tag occurrence. Name has no leading '#', keeps its case as written
// and uses '/' for nesting ("project/alpha").
type Tag struct {
	Name   string `json:"name"`
	Line   int    `json:"line"`   // 1-based; 0 for frontmatter-level tags
	Source string `json:"source"` // "frontmatter", "inline", "property"
}

// Heading is one ATX (or setext) heading.
type Heading struct {
	Level int    `json:"level"`
	Text  string `json:"text"`
	Line  int    `json:"line"`
}

// Chunk is a searchable section of the note: the text under one heading (split
// at paragraph boundaries when long), carrying the full heading path.
type Chunk struct {
	HeadingPath []string `json:"heading_path,omitempty"` // e.g. ["Install", "On Linux"]
	StartLine   int      `json:"start_line"`             // 1-based, inclusive
	EndLine     int      `json:"end_line"`               // 1-based, inclusive
	Text        string   `json:"text"`                   // body text (heading line itself excluded)
}

// Link kinds.
const (
	LinkWiki     = "wikilink" // [[Note]], [[Note|alias]], [[Note#H]], [[Note#^id]]
	LinkEmbed    = "embed"    // ![[Note]]
	LinkMarkdown = "markdown" // [text](Note.md) to a local file (not http/mailto/...)
	LinkTyped    = "typed"    // frontmatter key (or Logseq property) whose value is a wikilink
	LinkBlockRef = "blockref" // Logseq ((uuid))
	LinkTagRef   = "tag"      // Logseq #tag / #[[tag]] (a page reference in Logseq)
)

// Link is one outgoing reference.
type Link struct {
	Kind string `json:"kind"`
	// Target is the note part, as written, trimmed, without '#...' and without
	// '|alias' ("Folder/Note", "Note.md", "Note"). For blockref it is the uuid.
	// For markdown links it is the URL-decoded path, relative as written (left
	// encoded when decoding would yield a control character or invalid UTF-8).
	Target  string `json:"target"`
	Heading string `json:"heading,omitempty"`  // "#Heading" part without '#'
	BlockID string `json:"block_id,omitempty"` // "#^id" part without '#^'
	Display string `json:"display,omitempty"`  // |alias or markdown link text
	Key     string `json:"key,omitempty"`      // typed links: the frontmatter key / property name
	Line    int    `json:"line"`               // 1-based; typed links from YAML: line of the key if known, else 1
	// Context is the plain text of the sentence, list item or table row the
	// link sits in (links shown as their display text; at most
	// MaxContextSide bytes either side of the link). Set for wikilinks,
	// embeds and markdown links in the body: the anchor text the index
	// gives the target note. Not part of the JSON form.
	Context string `json:"-"`
}

// Task is a checkbox item (`- [ ] x`, `- [x] x`, any `[c]` status char) or a
// Logseq marker block (TODO/DOING/DONE/LATER/NOW/WAITING/CANCELED).
type Task struct {
	Line   int    `json:"line"`
	Status string `json:"status"` // "todo", "done", "cancelled", "in_progress", or the raw char/marker lower-cased
	Text   string `json:"text"`
	// Marker is the status as written: the checkbox character (" ", "x",
	// "-", ...) or the Logseq marker ("TODO", "DONE", ...).
	Marker string `json:"marker"`
	// Due, Scheduled, Start and Done are YYYY-MM-DD dates: Obsidian Tasks
	// emoji fields (📅 ⏳ 🛫 ✅), else Dataview inline fields on the task's
	// line ([due:: …], [scheduled:: …], [start:: …], [completion:: …]),
	// or Logseq DEADLINE / SCHEDULED lines.
	Due       string `json:"due,omitempty"`
	Scheduled string `json:"scheduled,omitempty"`
	Start     string `json:"start,omitempty"`
	Done      string `json:"done,omitempty"`
	// Priority is highest, high, medium, low or lowest (Obsidian Tasks
	// emoji; Logseq [#A] [#B] [#C] are high, medium, low).
	Priority string `json:"priority,omitempty"`
	// Block is the Logseq block's id:: property, when it has one.
	Block string `json:"block,omitempty"`
}

// BlockID is an Obsidian block anchor: a line ending in " ^id".
type BlockID struct {
	ID   string `json:"id"`
	Line int    `json:"line"`
}

// Block is one Logseq outline block.
type Block struct {
	UUID       string            `json:"uuid,omitempty"` // from `id::` property, empty if none
	Parent     int               `json:"parent"`         // index into Doc.Blocks, -1 for top level
	Depth      int               `json:"depth"`          // 0 for top level
	Line       int               `json:"line"`           // 1-based line of the "- " bullet
	EndLine    int               `json:"end_line"`       // last line of the block itself (not children)
	Content    string            `json:"content"`        // text without the bullet, without property lines, continuation lines joined with \n
	Properties map[string]string `json:"properties,omitempty"`
}

// Options tunes Parse.
type Options struct {
	// Path is the vault-relative path ("folder/Note.md"); used for the title
	// fallback and, for Logseq, the page name.
	Path string
	// Logseq parses the file as a Logseq outline page (pages/ and journals/ of a graph).
	Logseq bool
	// Journal marks a Logseq journal page (journals/yyyy_MM_dd.md).
	Journal bool
	// JournalFormats are the journal date patterns of the graph the file
	// is in (its logseq/config.edn): a journal's title is its file's date
	// in the title pattern. The zero value is Logseq's defaults.
	JournalFormats JournalFormats
	// MaxChunkChars splits sections longer than this at paragraph boundaries (default 1500).
	MaxChunkChars int
}
