package render

import (
	"github.com/yuin/goldmark/ast"
)

// The node kinds of Obsidian's and Logseq's syntax.
var (
	KindWikiLink  = ast.NewNodeKind("WikiLink")
	KindHighlight = ast.NewNodeKind("Highlight")
	KindTag       = ast.NewNodeKind("Tag")
	KindMath      = ast.NewNodeKind("Math")
	KindMathBlock = ast.NewNodeKind("MathBlock")
	KindBlockRef  = ast.NewNodeKind("BlockRef")
	KindCallout   = ast.NewNodeKind("Callout")
	KindMermaid   = ast.NewNodeKind("Mermaid")
	KindEmbed     = ast.NewNodeKind("EmbedBlock")
	KindOutline   = ast.NewNodeKind("OutlineBlock")
	KindSummary   = ast.NewNodeKind("OutlineSummary")
	KindComment   = ast.NewNodeKind("Comment")
	KindProp      = ast.NewNodeKind("Prop")
	KindTask      = ast.NewNodeKind("Task")
	KindCommentB  = ast.NewNodeKind("CommentBlock")
)

// WikiLink is [[target#heading|display]] or, with Embed, ![[...]].
type WikiLink struct {
	ast.BaseInline
	Target, Heading, Block, Display string
	Embed                           bool
	// UUID is a Logseq block embed's block ({{embed ((uuid))}}).
	UUID string

	// Filled by the resolving transformer.
	Href  string // a link's address ("" when it resolves to nothing)
	Media string // an embedded attachment's vault path
	Note  *Embedded
}

// Embedded is a note (or its section or block) rendered inside another.
type Embedded struct {
	Path, HTML, Error string
}

func (n *WikiLink) Kind() ast.NodeKind { return KindWikiLink }
func (n *WikiLink) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"Target": n.Target}, nil)
}
func (n *Highlight) Kind() ast.NodeKind         { return KindHighlight }
func (n *Highlight) Dump(src []byte, level int) { ast.DumpHelper(n, src, level, nil, nil) }
func (n *Tag) Kind() ast.NodeKind               { return KindTag }
func (n *Tag) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"Name": n.Name}, nil)
}
func (n *Math) Kind() ast.NodeKind { return KindMath }
func (n *Math) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"TeX": n.TeX}, nil)
}
func (n *MathBlock) Kind() ast.NodeKind         { return KindMathBlock }
func (n *MathBlock) Dump(src []byte, level int) { ast.DumpHelper(n, src, level, nil, nil) }
func (n *MathBlock) IsRaw() bool                { return true }
func (n *BlockRef) Kind() ast.NodeKind          { return KindBlockRef }
func (n *BlockRef) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"UUID": n.UUID}, nil)
}
func (n *Callout) Kind() ast.NodeKind { return KindCallout }
func (n *Callout) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"Type": n.Name}, nil)
}
func (n *Mermaid) Kind() ast.NodeKind                { return KindMermaid }
func (n *Mermaid) Dump(src []byte, level int)        { ast.DumpHelper(n, src, level, nil, nil) }
func (n *EmbedBlock) Kind() ast.NodeKind             { return KindEmbed }
func (n *EmbedBlock) Dump(src []byte, level int)     { ast.DumpHelper(n, src, level, nil, nil) }
func (n *OutlineBlock) Kind() ast.NodeKind           { return KindOutline }
func (n *OutlineBlock) Dump(src []byte, level int)   { ast.DumpHelper(n, src, level, nil, nil) }
func (n *OutlineSummary) Kind() ast.NodeKind         { return KindSummary }
func (n *OutlineSummary) Dump(src []byte, level int) { ast.DumpHelper(n, src, level, nil, nil) }

// Highlight is ==text==.
type Highlight struct{ ast.BaseInline }

// Tag is #tag (or Logseq's #[[tag with spaces]]).
type Tag struct {
	ast.BaseInline
	Name string
}

// Math is $tex$ (Display: $$tex$$ inside a line).
type Math struct {
	ast.BaseInline
	TeX     string
	Display bool
}

// MathBlock is a $$ ... $$ block.
type MathBlock struct {
	ast.BaseBlock
	TeX  string
	done bool
}

// BlockRef is Logseq's ((uuid)).
type BlockRef struct {
	ast.BaseInline
	UUID       string
	Page, Body string // resolved; Page "" when the block is not visible
}

// Callout is an Obsidian callout: > [!type]± Title.
type Callout struct {
	ast.BaseBlock
	Name, Title string
	Fold        byte // 0, '+' (foldable, open) or '-' (folded)
}

// Mermaid is a ```mermaid code block.
type Mermaid struct {
	ast.BaseBlock
	Code string
}

// EmbedBlock is a paragraph that holds one note embed: rendered as a
// block, not inside <p>.
type EmbedBlock struct {
	ast.BaseBlock
	Link *WikiLink
}

// OutlineBlock is a Logseq block with children: a <details> whose
// summary is the block's own text.
type OutlineBlock struct {
	ast.BaseBlock
	Collapsed bool
}

// OutlineSummary holds the block's own text inside an OutlineBlock.
type OutlineSummary struct{ ast.BaseBlock }

// Comment is %%text%%; CommentBlock a %% ... %% block. Neither is shown.
type Comment struct{ ast.BaseInline }

type CommentBlock struct {
	ast.BaseBlock
	done bool
}

func (n *Comment) Kind() ast.NodeKind              { return KindComment }
func (n *Comment) Dump(src []byte, level int)      { ast.DumpHelper(n, src, level, nil, nil) }
func (n *CommentBlock) Kind() ast.NodeKind         { return KindCommentB }
func (n *CommentBlock) Dump(src []byte, level int) { ast.DumpHelper(n, src, level, nil, nil) }
func (n *CommentBlock) IsRaw() bool                { return true }

// Prop is a Logseq block property (key:: value) other than id and
// collapsed.
type Prop struct {
	ast.BaseInline
	Key, Value string
}

func (n *Prop) Kind() ast.NodeKind { return KindProp }
func (n *Prop) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"Key": n.Key}, nil)
}

// Task is a Logseq block's TODO/DOING/DONE/... marker.
type Task struct {
	ast.BaseInline
	Marker string
}

func (n *Task) Kind() ast.NodeKind { return KindTask }
func (n *Task) Dump(src []byte, level int) {
	ast.DumpHelper(n, src, level, map[string]string{"Marker": n.Marker}, nil)
}
