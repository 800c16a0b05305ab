package logseq

import (
	"context"
	"path"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/noteedit"
	"github.com/loci-dev/loci/internal/ops"
)

// CreatePageIn is the input of create_page.
type CreatePageIn struct {
	Name       string   `json:"name" jsonschema:"the page name; a/b makes a namespaced page (file a___b.md); a date (2026-11-25, or in the graph's journal title format) makes a journal page in journals/"`
	Graph      string   `json:"graph,omitempty" jsonschema:"vault-relative folder of the Logseq graph, when the vault holds several (default: the first)"`
	Properties Props    `json:"properties,omitempty" cli:"property" jsonschema:"page properties, written as key:: value lines at the top"`
	Blocks     []string `json:"blocks,omitempty" cli:"block" jsonschema:"top-level blocks, in order: each one's text without the bullet (several lines allowed)"`
	ops.WriteOpts
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

// CreatePage is the create_page operation.
func CreatePage() ops.Def[CreatePageIn, ops.WriteResult] {
	return ops.Def[CreatePageIn, ops.WriteResult]{
		Name:  "create_page",
		Title: "Create a Logseq page",
		Description: "Create a page in the vault's Logseq graph (pages/ folder; namespaces a/b become a___b.md) with page properties and top-level blocks. " +
			"A date name (2026-11-25, or the graph's journal title format such as Nov 25th, 2026) creates that day's journal in journals/, named by :journal/file-name-format of logseq/config.edn (default yyyy_MM_dd). " +
			"Fails with conflict when a page of that name (or alias) exists. Preview by default.",
		Annotations: ops.Annotations{},
		CLI:         ops.CLI{Use: "create-page", Args: []string{"name"}, Text: ops.TextWrite, Short: "Create a Logseq page (preview; --apply writes it)"},
		Errors:      logseqErrors,
		Example:     `{"name": "Reading/2026", "properties": {"tags": "reading"}, "blocks": ["How to Take Smart Notes", "The Art of Doing Science"]}`,
		Toolset:     ops.ToolsetWrites,
		TypeSchemas: typeSchemas(),
		Handler:     createPage,
	}
}

func createPage(ctx context.Context, env *ops.Env, in *CreatePageIn) (*ops.WriteResult, error) {
	vh, w, err := ops.WriteVault(env, in.Vault)
	if err != nil {
		return nil, err
	}
	g, err := pageGraph(vh, in.Graph)
	if err != nil {
		return nil, err
	}
	file, _ := pageFileName(in.Name)
	rel := path.Join(g, "pages", file)
	if day, ok := journalDay(in.Name, graphJournalFormats(vh, g)); ok {
		rel = journalRel(g, graphJournalFormats(vh, g), day)
	}
	if rel, err = w.Target(rel); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(in.Name)
	if ms, err := vh.Index.LookupNote(ctx, strings.ToLower(name)); err == nil {
		// A page the caller may not read is not named (its path is fenced
		// for the write too).
		ms = ops.Visible(env.ReadFence(ctx, vh), ms, func(m index.NoteMatch) string { return m.Path })
		for _, m := range ms {
			if m.Kind != "note" && (m.Match == index.MatchPath || m.Match == "title" || m.Match == "alias" || m.Match == "filename") {
				return nil, errs.New(errs.CodeConflict, "a page named %q exists already: %s", name, m.Path).With("path", m.Path)
			}
		}
	}
	return ops.Idempotent(ctx, env, vh, "create_page", in, &in.WriteOpts, func() (*ops.WriteResult, error) {
		return ops.RunWrite(ctx, env, ops.WriteSpec{Op: "create_page", Vault: vh, Opts: &in.WriteOpts, Locks: []string{rel}, Build: func(s *ops.Stage) error {
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
				lines = append(lines, blockLines("", "\t", b, nil, "")...)
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
