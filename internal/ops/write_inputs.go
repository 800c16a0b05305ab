package ops

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/vault"
)

// WriteOpts are the inputs every write operation shares.
type WriteOpts struct {
	Apply          bool   `json:"apply,omitempty" jsonschema:"false (the default) only previews: the result shows the diff, the paths and the etags and nothing is written; true writes the change"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a unique key for this change (e.g. a UUID): a retry with the same key and input returns the first result without writing again; the same key with another input fails with idempotency_key_reused"`
	Reindex        *bool  `json:"reindex,omitempty" jsonschema:"re-index the changed notes before returning (default true), so that the next search sees the change"`
	Vault          string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

func (o *WriteOpts) reindex() bool { return o.Reindex == nil || *o.Reindex }

// Check refuses an idempotency key over 200 characters; the Validate of
// every input that embeds WriteOpts calls it.
func (o *WriteOpts) Check() error { return CheckIdempotencyKey(o.IdempotencyKey) }

// CheckIdempotencyKey refuses an idempotency key over 200 characters.
func CheckIdempotencyKey(key string) error {
	if len(key) > 200 {
		return errs.New(errs.CodeInvalidInput, "idempotency_key is longer than 200 characters")
	}
	return nil
}

// Guard is the optimistic-concurrency input of operations that change an
// existing note.
type Guard struct {
	IfMatch        string `json:"if_match,omitempty" jsonschema:"the etag of the note as you last read it (read_note, or the etag of your previous write); if the note changed since, nothing is written and the call fails with etag_mismatch and the current etag"`
	ExpectedSHA256 string `json:"expected_sha256,omitempty" jsonschema:"alias of if_match"`
}

// Etag returns the expected etag ("" when none was given).
func (g *Guard) Etag() (string, error) {
	norm := func(s string) string {
		s = strings.TrimSpace(s)
		s = strings.TrimPrefix(s, "W/")
		s = strings.Trim(s, `"`)
		s = strings.TrimPrefix(strings.ToLower(s), "sha256:")
		return s
	}
	a, b := norm(g.IfMatch), norm(g.ExpectedSHA256)
	if a != "" && b != "" && a != b {
		return "", errs.New(errs.CodeInvalidInput, "if_match and expected_sha256 differ; pass one of them").
			With("if_match", g.IfMatch).With("expected_sha256", g.ExpectedSHA256)
	}
	// Errors name the field the caller used, with the value it sent.
	field, raw := "if_match", g.IfMatch
	if a == "" {
		a, field, raw = b, "expected_sha256", g.ExpectedSHA256
	}
	if a == "" {
		return "", nil
	}
	if len(a) != 64 || strings.Trim(a, "0123456789abcdef") != "" {
		return "", errs.New(errs.CodeInvalidInput, "%s %q is not an etag (64 hex characters, as read_note returns it)", field, raw).
			With("field", field).With(field, raw)
	}
	return a, nil
}

// CheckGuard compares the caller's if_match with the note's etag.
func CheckGuard(f *NoteFile, want string) error {
	if want == "" || want == f.Etag {
		return nil
	}
	if !f.Exists {
		return errs.New(errs.CodeEtagMismatch, "%s does not exist (expected etag %s)", f.Rel, want).With("path", f.Rel).With("current_etag", "").With("expected_etag", want)
	}
	return errs.New(errs.CodeEtagMismatch, "%s changed since it was read: its etag is now %s; read it again and redo the change", f.Rel, f.Etag).
		With("path", f.Rel).With("current_etag", f.Etag).With("expected_etag", want)
}

// WriteTarget resolves the note an edit names (path, or note reference) to a
// vault-relative path that may be written.
func WriteTarget(ctx context.Context, vh *VaultHandle, w *vault.Writer, p, ref string) (string, error) {
	rel := p
	if p == "" {
		r, _, _, err := NotePath(ctx, vh, "", ref)
		if err != nil {
			return "", err
		}
		rel = r
	}
	clean, err := w.Target(rel)
	return clean, err
}

// writeErrors are the codes every write operation may return.
var writeErrors = []string{errs.CodeInvalidInput, errs.CodeWritesDisabled, errs.CodePathDenied, errs.CodeEtagMismatch,
	errs.CodeConflict, errs.CodeIdempotencyReuse, errs.CodeNoteLocked, errs.CodeVaultNotFound}

// WithErrors returns the error codes of a write operation: every write's
// (writeErrors) and extra.
func WithErrors(extra ...string) []string {
	return append(append([]string{}, writeErrors...), extra...)
}

// WriteVault picks the vault of a write and its writer.
func WriteVault(env *Env, name string) (*VaultHandle, *vault.Writer, error) {
	vh, err := env.Vault(name)
	if err != nil {
		return nil, nil, err
	}
	w, err := env.Writer(vh)
	if err != nil {
		return nil, nil, err
	}
	return vh, w, nil
}

// InboundWarning lists the notes that link to rel (they will have broken links).
func InboundWarning(ctx context.Context, vh *VaultHandle, rel string) []string {
	links, err := vh.Index.LinksOf(ctx, rel)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var srcs []string
	fence := FenceFor(ctx, vh)
	for _, l := range append(links.Backlinks, links.TypedIn...) {
		if !seen[l.Source] && fence.Allows(l.Source) {
			seen[l.Source] = true
			srcs = append(srcs, l.Source)
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	sort.Strings(srcs)
	return []string{fmt.Sprintf("%d note(s) link to %s and will have broken links: %s", len(srcs), rel, strings.Join(srcs, ", "))}
}
