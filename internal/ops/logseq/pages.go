package logseq

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// logseqVault fails with not_logseq_graph when the vault holds no Logseq pages.
func logseqVault(ctx context.Context, env *ops.Env, name string) (*ops.VaultHandle, error) {
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

var journalDate = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`) })

// findPage resolves a page name (title, alias, file name, namespace, or a
// journal date) or a path to one Logseq page.
//
// A page the call's read fence hides is looked up like one that does not
// exist.
func findPage(ctx context.Context, vh *ops.VaultHandle, name, p string) (*index.NoteInfo, string, error) {
	fence := ops.FenceFor(ctx, vh)
	if p != "" {
		_, rel, err := vh.Vault.Abs(p)
		if err != nil {
			return nil, "", err
		}
		if !fence.Allows(rel) {
			return nil, "", ops.NotFound(rel)
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
	r, _, err := ops.RefTarget(name)
	if err != nil {
		return nil, "", err
	}
	lookup := func(t string) ([]index.NoteMatch, []index.NoteMatch, error) {
		ms, err := vh.Index.LookupNote(ctx, t)
		if err != nil {
			return nil, nil, err
		}
		ms = ops.Visible(fence, ms, func(m index.NoteMatch) string { return m.Path })
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
	if len(pages) == 0 && journalDate().MatchString(r.Target) {
		if pages, _, err = lookup(strings.ReplaceAll(r.Target, "-", "_")); err != nil {
			return nil, "", err
		}
	}
	best, ok := index.Best(pages)
	switch {
	case ok:
	case len(pages) > 0:
		return nil, "", ops.Ambiguous(name, pages)
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

func similarPages(ctx context.Context, vh *ops.VaultHandle, target string) ([]string, error) {
	pages, err := vh.Index.Pages(ctx, true, "")
	if err != nil {
		return nil, err
	}
	pages = ops.Visible(ops.FenceFor(ctx, vh), pages, func(p index.PageInfo) string { return p.Path })
	t := strings.ToLower(target)
	var out []string
	for _, p := range pages {
		if strings.Contains(strings.ToLower(p.Name), t) || strings.Contains(t, strings.ToLower(p.Name)) {
			out = append(out, p.Name)
			if len(out) == ops.SuggestionCount {
				break
			}
		}
	}
	return out, nil
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

// pageGraph picks the graph a new page goes into.
func pageGraph(vh *ops.VaultHandle, graph string) (string, error) {
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

// pageFor resolves a page by name or path and checks it may be written.
func pageFor(ctx context.Context, env *ops.Env, vault, name, p string) (*ops.VaultHandle, string, error) {
	vh, err := logseqVault(ctx, env, vault)
	if err != nil {
		return nil, "", err
	}
	w, err := env.Writer(vh)
	if err != nil {
		return nil, "", err
	}
	if p != "" {
		if _, err := w.Target(p); err != nil {
			return nil, "", err
		}
	}
	n, _, err := findPage(ctx, vh, name, p)
	if err != nil {
		return nil, "", err
	}
	rel, err := w.Target(n.Path)
	return vh, rel, err
}
