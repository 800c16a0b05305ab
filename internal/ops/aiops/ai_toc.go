package aiops

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
)

// AITocIn is the input of ai_toc.
type AITocIn struct {
	AIScope
	AIOpts
	AIApply
	Mode     string `json:"mode,omitempty" jsonschema:"note (default): the outline of one note (note or paths[0]) from its headings, no model call; moc: a map of content of the scope"`
	GroupBy  string `json:"group_by,omitempty" jsonschema:"moc: folder (default), tag, topic (needs a chat model) or frontmatter:<key>"`
	MaxDepth int    `json:"max_depth,omitempty" jsonschema:"note mode: deepest heading level to include (1-6, default 6)"`
	WriteTo  string `json:"write_to,omitempty" jsonschema:"moc: write the map of content to this note (preview unless apply)"`
	IfMatch  string `json:"if_match,omitempty" jsonschema:"with write_to: the etag of the note to replace (needed when it exists)"`
}

// Validate checks the mode and scope.
func (in *AITocIn) Validate() error {
	switch in.Mode {
	case "", "note", "moc":
	default:
		return errs.New(errs.CodeInvalidInput, "mode must be note or moc")
	}
	if in.MaxDepth < 0 || in.MaxDepth > 6 {
		return errs.New(errs.CodeInvalidInput, "max_depth must be between 1 and 6")
	}
	if g := in.GroupBy; g != "" && g != "folder" && g != "tag" && g != "topic" && !strings.HasPrefix(g, "frontmatter:") {
		return errs.New(errs.CodeInvalidInput, "group_by must be folder, tag, topic or frontmatter:<key>")
	}
	if in.WriteTo != "" && in.Mode != "moc" {
		return errs.New(errs.CodeInvalidInput, "write_to needs mode moc")
	}
	return in.AIScope.validate()
}

// writes reports whether the call writes: only apply with write_to does.
func (in *AITocIn) writes() bool { return in.Apply && in.WriteTo != "" }

// TocEntry is one heading of a note's outline.
type TocEntry struct {
	Level  int    `json:"level" jsonschema:"heading level (1-6)"`
	Text   string `json:"text" jsonschema:"heading text"`
	Line   int    `json:"line" jsonschema:"line of the heading"`
	Anchor string `json:"anchor" jsonschema:"link target: Note#Heading"`
}

// MocGroup is one group of a map of content.
type MocGroup struct {
	Name  string    `json:"name" jsonschema:"group name (folder, tag, topic or frontmatter value)"`
	Notes []MocNote `json:"notes" jsonschema:"the notes of the group"`
}

// MocNote is a note in a map of content.
type MocNote struct {
	Path  string `json:"path" jsonschema:"vault-relative path"`
	Title string `json:"title" jsonschema:"note title"`
}

// AITocOut is the output of ai_toc.
type AITocOut struct {
	AIMeta
	Mode     string           `json:"mode" jsonschema:"note or moc"`
	Entries  []TocEntry       `json:"entries,omitempty" jsonschema:"note mode: the outline"`
	Groups   []MocGroup       `json:"groups,omitempty" jsonschema:"moc mode: the groups"`
	Markdown string           `json:"markdown" jsonschema:"the table of contents / map of content as Markdown with wikilinks"`
	Write    *ops.WriteResult `json:"write,omitempty" jsonschema:"with write_to: the write (a preview unless apply)"`
}

// AIToc is the ai_toc operation.
func AIToc() ops.Def[AITocIn, AITocOut] {
	return ops.Def[AITocIn, AITocOut]{
		Name:  "ai_toc",
		Title: "Table of contents / map of content",
		Description: "mode=note: the outline of one note from its headings, as wikilinks (deterministic, no model call, cost 0). " +
			"mode=moc: a map of content for a scope (paths, glob, tag, query, note+include_linked) grouped by folder, tag, frontmatter:<key> (deterministic) or topic (chat model); " +
			"write_to writes it as a note through the safe-write pipeline (preview unless apply=true; writes must be enabled).",
		Annotations: ops.Annotations{Idempotent: true},
		CLI:         ops.CLI{Use: "ai toc", Args: []string{"note"}},
		Errors:      aiApplyErrors,
		Example:     `{"mode": "moc", "glob": "Projects/**", "group_by": "folder"}`,
		Toolset:     ops.ToolsetAI,
		Handler:     idempotentAI[AITocIn, AITocOut]("ai_toc", aiToc),
	}
}

func aiToc(ctx context.Context, env *ops.Env, in *AITocIn) (out *AITocOut, err error) {
	out = &AITocOut{Mode: orStr(in.Mode, "note")}
	needChat := in.Mode == "moc" && in.GroupBy == "topic"
	c, err := beginAI(ctx, env, "ai_toc", in.Vault, needChat, &out.AIMeta)
	if err != nil {
		return nil, err
	}
	defer func() { c.finish(err) }()
	if out.Mode == "note" {
		ref := in.Note
		if ref == "" && len(in.Paths) > 0 {
			ref = in.Paths[0]
		}
		if ref == "" {
			return nil, errs.New(errs.CodeInvalidInput, "note mode needs note (or paths with one note)")
		}
		if err := c.resolve(ctx, &AIScope{Note: ref}); err != nil {
			return nil, err
		}
		if len(c.notes) == 0 {
			return nil, errs.New(errs.CodePathDenied, "%s is excluded by the AI globs", ref).With("path", ref)
		}
		n := c.notes[0]
		depth := ops.OrDefault(in.MaxDepth, 6)
		var sb strings.Builder
		min := 7
		for _, h := range n.Headings {
			if h.Level <= depth && h.Level < min {
				min = h.Level
			}
		}
		out.Entries = []TocEntry{}
		for _, h := range n.Headings {
			if h.Level > depth {
				continue
			}
			e := TocEntry{Level: h.Level, Text: h.Text, Line: h.Line, Anchor: linkName(n.Path) + "#" + h.Text}
			out.Entries = append(out.Entries, e)
			fmt.Fprintf(&sb, "%s- [[%s|%s]]\n", strings.Repeat("  ", h.Level-min), e.Anchor, linkText(h.Text))
		}
		out.Markdown = sb.String()
		c.addCitation(Citation{Path: n.Path, Etag: n.Etag, Snippet: truncRunes(n.Title, 240)})
		return out, nil
	}
	if in.AIScope.empty() {
		return nil, errs.New(errs.CodeInvalidInput, "moc mode needs a scope: paths, glob, tag, query or note")
	}
	if err := c.resolve(ctx, &in.AIScope); err != nil {
		return nil, err
	}
	group := orStr(in.GroupBy, "folder")
	if group == "topic" {
		if err := cached(ctx, c, in, in.useCache(), out, func() error { return c.topicGroups(ctx, in, out) }); err != nil {
			return nil, err
		}
		c.meta = &out.AIMeta
	} else {
		groups := map[string][]MocNote{}
		for _, n := range c.notes {
			var keys []string
			switch {
			case group == "folder":
				d := path.Dir(n.Path)
				if d == "." {
					d = "(root)"
				}
				keys = []string{d}
			case group == "tag":
				info, err := c.vh.Index.NoteByPath(ctx, n.Path)
				if err == nil {
					keys = info.Tags
				}
			default:
				key := strings.TrimPrefix(group, "frontmatter:")
				if info, err := c.vh.Index.NoteByPath(ctx, n.Path); err == nil {
					switch v := info.Frontmatter[key].(type) {
					case nil:
					case []any:
						for _, x := range v {
							keys = append(keys, fmt.Sprint(x))
						}
					default:
						keys = []string{fmt.Sprint(v)}
					}
				}
			}
			if len(keys) == 0 {
				keys = []string{"(none)"}
			}
			for _, k := range keys {
				groups[k] = append(groups[k], MocNote{Path: n.Path, Title: n.Title})
			}
			c.addCitation(Citation{Path: n.Path, Etag: n.Etag, Snippet: truncRunes(n.Title, 240)})
		}
		names := make([]string, 0, len(groups))
		for k := range groups {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			out.Groups = append(out.Groups, MocGroup{Name: k, Notes: groups[k]})
		}
	}
	var sb strings.Builder
	sb.WriteString("# Map of content\n")
	for _, g := range out.Groups {
		fmt.Fprintf(&sb, "\n## %s\n\n", linkText(g.Name))
		for _, n := range g.Notes {
			fmt.Fprintf(&sb, "- [[%s|%s]]\n", linkName(n.Path), linkText(n.Title))
		}
	}
	out.Markdown = sb.String()
	if in.WriteTo != "" {
		w, err := c.aiCreate(ctx, in.WriteTo, in.IfMatch, out.Markdown, in.Apply)
		if err != nil {
			return nil, err
		}
		out.Write = w
	}
	return out, nil
}

// oneLine collapses every run of white space (line breaks included) to
// one space: a group name from the model or a frontmatter value becomes
// one heading line, never lines of its own.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// linkEscaper escapes what would end a wikilink's text early or start
// another link in it.
var linkEscaper = strings.NewReplacer(`|`, `\|`, `[`, `\[`, `]`, `\]`)

// linkText is a title made safe as the text of a wikilink ([[path|text]])
// or of a heading: on one line, with | [ ] escaped, so it neither ends a
// link early nor starts one.
func linkText(s string) string { return linkEscaper.Replace(oneLine(s)) }

func (c *aiCall) topicGroups(ctx context.Context, in *AITocIn, out *AITocOut) error {
	var list []string
	for _, n := range c.notes {
		head := []string{}
		for _, h := range n.Headings {
			head = append(head, h.Text)
		}
		list = append(list, fmt.Sprintf("- path=%q etag=%q title=%q headings=%q\n", n.Path, n.Etag, n.Title, strings.Join(head, " | ")))
	}
	schema := map[string]any{"type": "object", "required": []string{"groups"}, "properties": map[string]any{
		"groups": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []string{"name", "paths"}, "properties": map[string]any{
			"name": map[string]any{"type": "string"}, "paths": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}}}}
	var res struct {
		Groups []struct {
			Name  string   `json:"name"`
			Paths []string `json:"paths"`
		} `json:"groups"`
	}
	sys := "You group notes of a personal knowledge vault into a few topics for a map of content. Use only the paths listed. Reply with one JSON object: {\"groups\": [{\"name\", \"paths\"}]}."
	// As many notes as fit the input budget are grouped; the rest go to
	// Other.
	n := c.fitting(list, sys)
	if n == 0 && len(list) > 0 {
		return c.tooLarge("the topic prompt with its first note", tokens(sys, list[0]))
	}
	if n < len(list) {
		c.meta.warn("scope_truncated", "", "the scope's notes exceed the input budget: the model grouped the first %d of %d, the others are under Other", n, len(list))
	}
	if err := c.generate(ctx, "moc_groups", schema, sys, strings.Join(list[:n], ""), &res, nil); err != nil {
		return err
	}
	placed := map[string]bool{}
	for _, g := range res.Groups {
		mg := MocGroup{Name: oneLine(g.Name)}
		for _, p := range g.Paths {
			n := c.byPath[p]
			if n == nil {
				c.meta.warn("citation_invalid", p, "the model grouped %q, which is not in the scope", p)
				continue
			}
			placed[p] = true
			mg.Notes = append(mg.Notes, MocNote{Path: p, Title: n.Title})
			c.addCitation(Citation{Path: n.Path, Etag: n.Etag, Snippet: truncRunes(n.Title, 240)})
		}
		if len(mg.Notes) > 0 && mg.Name != "" {
			out.Groups = append(out.Groups, mg)
		}
	}
	var other []MocNote
	for _, n := range c.notes {
		if !placed[n.Path] {
			other = append(other, MocNote{Path: n.Path, Title: n.Title})
		}
	}
	if len(other) > 0 {
		out.Groups = append(out.Groups, MocGroup{Name: "Other", Notes: other})
	}
	return nil
}
