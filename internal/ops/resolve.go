package ops

import (
	"context"
	"os"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/vault"
)

// SuggestionCount bounds "did you mean" lists in errors.
const SuggestionCount = 5

// looksLikePath reports whether a reference is written as a path, which is
// then confined like any path (traversal is refused, not looked up).
func looksLikePath(s string) bool {
	return strings.ContainsAny(s, "/\\\x00%") || s == ".." || strings.HasSuffix(strings.ToLower(s), ".md")
}

// RefTarget parses a note reference and confines it when it is path-like.
func RefTarget(ref string) (index.Ref, bool, error) {
	r := index.ParseRef(ref)
	if r.Target == "" {
		return r, false, errs.New(errs.CodeInvalidInput, "note reference %q names no note", ref).With("note", ref)
	}
	if looksLikePath(r.Target) {
		clean, err := vault.CleanRel(r.Target)
		if err != nil {
			return r, true, err
		}
		r.Target = clean
		return r, true, nil
	}
	r.Target = norm.NFC.String(r.Target)
	return r, false, nil
}

// LookupRef parses a reference and returns the notes it may mean. A bare
// reference holding '#' or '|' is first tried whole (titles may contain
// them), then as wikilink text.
//
// Notes the call's read fence hides are not among them: a fenced note is
// looked up like one that does not exist.
func LookupRef(ctx context.Context, vh *VaultHandle, ref string) (index.Ref, bool, []index.NoteMatch, error) {
	r, pathLike, err := RefTarget(ref)
	if err != nil {
		return r, pathLike, nil, err
	}
	f := FenceFor(ctx, vh)
	visible := func(ms []index.NoteMatch) []index.NoteMatch {
		return Visible(f, ms, func(m index.NoteMatch) string { return m.Path })
	}
	if raw := strings.TrimSpace(ref); !strings.HasPrefix(raw, "[[") && !strings.HasPrefix(raw, "![[") && strings.ContainsAny(raw, "#|") && !looksLikePath(raw) {
		ms, err := vh.Index.LookupNote(ctx, norm.NFC.String(raw))
		ms = visible(ms)
		if err != nil || len(ms) > 0 {
			return index.Ref{Target: raw}, false, ms, err
		}
	}
	ms, err := vh.Index.LookupNote(ctx, r.Target)
	return r, pathLike, visible(ms), err
}

// Suggestions are the "did you mean" paths for target the call may see.
func Suggestions(ctx context.Context, vh *VaultHandle, target string) []string {
	f := FenceFor(ctx, vh)
	n := SuggestionCount
	if f != nil {
		n *= 4 // some may be fenced
	}
	sim, err := vh.Index.SimilarNotes(ctx, target, n)
	if err != nil {
		return nil
	}
	sim = VisiblePaths(f, sim)
	if len(sim) > SuggestionCount {
		sim = sim[:SuggestionCount]
	}
	return sim
}

// resolveNote turns a reference (path, frontmatter id, file name, alias,
// title or [[wikilink]]) into one indexed note. Several equally good
// matches are an ambiguous_note error listing them; none is note_not_found
// with suggestions.
func resolveNote(ctx context.Context, vh *VaultHandle, ref string) (index.NoteMatch, index.Ref, error) {
	r, pathLike, ms, err := LookupRef(ctx, vh, ref)
	if err != nil {
		return index.NoteMatch{}, r, err
	}
	best, ok := index.Best(ms)
	if ok {
		return best, r, nil
	}
	if len(ms) > 0 {
		return index.NoteMatch{}, r, Ambiguous(ref, ms)
	}
	e := errs.New(errs.CodeNotFound, "no note matches %q (tried path, id, file name, alias and title)", ref).With("note", ref)
	if pathLike {
		e = e.With("path", r.Target)
	}
	if sim := Suggestions(ctx, vh, r.Target); len(sim) > 0 {
		e = e.With("suggestions", sim)
	}
	return index.NoteMatch{}, r, e
}

// Ambiguous is the ambiguous_note error of a reference several notes
// match equally well, listing them.
func Ambiguous(ref string, ms []index.NoteMatch) *errs.Error {
	n := 0
	for n < len(ms) && ms[n].Match == ms[0].Match {
		n++
	}
	return errs.New(errs.CodeAmbiguous, "%q matches %d notes by %s; pass one of the candidate paths", ref, n, ms[0].Match).
		With("note", ref).With("candidates", ms)
}

// NotePath picks the note of an input that takes either a path or a note
// reference, and returns its vault-relative path. For a path the index is
// not consulted (the caller reads the file or queries the index itself).
//
// A note the call's read fence hides is note_not_found, as if it were not
// there.
func NotePath(ctx context.Context, vh *VaultHandle, p, ref string) (string, index.Ref, string, error) {
	f := FenceFor(ctx, vh)
	if p != "" {
		_, rel, err := vh.Vault.Abs(p)
		if err == nil && !f.Allows(rel) {
			return "", index.Ref{}, "", NotFound(rel)
		}
		return rel, index.Ref{}, "", err
	}
	m, r, err := resolveNote(ctx, vh, ref)
	if err != nil {
		// A path-like reference to a file on disk that is not indexed yet.
		if errs.Code(err) == errs.CodeNotFound {
			if pr, pathLike, perr := RefTarget(ref); perr == nil && pathLike {
				if abs, rel, aerr := vh.Vault.Abs(pr.Target); aerr == nil {
					if st, serr := os.Stat(abs); serr == nil && st.Mode().IsRegular() && f.Allows(rel) {
						return rel, pr, index.MatchPath, nil
					}
				}
			}
		}
		return "", r, "", err
	}
	return m.Path, r, m.Match, nil
}

// EitherPathOrNote validates inputs that take a path or a note reference.
func EitherPathOrNote(p, note string) error {
	switch {
	case p == "" && note == "":
		return errs.New(errs.CodeInvalidInput, "pass path (vault-relative) or note (id, title, alias or [[wikilink]])")
	case p != "" && note != "":
		return errs.New(errs.CodeInvalidInput, "pass either path or note, not both").With("path", p).With("note", note)
	}
	return nil
}
