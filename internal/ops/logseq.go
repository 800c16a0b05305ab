package ops

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
)

// BlockInfo is one Logseq block without its children.
type BlockInfo struct {
	UUID       string            `json:"uuid,omitempty" jsonschema:"the block's id:: uuid, when it has one (use it with get_block or ((uuid)) references)"`
	Content    string            `json:"content" jsonschema:"the block text without the bullet and property lines"`
	Properties map[string]string `json:"properties,omitempty" jsonschema:"the block's key:: value properties (id excluded)"`
	Line       int               `json:"line" jsonschema:"1-based line of the block's bullet"`
	// MoreChildren counts children left out by the depth limit.
	MoreChildren int `json:"more_children,omitempty" jsonschema:"number of child blocks not shown because of the depth limit"`
}

// BlockNode is a block with its nested children.
type BlockNode struct {
	BlockInfo
	Children []BlockNode `json:"children,omitempty"`
}

var (
	schemaOnce sync.Once
	schemaMap  map[reflect.Type]*jsonschema.Schema
)

// typeSchemas holds the schemas of types the generator cannot derive on its
// own: BlockNode is recursive, so its children are described by hand
// (Def.TypeSchemas of get_page and get_block).
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	schemaOnce.Do(func() {
		s, err := jsonschema.For[BlockInfo](nil)
		if err != nil {
			panic("ops: BlockInfo schema: " + err.Error())
		}
		s.Properties["children"] = &jsonschema.Schema{
			Type:        "array",
			Description: "child blocks, each of this same shape (uuid, content, properties, line, more_children, children)",
			Items:       &jsonschema.Schema{Type: "object"},
		}
		s.PropertyOrder = append(s.PropertyOrder, "children")
		schemaMap = map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[BlockNode](): s}
	})
	return schemaMap
}

// ListPagesIn is the input of list_pages.
type ListPagesIn struct {
	IncludeJournals bool   `json:"include_journals,omitempty" jsonschema:"also list journal pages, newest first after the pages (default false)"`
	Namespace       string `json:"namespace,omitempty" jsonschema:"only pages in this namespace: the page itself and pages named namespace/... (case-insensitive)"`
	Limit           int    `json:"limit,omitempty" jsonschema:"pages per call, 1-1000 (default 100)"`
	Cursor          string `json:"cursor,omitempty" jsonschema:"next_cursor from a previous call"`
	Vault           string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the limit.
func (in *ListPagesIn) Validate() error { return CheckLimit(in.Limit, 1000) }

// ListPagesOut is the output of list_pages.
type ListPagesOut struct {
	Pages      []index.PageInfo `json:"pages" jsonschema:"pages by name, then journals newest first"`
	Total      int              `json:"total" jsonschema:"number of pages matching, over all calls"`
	NextCursor string           `json:"next_cursor,omitempty" jsonschema:"pass as cursor to get the next pages"`
}

// GetPageIn is the input of get_page.
type GetPageIn struct {
	Name  string `json:"name,omitempty" jsonschema:"the page name (case-insensitive; aliases, namespaces like a/b and journal dates like 2026-11-20 work too)"`
	Path  string `json:"path,omitempty" jsonschema:"vault-relative path of the page file, instead of name"`
	Depth int    `json:"depth,omitempty" jsonschema:"levels of blocks to return: 1 = top-level blocks only (default: all levels)"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks that one page is named.
func (in *GetPageIn) Validate() error {
	switch {
	case strings.TrimSpace(in.Name) == "" && in.Path == "":
		return errs.New(errs.CodeInvalidInput, "pass name (the page name) or path")
	case in.Name != "" && in.Path != "":
		return errs.New(errs.CodeInvalidInput, "pass either name or path, not both")
	}
	return checkDepth(in.Depth)
}

// GetPageOut is the output of get_page.
type GetPageOut struct {
	Name       string         `json:"name" jsonschema:"the page name"`
	Path       string         `json:"path" jsonschema:"vault-relative path of the page file"`
	Kind       string         `json:"kind" jsonschema:"page or journal"`
	Match      string         `json:"match,omitempty" jsonschema:"how name was resolved: path, filename, alias or title"`
	Aliases    []string       `json:"aliases,omitempty" jsonschema:"alias:: names of the page"`
	Tags       []string       `json:"tags,omitempty" jsonschema:"tags of the page (tags:: and inline #tags)"`
	Properties map[string]any `json:"properties,omitempty" jsonschema:"page properties (the key:: value lines before the first block)"`
	Blocks     []BlockNode    `json:"blocks" jsonschema:"the block tree, in page order"`
	BlockCount int            `json:"block_count" jsonschema:"number of blocks in the whole page"`
}

// GetBlockIn is the input of get_block.
type GetBlockIn struct {
	UUID  string `json:"uuid" jsonschema:"the block uuid (its id:: property), with or without (( ))"`
	Depth int    `json:"depth,omitempty" jsonschema:"levels of children to return: 1 = direct children only (default: all levels)"`
	Vault string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func cleanUUID(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimSuffix(s, "))"), "((")
	return strings.TrimSpace(s)
}

// Validate checks the uuid's shape.
func (in *GetBlockIn) Validate() error {
	if !uuidRe.MatchString(cleanUUID(in.UUID)) {
		return errs.New(errs.CodeInvalidInput, "uuid %q is not a block uuid (like 6745a1b2-0000-4000-8000-000000000001)", in.UUID).With("uuid", in.UUID)
	}
	return checkDepth(in.Depth)
}

// BlockParent is an ancestor of a block.
type BlockParent struct {
	UUID    string `json:"uuid,omitempty" jsonschema:"the ancestor's uuid, if it has one"`
	Content string `json:"content" jsonschema:"the first 120 characters of the ancestor's text"`
	Line    int    `json:"line" jsonschema:"1-based line of the ancestor"`
}

// GetBlockOut is the output of get_block.
type GetBlockOut struct {
	UUID         string            `json:"uuid" jsonschema:"the block uuid"`
	Page         string            `json:"page" jsonschema:"vault-relative path of the page holding the block"`
	PageName     string            `json:"page_name" jsonschema:"name of that page"`
	Content      string            `json:"content" jsonschema:"the block text"`
	Properties   map[string]string `json:"properties,omitempty" jsonschema:"the block's properties (id excluded)"`
	Line         int               `json:"line" jsonschema:"1-based line of the block's bullet"`
	EndLine      int               `json:"end_line" jsonschema:"last line of the block itself (children excluded)"`
	Parents      []BlockParent     `json:"parents" jsonschema:"ancestors from the top-level block down to the direct parent"`
	Children     []BlockNode       `json:"children" jsonschema:"child blocks, nested"`
	ReferencedBy []index.BlockRef  `json:"referenced_by" jsonschema:"notes that reference this block with ((uuid))"`
}

func checkDepth(d int) error {
	if d < 0 || d > 100 {
		return errs.New(errs.CodeInvalidInput, "depth must be between 1 and 100").With("depth", d)
	}
	return nil
}

// logseqVault fails with not_logseq_graph when the vault holds no Logseq pages.
func logseqVault(ctx context.Context, env *Env, name string) (*VaultHandle, error) {
	vh, err := env.Vault(name)
	if err != nil {
		return nil, err
	}
	n, err := vh.Index.LogseqNoteCount(ctx)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errs.New(errs.CodeNotLogseqGraph, "vault %s holds no Logseq pages (no graph with logseq/config.edn and pages/ or journals/ was found, or it is not indexed yet)", vh.Name).With("vault", vh.Name)
	}
	return vh, nil
}

var journalDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// findPage resolves a page name (title, alias, file name, namespace, or a
// journal date) or a path to one Logseq page.
func findPage(ctx context.Context, vh *VaultHandle, name, p string) (*index.NoteInfo, string, error) {
	if p != "" {
		_, rel, err := vh.Vault.Abs(p)
		if err != nil {
			return nil, "", err
		}
		n, err := vh.Index.NoteByPath(ctx, rel)
		if err != nil {
			return nil, "", err
		}
		if n.Kind == "note" {
			return nil, "", errs.New(errs.CodeNotLogseqGraph, "%s is not a page of a Logseq graph (only pages/ and journals/ of a graph are outlines); use read_note", n.Path).With("path", n.Path)
		}
		return n, index.MatchPath, nil
	}
	r, _, err := RefTarget(name)
	if err != nil {
		return nil, "", err
	}
	lookup := func(t string) ([]index.NoteMatch, []index.NoteMatch, error) {
		ms, err := vh.Index.LookupNote(ctx, t)
		if err != nil {
			return nil, nil, err
		}
		var pages, others []index.NoteMatch
		for _, m := range ms {
			if m.Kind == "note" {
				others = append(others, m)
			} else {
				pages = append(pages, m)
			}
		}
		return pages, others, nil
	}
	pages, others, err := lookup(r.Target)
	if err != nil {
		return nil, "", err
	}
	if len(pages) == 0 && journalDate.MatchString(r.Target) {
		if pages, _, err = lookup(strings.ReplaceAll(r.Target, "-", "_")); err != nil {
			return nil, "", err
		}
	}
	best, ok := index.Best(pages)
	switch {
	case ok:
	case len(pages) > 0:
		return nil, "", Ambiguous(name, pages)
	default:
		e := errs.New(errs.CodeNotFound, "no Logseq page is named %q", name).With("name", name)
		if len(others) > 0 {
			paths := make([]string, len(others))
			for i, o := range others {
				paths[i] = o.Path
			}
			e = e.With("notes", paths)
			e.Message += " (regular notes match it: use read_note)"
		}
		if sim, err := similarPages(ctx, vh, r.Target); err == nil && len(sim) > 0 {
			e = e.With("suggestions", sim)
		}
		return nil, "", e
	}
	n, err := vh.Index.NoteByPath(ctx, best.Path)
	return n, best.Match, err
}

func similarPages(ctx context.Context, vh *VaultHandle, target string) ([]string, error) {
	pages, err := vh.Index.Pages(ctx, true, "")
	if err != nil {
		return nil, err
	}
	t := strings.ToLower(target)
	var out []string
	for _, p := range pages {
		if strings.Contains(strings.ToLower(p.Name), t) || strings.Contains(t, strings.ToLower(p.Name)) {
			out = append(out, p.Name)
			if len(out) == SuggestionCount {
				break
			}
		}
	}
	return out, nil
}

// blockTree builds the nested children of parent (-1 for the top level), down
// to depth levels (0 = all).
func blockTree(blocks []index.BlockRow, parent, depth int) []BlockNode {
	kids := map[int][]int{}
	for i, b := range blocks {
		kids[b.ParentSeq] = append(kids[b.ParentSeq], i)
	}
	var build func(p, level int) []BlockNode
	build = func(p, level int) []BlockNode {
		out := []BlockNode{}
		for _, i := range kids[p] {
			b := blocks[i]
			n := BlockNode{BlockInfo: BlockInfo{UUID: b.UUID, Content: b.Content, Properties: blockProps(b), Line: b.Line}}
			if depth == 0 || level < depth {
				n.Children = build(b.Seq, level+1)
				if len(n.Children) == 0 {
					n.Children = nil
				}
			} else {
				n.MoreChildren = len(kids[b.Seq])
			}
			out = append(out, n)
		}
		return out
	}
	return build(parent, 1)
}

func blockProps(b index.BlockRow) map[string]string {
	if len(b.Properties) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range b.Properties {
		if k == "id" && strings.EqualFold(v, b.UUID) {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func preview(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j]) + "…"
		}
		i++
	}
	return s
}

func registerLogseqOps(r *Registry) {
	register(r, ListPages())

	register(r, GetPage())

	register(r, GetBlock())
}

// ListPages is the list_pages operation.
func ListPages() Def[ListPagesIn, ListPagesOut] {
	return Def[ListPagesIn, ListPagesOut]{
		Name:  "list_pages",
		Title: "List Logseq pages",
		Description: "List the pages of the Logseq graph(s) in the vault, by name, with aliases and block counts; journals only with include_journals (newest first). " +
			"Filter by namespace (a/b pages); paginate with next_cursor. Fails with not_logseq_graph when the vault has no Logseq pages.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "pages", Text: textPages},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeNotLogseqGraph, errs.CodeVaultNotFound},
		Example:     `{"namespace": "graph", "limit": 50}`,
		Handler: func(ctx context.Context, env *Env, in *ListPagesIn) (*ListPagesOut, error) {
			vh, err := logseqVault(ctx, env, in.Vault)
			if err != nil {
				return nil, err
			}
			off, err := DecodeCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			pages, err := vh.Index.Pages(ctx, in.IncludeJournals, in.Namespace)
			if err != nil {
				return nil, err
			}
			out := &ListPagesOut{Total: len(pages)}
			out.Pages, out.NextCursor = Page(pages, off, OrDefault(in.Limit, 100))
			return out, nil
		},
	}
}

// GetPage is the get_page operation.
func GetPage() Def[GetPageIn, GetPageOut] {
	return Def[GetPageIn, GetPageOut]{
		Name:  "get_page",
		Title: "Get a Logseq page",
		Description: "A Logseq page as a block tree: page properties, aliases, tags and nested blocks, each with its uuid (if any), content, properties and line. " +
			"Find the page by name (case-insensitive; aliases, namespaces like a/b, journal dates like 2026-11-20) or by path; limit nesting with depth.",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "page", Args: []string{"name"}, Text: textPage},
		Errors:      []string{errs.CodeInvalidInput, errs.CodePathDenied, errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeNotLogseqGraph, errs.CodeVaultNotFound},
		Example:     `{"name": "Loci", "depth": 2}`,
		TypeSchemas: typeSchemas(),
		Handler: func(ctx context.Context, env *Env, in *GetPageIn) (*GetPageOut, error) {
			vh, err := logseqVault(ctx, env, in.Vault)
			if err != nil {
				return nil, err
			}
			n, match, err := findPage(ctx, vh, in.Name, in.Path)
			if err != nil {
				return nil, err
			}
			blocks, err := vh.Index.BlocksOf(ctx, n.ID)
			if err != nil {
				return nil, err
			}
			out := &GetPageOut{Name: n.Title, Path: n.Path, Kind: n.Kind, Match: match, Aliases: n.Aliases, Tags: n.Tags, Properties: n.Frontmatter, BlockCount: len(blocks)}
			out.Blocks = blockTree(blocks, -1, in.Depth)
			return out, nil
		},
	}
}

// GetBlock is the get_block operation.
func GetBlock() Def[GetBlockIn, GetBlockOut] {
	return Def[GetBlockIn, GetBlockOut]{
		Name:  "get_block",
		Title: "Get a Logseq block",
		Description: "A Logseq block by uuid (its id:: property): its text, properties and line, the page holding it, its parent chain (top-level block first) " +
			"and its nested children (limit with depth), plus the notes that reference it with ((uuid)).",
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		CLI:         CLI{Use: "block", Args: []string{"uuid"}, Text: textBlock},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeBlockNotFound, errs.CodeNotLogseqGraph, errs.CodeVaultNotFound},
		Example:     `{"uuid": "6745a1b2-0000-4000-8000-000000000001", "depth": 1}`,
		TypeSchemas: typeSchemas(),
		Handler: func(ctx context.Context, env *Env, in *GetBlockIn) (*GetBlockOut, error) {
			vh, err := logseqVault(ctx, env, in.Vault)
			if err != nil {
				return nil, err
			}
			uuid := cleanUUID(in.UUID)
			noteID, seq, err := vh.Index.BlockByUUID(ctx, uuid)
			if err != nil {
				return nil, err
			}
			blocks, err := vh.Index.BlocksOf(ctx, noteID)
			if err != nil {
				return nil, err
			}
			bySeq := map[int]index.BlockRow{}
			for _, b := range blocks {
				bySeq[b.Seq] = b
			}
			b, ok := bySeq[seq]
			if !ok {
				return nil, errs.New(errs.CodeBlockNotFound, "no block has id %s", uuid).With("uuid", uuid)
			}
			var pagePath, pageName string
			if err := vh.Index.DB.QueryRowContext(ctx, "SELECT path, title FROM notes WHERE id = ?", noteID).Scan(&pagePath, &pageName); err != nil {
				return nil, errs.New(errs.CodeBlockNotFound, "no block has id %s", uuid).With("uuid", uuid)
			}
			out := &GetBlockOut{UUID: b.UUID, Page: pagePath, PageName: pageName, Content: b.Content, Properties: blockProps(b), Line: b.Line, EndLine: b.EndLine, Parents: []BlockParent{}}
			for p, hops := b.ParentSeq, 0; p >= 0 && hops < len(blocks); hops++ {
				pb, ok := bySeq[p]
				if !ok {
					break
				}
				out.Parents = append([]BlockParent{{UUID: pb.UUID, Content: preview(pb.Content, 120), Line: pb.Line}}, out.Parents...)
				p = pb.ParentSeq
			}
			out.Children = blockTree(blocks, b.Seq, in.Depth)
			if out.ReferencedBy, err = vh.Index.BlockRefs(ctx, b.UUID); err != nil {
				return nil, err
			}
			return out, nil
		},
	}
}

func textPages(o any) string {
	out := o.(*ListPagesOut)
	var b strings.Builder
	for _, p := range out.Pages {
		fmt.Fprintf(&b, "%-40s  %4d blocks  %s\n", p.Name, p.Blocks, p.Path)
	}
	if out.NextCursor != "" {
		fmt.Fprintf(&b, "more: --cursor %s\n", out.NextCursor)
	}
	return b.String()
}

func writeBlocks(b *strings.Builder, nodes []BlockNode, level int) {
	for _, n := range nodes {
		indent := strings.Repeat("  ", level)
		content := strings.ReplaceAll(n.Content, "\n", "\n"+indent+"  ")
		fmt.Fprintf(b, "%s- %s", indent, content)
		if n.UUID != "" {
			fmt.Fprintf(b, "  ((%s))", n.UUID)
		}
		if n.MoreChildren > 0 {
			fmt.Fprintf(b, "  [+%d]", n.MoreChildren)
		}
		b.WriteString("\n")
		writeBlocks(b, n.Children, level+1)
	}
}

func textPage(o any) string {
	out := o.(*GetPageOut)
	var b strings.Builder
	fmt.Fprintf(&b, "%s  (%s, %d blocks)\n", out.Name, out.Path, out.BlockCount)
	writeBlocks(&b, out.Blocks, 0)
	return b.String()
}

func textBlock(o any) string {
	out := o.(*GetBlockOut)
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d  (%s)\n", out.Page, out.Line, out.PageName)
	for i, p := range out.Parents {
		fmt.Fprintf(&b, "%s- %s\n", strings.Repeat("  ", i), p.Content)
	}
	writeBlocks(&b, []BlockNode{{BlockInfo: BlockInfo{UUID: out.UUID, Content: out.Content}, Children: out.Children}}, len(out.Parents))
	if len(out.ReferencedBy) > 0 {
		b.WriteString("referenced by:\n")
		for _, r := range out.ReferencedBy {
			fmt.Fprintf(&b, "  %s:%d\n", r.Path, r.Line)
		}
	}
	return b.String()
}
