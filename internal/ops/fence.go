package ops

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/text/unicode/norm"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/safefs"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/vault"
)

// ReadRules are a vault's read fence from its merged config: ReadPaths,
// when set, are the only globs the read surfaces show; DenyReadPaths are
// never shown (deny wins). The zero value shows every note.
type ReadRules struct {
	ReadPaths     []string
	DenyReadPaths []string
}

// The settings a fence rule comes from (FenceRule.Setting).
const (
	SettingReadPaths              = "read_paths"
	SettingDenyReadPaths          = "deny_read_paths"
	SettingPrincipalReadPaths     = "principal.read_paths"
	SettingPrincipalDenyReadPaths = "principal.deny_read_paths"
	SettingNoteRule               = "note_rule"
	SettingDefault                = "default"
)

// FenceRule is the rule that decided a path: the setting and the glob of
// it that matched (for an allow-list the path matched none of, the glob is
// empty), or SettingDefault when no rule applies.
type FenceRule struct {
	Setting string `json:"setting" jsonschema:"where the deciding rule is set: read_paths or deny_read_paths (the vault's config), principal.read_paths or principal.deny_read_paths (the principal's narrowing), note_rule (never a note), or default (no rule applies)"`
	Glob    string `json:"glob,omitempty" jsonschema:"the glob that matched (empty when the path matched none of an allow-list)"`
	// Resolved is the real path a symbolic link led to, when that path
	// decided.
	Resolved string `json:"resolved,omitempty" jsonschema:"the real vault-relative path a symbolic link leads to, when the rule matched that path"`
	Reason   string `json:"reason" jsonschema:"the decision in words"`
}

type fenceGlob struct {
	glob   string // NFC, as written
	folded string // NFC, lower case
}

type fenceList struct {
	setting string
	globs   []fenceGlob
}

// Fence is the read fence of one call on one vault: the vault's rules
// narrowed by the caller's principal. A nil *Fence shows every note (the
// fast path: no rules anywhere). Deny lists match a path as written or in
// any case (after NFC on both sides), as the write deny globs do, so a
// case-insensitive disk cannot be used to slip past them; allow lists
// match as written (NFC), failing closed. A note that is a symbolic link
// must pass with its real path too.
type Fence struct {
	v     *vault.Vault
	deny  []fenceList
	allow []fenceList // each non-empty list must be matched
	key   string      // the rules, for the cache of hidden notes
}

// NewFence builds the fence of rules narrowed by p; nil when neither sets
// any glob. v resolves symbolic links (nil: lexical paths only).
func NewFence(v *vault.Vault, rules ReadRules, p *auth.Principal) *Fence {
	var f Fence
	add := func(into *[]fenceList, setting string, globs []string) {
		if len(globs) == 0 {
			return
		}
		l := fenceList{setting: setting}
		for _, g := range globs {
			n := norm.NFC.String(g)
			l.globs = append(l.globs, fenceGlob{glob: n, folded: strings.ToLower(n)})
		}
		*into = append(*into, l)
	}
	add(&f.deny, SettingDenyReadPaths, rules.DenyReadPaths)
	add(&f.allow, SettingReadPaths, rules.ReadPaths)
	if p != nil && !p.IsOwner() {
		add(&f.deny, SettingPrincipalDenyReadPaths, p.DenyReadPaths)
		add(&f.allow, SettingPrincipalReadPaths, p.ReadPaths)
	}
	if len(f.deny) == 0 && len(f.allow) == 0 {
		return nil
	}
	f.v = v
	var k strings.Builder
	for _, l := range append(append([]fenceList{}, f.deny...), f.allow...) {
		k.WriteString(l.setting)
		for _, g := range l.globs {
			k.WriteString("\x00" + g.glob)
		}
		k.WriteString("\x01")
	}
	f.key = k.String()
	return &f
}

// ReadFence is the read fence of the call in ctx (its principal from
// CallerFrom) on vh: nil, at no cost, when neither the vault nor the
// principal sets a read rule.
func (e *Env) ReadFence(ctx context.Context, vh *VaultHandle) *Fence {
	return FenceFor(ctx, vh)
}

// FenceFor is Env.ReadFence for code without the Env.
func FenceFor(ctx context.Context, vh *VaultHandle) *Fence {
	if vh == nil {
		return nil
	}
	p := CallerFrom(ctx).Principal
	if len(vh.Read.ReadPaths) == 0 && len(vh.Read.DenyReadPaths) == 0 &&
		(p == nil || (len(p.ReadPaths) == 0 && len(p.DenyReadPaths) == 0)) {
		return nil
	}
	return NewFence(vh.Vault, vh.Read, p)
}

// Active reports whether the fence hides anything at all.
func (f *Fence) Active() bool { return f != nil }

// Allows reports whether the note at rel (vault-relative, as indexed) may
// be shown: its path and, when the note is a symbolic link, the real path
// it leads to both pass the rules. The note rule (hidden and closed
// folders) is not checked here: indexed paths already pass it.
func (f *Fence) Allows(rel string) bool {
	ok, _ := f.allows(rel)
	return ok
}

// allows is Allows, and whether the note is a symbolic link.
func (f *Fence) allows(rel string) (ok, link bool) {
	if f == nil {
		return true, false
	}
	if ok, _ := f.decide(norm.NFC.String(rel)); !ok {
		return false, false
	}
	real, ok := f.realOf(rel)
	if !ok {
		return false, true
	}
	if real != "" {
		ok, _ = f.decide(real)
		return ok, true
	}
	return true, false
}

// allowsIndexed is Allows for a page of search results, given the hidden
// set the candidates were filtered with: the rules are matched again on
// the path, and the real path is looked up again only for the notes that
// were links when the set was computed. A note turned into a link since
// is caught by the sync that indexes the change (it ends a generation, so
// the set is computed again) — within fenceRecheck when another process
// syncs; until then its indexed text is what was read before it became a
// link. This spares a file system look per result (it was ~5% of a
// search).
func (f *Fence) allowsIndexed(rel string, hs *hiddenSet) bool {
	if hs == nil || hs.links[rel] {
		return f.Allows(rel)
	}
	ok, _ := f.decide(norm.NFC.String(rel))
	return ok
}

// AllowsReal is Allows for a note whose real path is already known
// (vault.Resolve): no file system access.
func (f *Fence) AllowsReal(clean, real string) bool {
	if f == nil {
		return true
	}
	if ok, _ := f.decide(norm.NFC.String(clean)); !ok {
		return false
	}
	if r := norm.NFC.String(filepath.ToSlash(real)); real != "" && r != clean {
		ok, _ := f.decide(r)
		return ok
	}
	return true
}

// realOf returns the real vault-relative path (NFC) of an indexed note
// that is a symbolic link, "" when it is not one (or is gone). ok is false
// when the link leads out of the vault or cannot be followed: such a note
// is not shown. Indexed notes never sit under a linked folder (the walk
// does not follow folder links), so the last component is what to check.
func (f *Fence) realOf(rel string) (string, bool) {
	if f.v == nil {
		return "", true
	}
	abs := filepath.Join(f.v.Root, filepath.FromSlash(rel))
	st, err := os.Lstat(abs)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return "", true
	}
	realAbs, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", errors.Is(err, fs.ErrNotExist)
	}
	r, ok := safefs.Inside(f.v.Root, realAbs)
	if !ok {
		return "", false
	}
	return norm.NFC.String(filepath.ToSlash(r)), true
}

// decide checks one NFC path against the rules: deny lists first (deny
// wins), then every allow list.
func (f *Fence) decide(rel string) (bool, FenceRule) {
	folded := ""
	for _, l := range f.deny {
		for _, g := range l.globs {
			if ok, _ := doublestar.Match(g.glob, rel); ok {
				return false, FenceRule{Setting: l.setting, Glob: g.glob, Reason: "matches " + l.setting + " " + g.glob}
			}
			if folded == "" {
				folded = strings.ToLower(rel)
			}
			if ok, _ := doublestar.Match(g.folded, folded); ok {
				return false, FenceRule{Setting: l.setting, Glob: g.glob, Reason: "matches " + l.setting + " " + g.glob + " (in another case)"}
			}
		}
	}
	var last FenceRule
	for _, l := range f.allow {
		matched := ""
		for _, g := range l.globs {
			if ok, _ := doublestar.Match(g.glob, rel); ok {
				matched = g.glob
				break
			}
		}
		if matched == "" {
			return false, FenceRule{Setting: l.setting, Reason: "outside " + l.setting + " (" + joinGlobs(l.globs) + ")"}
		}
		last = FenceRule{Setting: l.setting, Glob: matched, Reason: "inside " + l.setting + " " + matched}
	}
	if last.Setting == "" {
		return true, FenceRule{Setting: SettingDefault, Reason: "no read rule matches: readable"}
	}
	return true, last
}

func joinGlobs(gs []fenceGlob) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = g.glob
	}
	return strings.Join(s, ", ")
}

// Decide explains the fence's decision on a path someone names: the note
// rule first (hidden and closed folders, non-notes: never readable), then
// the path and, through a symbolic link, its real path. A nil fence
// decides by the note rule alone.
func (f *Fence) Decide(v *vault.Vault, rel string) (bool, FenceRule) {
	clean, err := vault.CleanRel(rel)
	if err != nil {
		return false, FenceRule{Setting: SettingNoteRule, Reason: errs.As(err).Message}
	}
	if why := v.NoteRule(clean); why != "" {
		return false, FenceRule{Setting: SettingNoteRule, Reason: why}
	}
	_, real, rerr := v.Resolve(clean)
	if rerr != nil && errs.Code(rerr) == errs.CodePathDenied {
		return false, FenceRule{Setting: SettingNoteRule, Reason: errs.As(rerr).Message}
	}
	if f == nil {
		return true, FenceRule{Setting: SettingDefault, Reason: "no read rule is set: readable"}
	}
	ok, rule := f.decide(clean)
	if !ok {
		return false, rule
	}
	if r := norm.NFC.String(real); real != "" && r != clean {
		if ok, rr := f.decide(r); !ok {
			rr.Resolved = r
			rr.Reason = clean + " is a symbolic link to " + r + ", which " + rr.Reason
			return false, rr
		}
	}
	return true, rule
}

// NotFound is the answer for a fenced note: the same note_not_found a
// missing note gets, so a fence does not tell what exists behind it.
func NotFound(rel string) *errs.Error {
	return errs.New(errs.CodeNotFound, "note not found: %s", rel).With("path", rel)
}

// Visible returns the items of list whose path the fence shows (list
// itself, unchanged, for a nil fence).
func Visible[T any](f *Fence, list []T, path func(T) string) []T {
	if f == nil {
		return list
	}
	out := list[:0:0]
	for _, x := range list {
		if f.Allows(path(x)) {
			out = append(out, x)
		}
	}
	if out == nil && list != nil {
		out = []T{}
	}
	return out
}

// VisiblePaths filters a list of paths.
func VisiblePaths(f *Fence, paths []string) []string {
	return Visible(f, paths, func(s string) string { return s })
}

// ReadNote reads a note the call may see: vault.ReadNote, then the fence
// on the requested and the real path. A fenced note is note_not_found.
func (e *Env) ReadNote(ctx context.Context, vh *VaultHandle, rel string) ([]byte, string, error) {
	return ReadFencedNote(FenceFor(ctx, vh), vh, rel)
}

// ReadFencedNote is Env.ReadNote with the fence given.
func ReadFencedNote(f *Fence, vh *VaultHandle, rel string) ([]byte, string, error) {
	if f == nil {
		return vh.Vault.ReadNote(rel)
	}
	clean, real, err := vh.Vault.Resolve(rel)
	if err != nil {
		return nil, clean, err
	}
	if !f.AllowsReal(clean, real) {
		return nil, clean, NotFound(clean)
	}
	// Read the real path checked, never following a link (one swapped in
	// since cannot lead elsewhere); on any trouble the vault's own read
	// names it, and its answer is checked again.
	if b, err := vh.Vault.FS().ReadFile(real); err == nil {
		return b, clean, nil
	}
	b, got, err := vh.Vault.ReadNote(clean)
	if err != nil {
		return nil, got, err
	}
	if _, real2, rerr := vh.Vault.Resolve(clean); rerr != nil || !f.AllowsReal(clean, real2) {
		return nil, clean, NotFound(clean)
	}
	return b, got, nil
}

// Hidden returns the ids of the indexed notes of vh the fence hides (nil
// for a nil fence): for the index's counts and walks, which leave them
// out in SQL.
func (f *Fence) Hidden(ctx context.Context, vh *VaultHandle) ([]int64, error) {
	hs, err := f.hiddenSet(ctx, vh)
	if hs == nil || err != nil {
		return nil, err
	}
	return hs.list, nil
}

// Apply sets q's path predicate and hidden notes (nothing for a nil
// fence), so a search never has a fenced note among its candidates.
func (f *Fence) Apply(ctx context.Context, vh *VaultHandle, q *search.Query) error {
	hs, err := f.hiddenSet(ctx, vh)
	if hs == nil || err != nil {
		return err
	}
	q.Allow = func(p string) bool { return f.allowsIndexed(p, hs) }
	ids := hs.ids
	q.Hidden = func(id int64) bool { return ids[id] }
	return nil
}

// hiddenSet is the notes one fence hides in one state of the index.
type hiddenSet struct {
	fp   string // the index's notes fingerprint it was computed for
	ids  map[int64]bool
	list []int64
	// links are the visible notes that were symbolic links when the set
	// was computed: only their real paths are looked up again when a page
	// of results is checked (allowsIndexed).
	links map[string]bool
	// gen is the vault's sync generation when fp was last confirmed, and
	// checked when: while no sync of this process ended or runs, the set
	// is reused without the fingerprint query for up to fenceRecheck.
	gen     uint64
	checked time.Time
}

// fenceRecheck is how long a hidden set is trusted without asking the
// index for its fingerprint while this process has not synced: the
// bound on how late a sync by another process (a `loci index` run beside
// `loci serve`) is seen. Search results are re-checked by path anyway.
const fenceRecheck = time.Second

// maxFenceSets bounds the cached hidden sets of a vault (one per distinct
// set of rules: the vault's and each principal's narrowing).
const maxFenceSets = 64

// hiddenSet returns the notes f hides in vh, computed once per state of
// the index's notes (their count, newest index time and id sum) and
// reused by every call with the same rules. A link re-pointed since is
// caught where it matters: notes are read, and search results checked,
// through Allows, which follows the link at that moment.
func (f *Fence) hiddenSet(ctx context.Context, vh *VaultHandle) (*hiddenSet, error) {
	if f == nil {
		return nil, nil
	}
	gen, now := vh.syncGen.Load(), time.Now()
	vh.fenceMu.Lock()
	hs := vh.fenceSets[f.key]
	fresh := hs != nil && hs.gen == gen && vh.syncing.Load() == 0 && now.Sub(hs.checked) < fenceRecheck
	vh.fenceMu.Unlock()
	if fresh {
		return hs, nil
	}
	fp, err := vh.Index.NotesFingerprint(ctx)
	if err != nil {
		return nil, err
	}
	if hs != nil && hs.fp == fp {
		vh.fenceMu.Lock()
		hs.gen, hs.checked = gen, now
		vh.fenceMu.Unlock()
		return hs, nil
	}
	rows, err := vh.Index.DB.QueryContext(ctx, "SELECT id, path FROM notes")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	hs = &hiddenSet{fp: fp, ids: map[int64]bool{}, links: map[string]bool{}, gen: gen, checked: now}
	for rows.Next() {
		var id int64
		var p string
		if err := rows.Scan(&id, &p); err != nil {
			return nil, err
		}
		ok, link := f.allows(p)
		if !ok {
			hs.ids[id] = true
			hs.list = append(hs.list, id)
		} else if link {
			hs.links[p] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	vh.fenceMu.Lock()
	if vh.fenceSets == nil || len(vh.fenceSets) >= maxFenceSets {
		vh.fenceSets = map[string]*hiddenSet{}
	}
	vh.fenceSets[f.key] = hs
	vh.fenceMu.Unlock()
	return hs, nil
}

// ListNotes is the index's list of notes (Index.ListNotes) without the
// notes the call's read fence hides.
func (e *Env) ListNotes(ctx context.Context, vh *VaultHandle, withFrontmatter bool) ([]index.NoteSummary, error) {
	notes, err := vh.Index.ListNotes(ctx, withFrontmatter)
	if err != nil {
		return nil, err
	}
	return VisibleByID(ctx, FenceFor(ctx, vh), vh, notes, func(n index.NoteSummary) int64 { return n.ID })
}

// VisibleByID is Visible for indexed notes known by id: the fence's
// hidden set (computed once per index state) decides, without a look at
// the disk per note.
func VisibleByID[T any](ctx context.Context, f *Fence, vh *VaultHandle, list []T, id func(T) int64) ([]T, error) {
	hs, err := f.hiddenSet(ctx, vh)
	if hs == nil || err != nil {
		return list, err
	}
	out := make([]T, 0, len(list))
	for _, x := range list {
		if !hs.ids[id(x)] {
			out = append(out, x)
		}
	}
	return out, nil
}

// FencedWrite is the refusal of a write to a path the caller may not read:
// path_denied, the same whether a note is there or not (a preview would
// show it, and a create that finds the path taken would tell it exists).
func FencedWrite(rel string) *errs.Error {
	return errs.New(errs.CodePathDenied, "path %q may not be written: it is outside what this caller may read (read fence)", rel).
		With("path", rel).With("reason", "read_fence")
}

// Settings a write decision comes from (ACLDecision.Setting, writes).
const (
	SettingWrites     = "writes"      // writes off or read-only for the vault
	SettingScope      = "scope"       // the principal lacks the scope
	SettingVaults     = "vaults"      // the principal may not use the vault
	SettingWritePaths = "write_paths" // outside the allow-list
	SettingDenyPaths  = "deny_paths"  // a deny glob matched
)

// ACLDecision is whether one principal may read or write one path, and the
// rule that decided (inspect_acl).
type ACLDecision struct {
	Allowed bool `json:"allowed" jsonschema:"whether the access is allowed"`
	FenceRule
}

// DecideRead explains whether p may read rel in vh: its vaults and read
// scope, the note rule, then the vault's and p's read fences.
func (e *Env) DecideRead(vh *VaultHandle, p *auth.Principal, rel string) ACLDecision {
	if d, ok := principalGate(vh, p, auth.ScopeRead); !ok {
		return d
	}
	ok, rule := NewFence(vh.Vault, vh.Read, p).Decide(vh.Vault, rel)
	return ACLDecision{Allowed: ok, FenceRule: rule}
}

// DecideWrite explains whether p may write rel in vh: its vaults and write
// scope, the vault's write settings, the note rule, deny_paths (deny
// wins), write_paths; a path p may not read is not written either.
func (e *Env) DecideWrite(vh *VaultHandle, p *auth.Principal, rel string) ACLDecision {
	if d, ok := principalGate(vh, p, auth.ScopeWrite); !ok {
		return d
	}
	ws := e.WritesFor(vh)
	if err := ws.check("a write", vh.Name); err != nil {
		return ACLDecision{FenceRule: FenceRule{Setting: SettingWrites, Reason: err.Message}}
	}
	clean, err := vault.CleanRel(rel)
	if err != nil {
		return ACLDecision{FenceRule: FenceRule{Setting: SettingNoteRule, Reason: errs.As(err).Message}}
	}
	if why := vh.Vault.NoteRule(clean); why != "" {
		return ACLDecision{FenceRule: FenceRule{Setting: SettingNoteRule, Reason: why}}
	}
	deny := NewFence(nil, ReadRules{DenyReadPaths: ws.DenyPaths}, nil)
	if deny != nil {
		if ok, r := deny.decide(clean); !ok {
			return ACLDecision{FenceRule: FenceRule{Setting: SettingDenyPaths, Glob: r.Glob, Reason: "matches deny_paths " + r.Glob}}
		}
	}
	rule := FenceRule{Setting: SettingDefault, Reason: "writes are on and no write glob restricts this path"}
	if len(ws.WritePaths) > 0 {
		allow := NewFence(nil, ReadRules{ReadPaths: ws.WritePaths}, nil)
		ok, r := allow.decide(clean)
		if !ok {
			return ACLDecision{FenceRule: FenceRule{Setting: SettingWritePaths, Reason: "outside write_paths (" + strings.Join(ws.WritePaths, ", ") + ")"}}
		}
		rule = FenceRule{Setting: SettingWritePaths, Glob: r.Glob, Reason: "inside write_paths " + r.Glob}
	}
	if rd := e.DecideRead(vh, p, clean); !rd.Allowed && rd.Setting != SettingScope {
		rd.Reason = "not readable, so not writable: " + rd.Reason
		return rd
	}
	return ACLDecision{Allowed: true, FenceRule: rule}
}

// principalGate checks p's vaults and scope s; ok is false with the
// decision when they refuse.
func principalGate(vh *VaultHandle, p *auth.Principal, s auth.Scope) (ACLDecision, bool) {
	if p == nil || p.IsOwner() {
		return ACLDecision{}, true
	}
	if !p.MayUse(vh.Name) {
		return ACLDecision{FenceRule: FenceRule{Setting: SettingVaults, Reason: "principal " + p.Name + " may not use vault " + vh.Name}}, false
	}
	if missing := p.Missing(s); len(missing) > 0 {
		return ACLDecision{FenceRule: FenceRule{Setting: SettingScope, Reason: "principal " + p.Name + " does not hold the " + string(s) + " scope"}}, false
	}
	return ACLDecision{}, true
}

// Principal looks a principal up by name for inspect_acl: "owner" (or
// "") is the owner; others come from Env.Principals.
func (e *Env) Principal(name string) (*auth.Principal, error) {
	if name == "" || name == auth.OwnerName {
		return auth.Owner(auth.ViaLocal), nil
	}
	if e.Principals == nil {
		return nil, errs.New(errs.CodeNotFound, "no principal named %q: this server knows only the owner", name).With("principal", name)
	}
	p, err := e.Principals(name)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errs.New(errs.CodeNotFound, "no principal named %q (see `loci token list`)", name).With("principal", name)
	}
	return p, nil
}

// EventVisible reports whether an event of the bus may be shown to p: an
// event about a note (its path, the path it moved from, the paths of a
// write) that p's read fence on that vault hides is not.
func (e *Env) EventVisible(p *auth.Principal, ev Event) bool {
	if ev.Vault == "" {
		return true
	}
	vh, err := e.Vault(ev.Vault)
	if err != nil {
		return true
	}
	f := NewFence(vh.Vault, vh.Read, p)
	if f == nil {
		return true
	}
	for _, q := range []string{ev.Path, ev.From} {
		if q != "" && !f.Allows(q) {
			return false
		}
	}
	if paths, ok := ev.Data["paths"].([]string); ok {
		for _, q := range paths {
			if !f.Allows(q) {
				return false
			}
		}
	}
	return true
}
