package ops_test

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// TestFenceGlobMatching: deny globs match a path in any case and either
// Unicode normalization (fail closed); allow lists match as written after
// NFC (fail closed too: another spelling is outside); a principal only
// takes away.
func TestFenceGlobMatching(t *testing.T) {
	nfd := norm.NFD.String
	agent := func(read, deny []string) *auth.Principal {
		return &auth.Principal{Name: "a", Scopes: []auth.Scope{auth.ScopeRead}, ReadPaths: read, DenyReadPaths: deny, Via: auth.ViaToken}
	}
	cases := []struct {
		name  string
		rules ops.ReadRules
		p     *auth.Principal
		path  string
		want  bool
	}{
		{"deny as written", ops.ReadRules{DenyReadPaths: []string{"HR/**"}}, nil, "HR/x.md", false},
		{"deny lower case", ops.ReadRules{DenyReadPaths: []string{"HR/**"}}, nil, "hr/x.md", false},
		{"deny mixed case", ops.ReadRules{DenyReadPaths: []string{"hr/**"}}, nil, "Hr/Pay.MD", false},
		{"deny elsewhere", ops.ReadRules{DenyReadPaths: []string{"HR/**"}}, nil, "Public/HR.md", true},
		{"deny NFC glob, NFD path", ops.ReadRules{DenyReadPaths: []string{"Café/**"}}, nil, nfd("Café/x.md"), false},
		{"deny NFD glob, NFC path", ops.ReadRules{DenyReadPaths: []string{nfd("Café/**")}}, nil, "Café/x.md", false},
		{"deny NFD glob, upper NFC path", ops.ReadRules{DenyReadPaths: []string{nfd("café/**")}}, nil, "CAFÉ/x.md", false},
		{"deny a file glob", ops.ReadRules{DenyReadPaths: []string{"**/*secret*"}}, nil, "a/b/My SECRET plan.md", false},
		{"allow as written", ops.ReadRules{ReadPaths: []string{"Public/**"}}, nil, "Public/x.md", true},
		{"allow is case-exact", ops.ReadRules{ReadPaths: []string{"Public/**"}}, nil, "public/x.md", false},
		{"allow NFD glob, NFC path", ops.ReadRules{ReadPaths: []string{nfd("Café/**")}}, nil, "Café/x.md", true},
		{"allow NFC glob, NFD path", ops.ReadRules{ReadPaths: []string{"Café/**"}}, nil, nfd("Café/x.md"), true},
		{"outside allow", ops.ReadRules{ReadPaths: []string{"Public/**"}}, nil, "Other/x.md", false},
		{"deny wins over allow", ops.ReadRules{ReadPaths: []string{"**"}, DenyReadPaths: []string{"HR/**"}}, nil, "HR/x.md", false},
		{"principal narrows", ops.ReadRules{}, agent([]string{"Public/**"}, nil), "Other/x.md", false},
		{"principal allows within", ops.ReadRules{}, agent([]string{"Public/**"}, nil), "Public/x.md", true},
		{"principal cannot widen a deny", ops.ReadRules{DenyReadPaths: []string{"HR/**"}}, agent([]string{"HR/**"}, nil), "HR/x.md", false},
		{"principal cannot widen an allow", ops.ReadRules{ReadPaths: []string{"Public/**"}}, agent([]string{"**"}, nil), "HR/x.md", false},
		{"both allow lists hold", ops.ReadRules{ReadPaths: []string{"Public/**", "Team/**"}}, agent([]string{"Team/**"}, nil), "Public/x.md", false},
		{"principal deny", ops.ReadRules{}, agent(nil, []string{"Public/draft*"}), "Public/drafts.md", false},
		{"owner has no narrowing", ops.ReadRules{}, auth.Owner(auth.ViaOwnerToken), "HR/x.md", true},
	}
	for _, c := range cases {
		f := ops.NewFence(nil, c.rules, c.p)
		if got := f.Allows(c.path); got != c.want {
			t.Errorf("%s: Allows(%q) = %v, want %v", c.name, c.path, got, c.want)
		}
	}
	// No rules anywhere: a nil fence, which allows everything.
	if f := ops.NewFence(nil, ops.ReadRules{}, agent(nil, nil)); f != nil || !f.Allows("HR/x.md") || f.Active() {
		t.Errorf("empty fence = %+v", f)
	}
	if f := ops.FenceFor(context.Background(), &ops.VaultHandle{}); f != nil {
		t.Errorf("FenceFor without rules = %+v", f)
	}
}

// FuzzFenceDenyHoldsForEverySpelling: a deny glob over a folder fences
// every note in it whatever the case or Unicode normalization of the
// folder's name or the note's.
func FuzzFenceDenyHoldsForEverySpelling(f *testing.F) {
	for _, s := range []string{"Café", "ÅNGSTRÖM", "straße", "Ὀδυσσεύς", "ǅemal", "İstanbul", "x", "Ñandú"} {
		f.Add(s, "note")
	}
	f.Fuzz(func(t *testing.T, dir, name string) {
		if dir == "" || name == "" || strings.ContainsAny(dir+name, "/*?[]{}\\!\x00") || !norm.NFC.IsNormalString(norm.NFC.String(dir)) {
			return
		}
		fence := ops.NewFence(nil, ops.ReadRules{DenyReadPaths: []string{norm.NFC.String(dir) + "/**"}}, nil)
		for _, d := range []string{dir, norm.NFD.String(dir), norm.NFC.String(dir), strings.ToLower(dir), strings.ToUpper(norm.NFC.String(dir)), norm.NFD.String(strings.ToLower(dir))} {
			// Case mapping that changes length or is not a round trip
			// (ß → SS, İ → i̇) is another name, not the same one folded.
			if strings.ToLower(norm.NFC.String(d)) != strings.ToLower(norm.NFC.String(dir)) {
				continue
			}
			if p := d + "/" + name + ".md"; fence.Allows(p) {
				t.Errorf("deny %q/** allows %q", dir, p)
			}
		}
	})
}

// TestEventVisible: the event stream does not tell a principal about a
// note its read fence hides (created, moved from or to, written).
func TestEventVisible(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{"HR/a.md": "# A\n", "Public/b.md": "# B\n"})
	name := env.Vaults[0].Name
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"HR/**"}}
	p := &auth.Principal{Name: "a", Scopes: []auth.Scope{auth.ScopeRead}, ReadPaths: []string{"Public/**"}, Via: auth.ViaToken}
	cases := []struct {
		ev   ops.Event
		who  *auth.Principal
		want bool
	}{
		{ops.Event{Kind: ops.EventNoteCreated, Vault: name, Path: "HR/a.md"}, nil, false},
		{ops.Event{Kind: ops.EventNoteCreated, Vault: name, Path: "Public/b.md"}, p, true},
		{ops.Event{Kind: ops.EventNoteCreated, Vault: name, Path: "Other/c.md"}, nil, true},
		{ops.Event{Kind: ops.EventNoteCreated, Vault: name, Path: "Other/c.md"}, p, false},
		{ops.Event{Kind: ops.EventNoteMoved, Vault: name, Path: "Public/b.md", From: "HR/a.md"}, p, false},
		{ops.Event{Kind: ops.EventWriteApplied, Vault: name, Path: "Public/b.md", Data: map[string]any{"paths": []string{"Public/b.md", "HR/x.md"}}}, p, false},
		{ops.Event{Kind: ops.EventSyncFinished, Vault: name}, p, true},
	}
	for _, c := range cases {
		if got := env.EventVisible(c.who, c.ev); got != c.want {
			t.Errorf("%+v for %s = %v, want %v", c.ev, c.who.Label(), got, c.want)
		}
	}
}
