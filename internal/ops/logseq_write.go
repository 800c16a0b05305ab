package ops

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/noteedit"
)

// CreatePageIn is the input of create_page.
type CreatePageIn struct {
	Name       string            `json:"name" jsonschema:"the page name; a/b makes a namespaced page (file a___b.md)"`
	Graph      string            `json:"graph,omitempty" jsonschema:"vault-relative folder of the Logseq graph, when the vault holds several (default: the first)"`
	Properties map[string]string `json:"properties,omitempty" cli:"property" jsonschema:"page properties, written as key:: value lines at the top"`
	Blocks     []string          `json:"blocks,omitempty" cli:"block" jsonschema:"top-level blocks, in order: each one's text without the bullet (several lines allowed)"`
	WriteOpts
}

// Validate checks the name and the properties.
func (in *CreatePageIn) Validate() error {
	if _, err := pageFileName(in.Name); err != nil {
		return err
	}
	if err := noteedit.CheckProps(in.Properties, false); err != nil {
		return err
	}
	return in.Check()
}

// UpdatePageIn is the input of update_page.
type UpdatePageIn struct {
	Name       string            `json:"name,omitempty" jsonschema:"the page name (case-insensitive; aliases and journal dates like 2026-11-20 work too)"`
	Path       string            `json:"path,omitempty" jsonschema:"vault-relative path of the page file, instead of name"`
	Append     []string          `json:"append,omitempty" cli:"append" jsonschema:"top-level blocks to add at the end of the page: each one's text without the bullet"`
	Properties map[string]string `json:"properties,omitempty" cli:"property" jsonschema:"page properties to set; an empty value removes the property"`
	Guard
	WriteOpts
}

// Validate checks that there is a page and a change.
func (in *UpdatePageIn) Validate() error {
	if err := onePage(in.Name, in.Path); err != nil {
		return err
	}
	if len(in.Append) == 0 && len(in.Properties) == 0 {
		return errs.New(errs.CodeInvalidInput, "nothing to change: pass append and/or properties")
	}
	if err := noteedit.CheckProps(in.Properties, false); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// DeletePageIn is the input of delete_page.
type DeletePageIn struct {
	Name string `json:"name,omitempty" jsonschema:"the page name (case-insensitive; aliases and journal dates work too)"`
	Path string `json:"path,omitempty" jsonschema:"vault-relative path of the page file, instead of name"`
	Guard
	WriteOpts
}

// Validate checks the page.
func (in *DeletePageIn) Validate() error {
	if err := onePage(in.Name, in.Path); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// BlockAnchor says where a block goes: in a page, under a parent block, or
// beside a sibling.
type BlockAnchor struct {
	Page     string `json:"page,omitempty" jsonschema:"the page (by name) to put the block in, at its top level"`
	Path     string `json:"path,omitempty" jsonschema:"the page file (vault-relative path), instead of page"`
	Parent   string `json:"parent,omitempty" jsonschema:"uuid of the block to put it under, as a child"`
	Sibling  string `json:"sibling,omitempty" jsonschema:"uuid of the block to put it next to"`
	Position string `json:"position,omitempty" jsonschema:"first or last (default) among the page's or parent's blocks; before or after (default) the sibling"`
}

func (a *BlockAnchor) check() error {
	n := 0
	for _, s := range []string{a.Page + a.Path, a.Parent, a.Sibling} {
		if s != "" {
			n++
		}
	}
	if n != 1 || (a.Page != "" && a.Path != "") {
		return errs.New(errs.CodeInvalidInput, "say where the block goes with exactly one of page (or path), parent or sibling")
	}
	for _, u := range []string{a.Parent, a.Sibling} {
		if u != "" && !uuidRe.MatchString(cleanUUID(u)) {
			return errs.New(errs.CodeInvalidInput, "%q is not a block uuid", u).With("uuid", u)
		}
	}
	switch a.Position {
	case "":
		if a.Sibling != "" {
			a.Position = "after"
		} else {
			a.Position = "last"
		}
	case "first", "last":
		if a.Sibling != "" {
			return errs.New(errs.CodeInvalidInput, "with sibling, position is before or after")
		}
	case "before", "after":
		if a.Sibling == "" {
			return errs.New(errs.CodeInvalidInput, "with page or parent, position is first or last")
		}
	default:
		return errs.New(errs.CodeInvalidInput, "position must be first, last, before or after, not %q", a.Position)
	}
	return nil
}

// CreateBlockIn is the input of create_block.
type CreateBlockIn struct {
	BlockAnchor
	Content    string            `json:"content" jsonschema:"the block's text without the bullet (several lines allowed; a line starting with - makes a child block)"`
	Properties map[string]string `json:"properties,omitempty" cli:"property" jsonschema:"block properties (key:: value lines); an id:: uuid is always added so the block can be addressed"`
	Guard
	WriteOpts
}

// Validate checks the anchor and the properties.
func (in *CreateBlockIn) Validate() error {
	if err := in.BlockAnchor.check(); err != nil {
		return err
	}
	if err := noteedit.CheckProps(in.Properties, false); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// UpdateBlockIn is the input of update_block.
type UpdateBlockIn struct {
	UUID             string            `json:"uuid" jsonschema:"the block's uuid (its id:: property)"`
	Content          string            `json:"content,omitempty" jsonschema:"the block's new text without the bullet (default: keep it); its properties and children stay"`
	Properties       map[string]string `json:"properties,omitempty" cli:"property" jsonschema:"properties to set; an empty value removes one (id:: cannot be changed)"`
	RemoveProperties []string          `json:"remove_properties,omitempty" cli:"remove-property" jsonschema:"properties to remove"`
	Guard
	WriteOpts
}

// Validate checks the uuid and that something changes.
func (in *UpdateBlockIn) Validate() error {
	if !uuidRe.MatchString(cleanUUID(in.UUID)) {
		return errs.New(errs.CodeInvalidInput, "%q is not a block uuid", in.UUID).With("uuid", in.UUID)
	}
	if in.Content == "" && len(in.Properties) == 0 && len(in.RemoveProperties) == 0 {
		return errs.New(errs.CodeInvalidInput, "nothing to change: pass content, properties or remove_properties")
	}
	if err := noteedit.CheckProps(in.Properties, false); err != nil {
		return err
	}
	for _, k := range in.RemoveProperties {
		if err := noteedit.CheckProps(map[string]string{k: ""}, false); err != nil {
			return err
		}
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// DeleteBlockIn is the input of delete_block.
type DeleteBlockIn struct {
	UUID string `json:"uuid" jsonschema:"the block's uuid; its children are deleted with it"`
	Guard
	WriteOpts
}

// Validate checks the uuid.
func (in *DeleteBlockIn) Validate() error {
	if !uuidRe.MatchString(cleanUUID(in.UUID)) {
		return errs.New(errs.CodeInvalidInput, "%q is not a block uuid", in.UUID).With("uuid", in.UUID)
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// MoveBlockIn is the input of move_block.
type MoveBlockIn struct {
	UUID string `json:"uuid" jsonschema:"the block to move (with its children); its uuid and every id:: below it stay"`
	BlockAnchor
	Guard
	WriteOpts
}

// Validate checks the uuid and the anchor.
func (in *MoveBlockIn) Validate() error {
	if !uuidRe.MatchString(cleanUUID(in.UUID)) {
		return errs.New(errs.CodeInvalidInput, "%q is not a block uuid", in.UUID).With("uuid", in.UUID)
	}
	if err := in.BlockAnchor.check(); err != nil {
		return err
	}
	if _, err := in.Etag(); err != nil {
		return err
	}
	return in.Check()
}

// BlockWriteOut is the output of the block operations.
type BlockWriteOut struct {
	WriteResult
	UUID string `json:"uuid" jsonschema:"the block's uuid (for create_block: the new block's)"`
	Line int    `json:"line,omitempty" jsonschema:"1-based line of the block in its page after the change"`
}

func onePage(name, p string) error {
	switch {
	case strings.TrimSpace(name) == "" && p == "":
		return errs.New(errs.CodeInvalidInput, "pass name (the page name) or path")
	case name != "" && p != "":
		return errs.New(errs.CodeInvalidInput, "pass either name or path, not both")
	}
	return nil
}

// pageFileName turns a page name into its file name, as Logseq does with
// :file/name-format :triple-lowbar ("a/b" → "a___b.md"; characters file
// systems refuse are percent-encoded).
func pageFileName(name string) (string, error) {
	n := strings.TrimSpace(name)
	bad := func(why string) (string, error) {
		return "", errs.New(errs.CodeInvalidInput, "page name %q %s", name, why).With("name", name)
	}
	switch {
	case n == "":
		return bad("is empty")
	case strings.HasPrefix(n, "."):
		return bad("starts with a dot")
	case strings.ContainsAny(n, "\\"):
		return bad("contains a backslash")
	case len(n) > 200:
		return bad("is too long")
	}
	var b strings.Builder
	for _, r := range n {
		switch {
		case unicode.IsControl(r):
			return bad("contains a control character")
		case strings.ContainsRune(`<>:"|?*`, r):
			fmt.Fprintf(&b, "%%%02X", r)
		case r == '/':
			b.WriteString("___")
		default:
			b.WriteRune(r)
		}
	}
	for _, seg := range strings.Split(n, "/") {
		if strings.TrimSpace(seg) == "" {
			return bad("has an empty namespace part")
		}
	}
	return b.String() + ".md", nil
}

// logseqErrors are the error codes of the Logseq block writes.
var logseqErrors = WithErrors(errs.CodeNotFound, errs.CodeAmbiguous, errs.CodeNotLogseqGraph, errs.CodeBlockNotFound, errs.CodeInvalidUTF8)

func registerLogseqWrites(r *Registry) {
	register(r, CreatePage())
	register(r, UpdatePage())
	register(r, DeletePage())
	register(r, CreateBlock())
	register(r, UpdateBlock())
	register(r, DeleteBlock())
	register(r, MoveBlock())
}

// pageGraph picks the graph a new page goes into.
func pageGraph(vh *VaultHandle, graph string) (string, error) {
	gs := vh.Vault.Graphs()
	if len(gs) == 0 {
		return "", errs.New(errs.CodeNotLogseqGraph, "vault %s holds no Logseq graph (no logseq/config.edn)", vh.Name).With("vault", vh.Name)
	}
	if graph == "" {
		return gs[0], nil
	}
	g := strings.Trim(strings.ReplaceAll(graph, "\\", "/"), "/")
	for _, x := range gs {
		if strings.EqualFold(x, g) {
			return x, nil
		}
	}
	return "", errs.New(errs.CodeInvalidInput, "no Logseq graph at %q", graph).With("graphs", gs)
}

func createPage(ctx context.Context, env *Env, in *CreatePageIn) (*WriteResult, error) {
	vh, w, err := WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	g, err := pageGraph(vh, in.Graph)
	if err != nil {
		return nil, err
	}
	file, _ := pageFileName(in.Name)
	rel := path.Join(g, "pages", file)
	if rel, _, err = w.Target(rel); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(in.Name)
	if ms, err := vh.Index.LookupNote(ctx, strings.ToLower(name)); err == nil {
		for _, m := range ms {
			if m.Kind != "note" && (m.Match == index.MatchPath || m.Match == "title" || m.Match == "alias" || m.Match == "filename") {
				return nil, errs.New(errs.CodeConflict, "a page named %q exists already: %s", name, m.Path).With("path", m.Path)
			}
		}
	}
	return Idempotent(ctx, env, vh, "create_page", in, &in.WriteOpts, func() (*WriteResult, error) {
		return RunWrite(ctx, env, WriteSpec{Op: "create_page", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, Build: func(s *Stage) error {
			f, err := s.Read(rel)
			if err != nil {
				return err
			}
			if f.Exists {
				return errs.New(errs.CodeConflict, "%s already exists", rel).With("path", rel).With("current_etag", f.Etag)
			}
			var lines []string
			keys := make([]string, 0, len(in.Properties))
			for k := range in.Properties {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				lines = append(lines, strings.TrimRight(k+":: "+in.Properties[k], " "))
			}
			if len(lines) > 0 && len(in.Blocks) > 0 {
				lines = append(lines, "")
			}
			for _, b := range in.Blocks {
				lines = append(lines, blockLines("", b, nil, "")...)
			}
			if len(lines) == 0 {
				lines = []string{"-"}
			}
			s.Main = rel
			s.Create(rel, strings.Join(lines, "\n")+"\n")
			return nil
		}})
	})
}

// pageFor resolves a page by name or path and checks it may be written.
func pageFor(ctx context.Context, env *Env, vault, name, p string) (*VaultHandle, string, error) {
	vh, err := logseqVault(ctx, env, vault)
	if err != nil {
		return nil, "", err
	}
	w, err := env.Writer(vh)
	if err != nil {
		return nil, "", err
	}
	if p != "" {
		if _, _, err := w.Target(p); err != nil {
			return nil, "", err
		}
	}
	n, _, err := findPage(ctx, vh, name, p)
	if err != nil {
		return nil, "", err
	}
	rel, _, err := w.Target(n.Path)
	return vh, rel, err
}

func updatePage(ctx context.Context, env *Env, in *UpdatePageIn) (*WriteResult, error) {
	vh, rel, err := pageFor(ctx, env, in.Vault, in.Name, in.Path)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	return Idempotent(ctx, env, vh, "update_page", in, &in.WriteOpts, func() (*WriteResult, error) {
		return RunWrite(ctx, env, WriteSpec{Op: "update_page", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *Stage) error {
			f, d, err := readOutline(s, rel, want)
			if err != nil {
				return err
			}
			keys := make([]string, 0, len(in.Properties))
			for k := range in.Properties {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				v := in.Properties[k]
				switch {
				case noteedit.HasFrontmatter(d.Lines) && v == "":
					if d.Lines, _, err = noteedit.DeleteKey(d.Lines, rel, k); err != nil {
						return err
					}
				case noteedit.HasFrontmatter(d.Lines):
					if d.Lines, err = noteedit.SetKey(d.Lines, rel, k, v); err != nil {
						return err
					}
				case v == "":
					d.Lines = noteedit.DeleteProperty(d.Lines, k)
				default:
					if err := d.SetProperty(k, v); err != nil {
						return err
					}
				}
			}
			if len(in.Append) > 0 {
				d.reparse()
				at, indent := d.insertAt(-1, -1, "last")
				var add []string
				for _, b := range in.Append {
					add = append(add, blockLines(indent, b, nil, "")...)
				}
				// A page holding only the empty placeholder block gets it replaced.
				if kids := d.children(-1); len(kids) == 1 && strings.TrimSpace(strings.TrimLeft(d.Lines[d.blocks[kids[0]].line], " \t-")) == "" &&
					d.blocks[kids[0]].subEnd == d.blocks[kids[0]].line+1 {
					d.Lines = noteedit.Splice(d.Lines, d.blocks[kids[0]].line, at, add)
				} else {
					d.Lines = noteedit.Splice(d.Lines, at, at, add)
				}
			}
			if len(d.Lines) > 0 {
				d.EOL = d.EOL || f.Text == ""
			}
			s.Main = rel
			s.Put(f, d.Text())
			return nil
		}})
	})
}

func deletePage(ctx context.Context, env *Env, in *DeletePageIn) (*WriteResult, error) {
	vh, rel, err := pageFor(ctx, env, in.Vault, in.Name, in.Path)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	return Idempotent(ctx, env, vh, "delete_page", in, &in.WriteOpts, func() (*WriteResult, error) {
		return RunWrite(ctx, env, WriteSpec{Op: "delete_page", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *Stage) error {
			f, err := s.Read(rel)
			if err != nil {
				return err
			}
			if !f.Exists {
				return errs.New(errs.CodeNotFound, "page file not found: %s", rel).With("path", rel)
			}
			if err := CheckGuard(f, want); err != nil {
				return err
			}
			s.Main = rel
			if err := s.Trash(f); err != nil {
				return err
			}
			s.Warnings = append(s.Warnings, InboundWarning(ctx, vh, rel)...)
			return nil
		}})
	})
}

// readOutline reads a page for an edit: its text (refused if its etag is not
// want, when want is set) and its parsed outline.
func readOutline(s *Stage, rel, want string) (*NoteFile, *outlineDoc, error) {
	f, err := s.ReadGuarded(rel, want)
	if err != nil {
		return nil, nil, err
	}
	return f, newOutline(rel, f.Text), nil
}

// blockPage finds the page file holding a block (from the index).
func blockPage(ctx context.Context, env *Env, vault, uuid string) (*VaultHandle, string, error) {
	vh, err := logseqVault(ctx, env, vault)
	if err != nil {
		return nil, "", err
	}
	uuid = cleanUUID(uuid)
	noteID, _, err := vh.Index.BlockByUUID(ctx, uuid)
	if err != nil {
		return nil, "", err
	}
	var p string
	if err := vh.Index.DB.QueryRowContext(ctx, "SELECT path FROM notes WHERE id = ?", noteID).Scan(&p); err != nil {
		return nil, "", errs.New(errs.CodeBlockNotFound, "no block has id %s", uuid).With("uuid", uuid)
	}
	w, err := env.Writer(vh)
	if err != nil {
		return nil, "", err
	}
	rel, _, err := w.Target(p)
	return vh, rel, err
}

// findBlock locates a block in a page read under its lock.
func findBlock(d *outlineDoc, uuid string) (int, error) {
	i, ok := d.find(cleanUUID(uuid))
	if !ok {
		return 0, errs.New(errs.CodeBlockNotFound, "block %s is no longer in %s (the page changed since it was indexed); read it again", cleanUUID(uuid), d.Rel).
			With("uuid", cleanUUID(uuid)).With("path", d.Rel)
	}
	return i, nil
}

// anchorPage resolves a block anchor to its page file.
func anchorPage(ctx context.Context, env *Env, vault string, a *BlockAnchor) (*VaultHandle, string, error) {
	switch {
	case a.Parent != "":
		return blockPage(ctx, env, vault, a.Parent)
	case a.Sibling != "":
		return blockPage(ctx, env, vault, a.Sibling)
	}
	return pageFor(ctx, env, vault, a.Page, a.Path)
}

// anchorAt returns where a block goes in d, and its indentation.
func anchorAt(d *outlineDoc, a *BlockAnchor) (int, string, error) {
	parent, sibling := -1, -1
	switch {
	case a.Parent != "":
		i, err := findBlock(d, a.Parent)
		if err != nil {
			return 0, "", err
		}
		parent = i
	case a.Sibling != "":
		i, err := findBlock(d, a.Sibling)
		if err != nil {
			return 0, "", err
		}
		sibling = i
	}
	at, indent := d.insertAt(parent, sibling, a.Position)
	return at, indent, nil
}

func createBlock(ctx context.Context, env *Env, in *CreateBlockIn) (*BlockWriteOut, error) {
	vh, rel, err := anchorPage(ctx, env, in.Vault, &in.BlockAnchor)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	uuid := newUUID()
	return Idempotent(ctx, env, vh, "create_block", in, &in.WriteOpts, func() (*BlockWriteOut, error) {
		line := 0
		res, err := RunWrite(ctx, env, WriteSpec{Op: "create_block", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *Stage) error {
			f, d, err := readOutline(s, rel, want)
			if err != nil {
				return err
			}
			at, indent, err := anchorAt(d, &in.BlockAnchor)
			if err != nil {
				return err
			}
			if at > 0 && at == len(d.Lines) && len(d.Lines) > 0 && !d.EOL {
				d.EOL = true
			}
			d.Lines = noteedit.Splice(d.Lines, at, at, blockLines(indent, in.Content, in.Properties, uuid))
			line = at + 1
			s.Main = rel
			s.Put(f, d.Text())
			return nil
		}})
		if err != nil {
			return nil, err
		}
		return &BlockWriteOut{WriteResult: *res, UUID: uuid, Line: line}, nil
	})
}

func updateBlock(ctx context.Context, env *Env, in *UpdateBlockIn) (*BlockWriteOut, error) {
	vh, rel, err := blockPage(ctx, env, in.Vault, in.UUID)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	uuid := strings.ToLower(cleanUUID(in.UUID))
	return Idempotent(ctx, env, vh, "update_block", in, &in.WriteOpts, func() (*BlockWriteOut, error) {
		line := 0
		res, err := RunWrite(ctx, env, WriteSpec{Op: "update_block", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *Stage) error {
			f, d, err := readOutline(s, rel, want)
			if err != nil {
				return err
			}
			i, err := findBlock(d, uuid)
			if err != nil {
				return err
			}
			b := d.blocks[i]
			d.Lines = noteedit.Splice(d.Lines, b.line, b.end, rewriteBlock(d.Lines[b.line:b.end], b.indent, in))
			line = b.line + 1
			s.Main = rel
			s.Put(f, d.Text())
			return nil
		}})
		if err != nil {
			return nil, err
		}
		return &BlockWriteOut{WriteResult: *res, UUID: uuid, Line: line}, nil
	})
}

// rewriteBlock returns a block's own lines with new text and/or properties.
// Lines that do not change keep their bytes; id:: is never touched.
func rewriteBlock(own []string, indent string, in *UpdateBlockIn) []string {
	first := own[0]
	afterBullet := strings.TrimPrefix(strings.TrimPrefix(first[len(indent):], "-"), " ")
	type prop struct {
		key, line string
	}
	var props []prop
	k := 1
	firstIsProp := false
	if key, _, ok := noteedit.PropLine(afterBullet); ok {
		firstIsProp = true
		props = append(props, prop{key, indent + "  " + strings.TrimLeft(afterBullet, " \t")})
	}
	for ; k < len(own); k++ {
		key, _, ok := noteedit.PropLine(own[k])
		if !ok {
			break
		}
		props = append(props, prop{key, own[k]})
	}
	body := own[k:]
	// Properties: set in place, add new ones sorted, drop removed ones.
	remove := map[string]bool{}
	for _, r := range in.RemoveProperties {
		remove[strings.ToLower(r)] = true
	}
	var newKeys []string
	for key, v := range in.Properties {
		if v == "" {
			remove[strings.ToLower(key)] = true
			continue
		}
		found := false
		for j := range props {
			if strings.EqualFold(props[j].key, key) {
				props[j].line = indent + "  " + props[j].key + ":: " + v
				found = true
			}
		}
		if !found {
			newKeys = append(newKeys, key)
		}
	}
	sort.Strings(newKeys)
	var kept []string
	for _, p := range props {
		if remove[strings.ToLower(p.key)] && !strings.EqualFold(p.key, "id") {
			continue
		}
		kept = append(kept, p.line)
	}
	// New properties go before id:: (Logseq's order).
	var added []string
	for _, key := range newKeys {
		added = append(added, indent+"  "+key+":: "+in.Properties[key])
	}
	idAt := len(kept)
	for j, l := range kept {
		if key, _, _ := noteedit.PropLine(l); strings.EqualFold(key, "id") {
			idAt = j
		}
	}
	kept = append(kept[:idAt], append(added, kept[idAt:]...)...)
	var head string
	if in.Content != "" {
		text := noteedit.ContentLines(in.Content)
		head = strings.TrimRight(indent+"- "+text[0], " ")
		body = nil
		for _, l := range text[1:] {
			if l == "" {
				body = append(body, "")
			} else {
				body = append(body, indent+"  "+l)
			}
		}
	} else if firstIsProp {
		// A block made only of properties keeps its first one on the bullet line.
		if len(kept) == 0 {
			head = indent + "-"
		} else {
			head = indent + "- " + strings.TrimLeft(kept[0], " \t")
			kept = kept[1:]
		}
	} else {
		head = first
	}
	out := append([]string{head}, kept...)
	return append(out, body...)
}

func deleteBlock(ctx context.Context, env *Env, in *DeleteBlockIn) (*BlockWriteOut, error) {
	vh, rel, err := blockPage(ctx, env, in.Vault, in.UUID)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	uuid := strings.ToLower(cleanUUID(in.UUID))
	return Idempotent(ctx, env, vh, "delete_block", in, &in.WriteOpts, func() (*BlockWriteOut, error) {
		res, err := RunWrite(ctx, env, WriteSpec{Op: "delete_block", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, GuardPath: rel, GuardEtag: want, Build: func(s *Stage) error {
			f, d, err := readOutline(s, rel, want)
			if err != nil {
				return err
			}
			i, err := findBlock(d, uuid)
			if err != nil {
				return err
			}
			b := d.blocks[i]
			for k := i; k < len(d.blocks) && d.blocks[k].line < b.subEnd; k++ {
				if u := d.blocks[k].uuid; u != "" {
					if refs, err := vh.Index.BlockRefs(ctx, u); err == nil && len(refs) > 0 {
						var at []string
						for _, r := range refs {
							at = append(at, fmt.Sprintf("%s:%d", r.Path, r.Line))
						}
						s.Warnings = append(s.Warnings, fmt.Sprintf("block %s is referenced by ((%s)) at %s; those references will be broken", u, u, strings.Join(at, ", ")))
					}
				}
			}
			d.Lines = noteedit.Splice(d.Lines, b.line, b.subEnd, nil)
			s.Main = rel
			s.Put(f, d.Text())
			return nil
		}})
		if err != nil {
			return nil, err
		}
		return &BlockWriteOut{WriteResult: *res, UUID: uuid}, nil
	})
}

func moveBlock(ctx context.Context, env *Env, in *MoveBlockIn) (*BlockWriteOut, error) {
	_, dst, err := anchorPage(ctx, env, in.Vault, &in.BlockAnchor)
	if err != nil {
		return nil, err
	}
	vh, src, err := blockPage(ctx, env, in.Vault, in.UUID)
	if err != nil {
		return nil, err
	}
	want, _ := in.Etag()
	uuid := strings.ToLower(cleanUUID(in.UUID))
	return Idempotent(ctx, env, vh, "move_block", in, &in.WriteOpts, func() (*BlockWriteOut, error) {
		line := 0
		res, err := RunWrite(ctx, env, WriteSpec{Op: "move_block", Vault: vh, Opts: &in.WriteOpts, Locks: []string{src, dst}, GuardPath: src, GuardEtag: want, Build: func(s *Stage) error {
			sf, err := s.ReadText(src)
			if err != nil {
				return err
			}
			if err := CheckGuard(sf, want); err != nil {
				return err
			}
			sd := newOutline(src, sf.Text)
			i, err := findBlock(sd, uuid)
			if err != nil {
				return err
			}
			b := sd.blocks[i]
			inside := map[string]bool{}
			for k := i; k < len(sd.blocks) && sd.blocks[k].line < b.subEnd; k++ {
				if u := sd.blocks[k].uuid; u != "" {
					inside[u] = true
				}
			}
			for _, u := range []string{in.Parent, in.Sibling} {
				if u != "" && inside[strings.ToLower(cleanUUID(u))] && src == dst {
					return errs.New(errs.CodeConflict, "block %s cannot move next to or under itself or one of its children", uuid).With("uuid", uuid)
				}
			}
			// Cut the subtree, then place it in the target (re-parsed after the cut).
			rest := newOutline(src, sf.Text)
			rest.Lines = noteedit.Splice(rest.Lines, b.line, b.subEnd, nil)
			rest.reparse()
			td, tf := rest, sf
			if dst != src {
				if tf, err = s.ReadText(dst); err != nil {
					return err
				}
				td = newOutline(dst, tf.Text)
			}
			at, indent, err := anchorAt(td, &in.BlockAnchor)
			if err != nil {
				return err
			}
			if at == len(td.Lines) && len(td.Lines) > 0 {
				td.EOL = true
			}
			td.Lines = noteedit.Splice(td.Lines, at, at, sd.subtree(i, indent, td.unit))
			line = at + 1
			s.Main = src
			if dst != src {
				s.Put(sf, rest.Text())
				s.Put(tf, td.Text())
				s.Main = dst
			} else {
				s.Put(sf, td.Text())
			}
			return nil
		}})
		if err != nil {
			return nil, err
		}
		return &BlockWriteOut{WriteResult: *res, UUID: uuid, Line: line}, nil
	})
}

// textBlockWrite is TextWrite with the block's uuid and line.
func textBlockWrite(o any) string {
	var b strings.Builder
	if bo, ok := o.(*BlockWriteOut); ok && bo.UUID != "" {
		fmt.Fprintf(&b, "block %s", bo.UUID)
		if bo.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", bo.Line)
		}
		b.WriteString("\n")
	}
	return TextWriteWith(o, b.String())
}

// CreatePage is the create_page operation.
func CreatePage() Def[CreatePageIn, WriteResult] {
	return Def[CreatePageIn, WriteResult]{
		Name:  "create_page",
		Title: "Create a Logseq page",
		Description: "Create a page in the vault's Logseq graph (pages/ folder; namespaces a/b become a___b.md) with page properties and top-level blocks. " +
			"Fails with conflict when a page of that name (or alias) exists. Preview by default.",
		Annotations: Annotations{},
		CLI:         CLI{Use: "create-page", Args: []string{"name"}, Text: TextWrite, Short: "Create a Logseq page (preview; --apply writes it)"},
		Errors:      logseqErrors,
		Example:     `{"name": "Reading/2026", "properties": {"tags": "reading"}, "blocks": ["How to Take Smart Notes", "The Art of Doing Science"]}`,
		Toolset:     ToolsetWrites,
		Handler:     createPage,
	}
}

// UpdatePage is the update_page operation.
func UpdatePage() Def[UpdatePageIn, WriteResult] {
	return Def[UpdatePageIn, WriteResult]{
		Name:  "update_page",
		Title: "Update a Logseq page",
		Description: "Append top-level blocks to a Logseq page and/or set or remove its page properties (key:: value lines; an empty value removes one). " +
			"The rest of the file keeps its bytes. Preview by default.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "update-page", Args: []string{"name"}, Text: TextWrite, Short: "Append blocks to a Logseq page or set its properties (preview; --apply writes it)"},
		Errors:      logseqErrors,
		Example:     `{"name": "Loci", "append": ["Tried the write operations"], "properties": {"status": "active"}}`,
		Toolset:     ToolsetWrites,
		Handler:     updatePage,
	}
}

// DeletePage is the delete_page operation.
func DeletePage() Def[DeletePageIn, WriteResult] {
	return Def[DeletePageIn, WriteResult]{
		Name:        "delete_page",
		Title:       "Delete a Logseq page",
		Description: "Move a Logseq page's file to the vault's .trash/ folder; the result warns about pages that still reference it. Undo restores it. Preview by default.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "delete-page", Args: []string{"name"}, Text: TextWrite, Short: "Move a Logseq page to .trash/ (preview; --apply does it)"},
		Errors:      logseqErrors,
		Example:     `{"name": "graph/design"}`,
		Toolset:     ToolsetWrites,
		Handler:     deletePage,
	}
}

// CreateBlock is the create_block operation.
func CreateBlock() Def[CreateBlockIn, BlockWriteOut] {
	return Def[CreateBlockIn, BlockWriteOut]{
		Name:  "create_block",
		Title: "Create a Logseq block",
		Description: "Add a block to a Logseq page: at the top level of a page, under a parent block, or before/after a sibling (position first, last, before, after), " +
			"with properties. Written in the file's own indentation; the block gets an id:: uuid (returned) so it can be addressed later. Preview by default.",
		Annotations: Annotations{},
		CLI:         CLI{Use: "create-block", Text: textBlockWrite, Short: "Add a block to a Logseq page (preview; --apply writes it)"},
		Errors:      logseqErrors,
		Example:     `{"parent": "6745a1b2-0000-4000-8000-000000000001", "position": "last", "content": "A new child block", "properties": {"status": "draft"}}`,
		Toolset:     ToolsetWrites,
		Handler:     createBlock,
	}
}

// UpdateBlock is the update_block operation.
func UpdateBlock() Def[UpdateBlockIn, BlockWriteOut] {
	return Def[UpdateBlockIn, BlockWriteOut]{
		Name:  "update_block",
		Title: "Update a Logseq block",
		Description: "Change a Logseq block's text and/or properties, by uuid. Its children, its other properties and its id:: stay as they are. " +
			"if_match is the etag of the page file. Preview by default.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "update-block", Args: []string{"uuid"}, Text: textBlockWrite, Short: "Change a Logseq block's text or properties (preview; --apply writes it)"},
		Errors:      logseqErrors,
		Example:     `{"uuid": "6745a1b2-0000-4000-8000-000000000001", "properties": {"status": "done"}}`,
		Toolset:     ToolsetWrites,
		Handler:     updateBlock,
	}
}

// DeleteBlock is the delete_block operation.
func DeleteBlock() Def[DeleteBlockIn, BlockWriteOut] {
	return Def[DeleteBlockIn, BlockWriteOut]{
		Name:  "delete_block",
		Title: "Delete a Logseq block",
		Description: "Remove a Logseq block and its children from its page, by uuid; the result warns about ((references)) to the removed blocks. " +
			"The undo journal keeps the page as it was. Preview by default.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "delete-block", Args: []string{"uuid"}, Text: textBlockWrite, Short: "Remove a Logseq block and its children (preview; --apply does it)"},
		Errors:      logseqErrors,
		Example:     `{"uuid": "6745a1b2-0000-4000-8000-000000000001"}`,
		Toolset:     ToolsetWrites,
		Handler:     deleteBlock,
	}
}

// MoveBlock is the move_block operation.
func MoveBlock() Def[MoveBlockIn, BlockWriteOut] {
	return Def[MoveBlockIn, BlockWriteOut]{
		Name:  "move_block",
		Title: "Move a Logseq block",
		Description: "Move a Logseq block with its children: into a page, under a parent block, or next to a sibling, in the same page or another one. " +
			"Lines are re-indented to the target's style; every id:: uuid stays, so ((references)) keep working. Both pages change as one undoable unit. Preview by default.",
		Annotations: Annotations{Destructive: true},
		CLI:         CLI{Use: "move-block", Args: []string{"uuid"}, Text: textBlockWrite, Short: "Move a Logseq block with its children (preview; --apply does it)"},
		Errors:      logseqErrors,
		Example:     `{"uuid": "6745a1b2-0000-4000-8000-000000000001", "page": "graph/design", "position": "first"}`,
		Toolset:     ToolsetWrites,
		Handler:     moveBlock,
	}
}
