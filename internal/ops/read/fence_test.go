package read_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/ops/read"
)

// The secret of the fenced notes: no read surface may show it.
const secret = "quokkasecret"

// fencedFiles is a vault with a fenced HR folder (deny_read_paths) and a
// Private folder that a principal narrowed to Public/** may not read. Every
// note says "zebraword", so one query meets them all.
func fencedFiles() map[string]string {
	files := map[string]string{
		"HR/Salaries.md":   "---\nsalary_band: " + secret + "\ntags: [payroll]\n---\n# Salaries\n\nzebraword " + secret + " figures; see [[Public/p1]].\n",
		"HR/Reviews.md":    "# Reviews\n\nzebraword " + secret + " reviews #hrtag\n",
		"Private/Diary.md": "---\ndiary_key: x\n---\n# Diary\n\nzebraword private diary, links [[Salaries]] #diarytag\n",
		"Public/hub.md":    "---\nrelated: \"[[Salaries]]\"\n---\n# Hub\n\nzebraword hub links [[Salaries]] and [[Reviews]] and [[p1]] and [[Diary]] #pub\n",
	}
	for i := 1; i <= 7; i++ {
		files[fmt.Sprintf("Public/p%d.md", i)] = fmt.Sprintf("# P%d\n\nzebraword public note %d about payroll figures #pub\n", i, i)
	}
	return files
}

func fencedEnv(t *testing.T) *ops.Env {
	t.Helper()
	env := opstest.FixtureEnv(t, fencedFiles())
	env.Vaults[0].Read = ops.ReadRules{DenyReadPaths: []string{"HR/**"}}
	return env
}

var narrowed = &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeAdmin}, ReadPaths: []string{"Public/**"}, Via: auth.ViaToken}

// callAs runs an operation as p and returns its JSON (or the error's).
func callAs(t *testing.T, env *ops.Env, p *auth.Principal, name, input string) (string, *errs.Error) {
	t.Helper()
	res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test", Principal: p}, name, json.RawMessage(input))
	if res.Err != nil {
		b, _ := json.Marshal(res.Err)
		return string(b), res.Err
	}
	b, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

func noLeak(t *testing.T, what, js string, words ...string) {
	t.Helper()
	for _, w := range words {
		if strings.Contains(js, w) {
			t.Errorf("%s leaks %q: %s", what, w, js)
		}
	}
}

// TestReadFenceNeverLeaks: a fenced note's secret, path, title, tags and
// keys appear in no read operation's answer, for the vault's own fence and
// for a principal narrowed further.
func TestReadFenceNeverLeaks(t *testing.T) {
	env := fencedEnv(t)
	// A link inside the vault into the fenced folder: its real path decides.
	if err := os.Symlink("../HR/Salaries.md", filepath.Join(opstest.Root(env), "Public", "link.md")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if _, err := env.Sync(context.Background(), env.Vaults[0], indexAll()); err != nil {
		t.Fatal(err)
	}
	hrWords := []string{secret, "HR/", "Salaries.md", "Reviews.md", "payroll\"", "salary_band", "hrtag", "Public/link.md"}
	privWords := []string{"Private/", "private diary", "diary_key", "diarytag"}
	calls := []struct{ op, in string }{
		{"search_notes", `{"query": "zebraword", "mode": "lexical", "limit": 50}`},
		{"search_notes", `{"query": "zebraword quokkasecret", "mode": "lexical", "limit": 50}`},
		{"search_notes", `{"query": "quokkasecret", "mode": "lexical"}`},
		{"search_notes", `{"query": "payroll figures reviews salaries", "mode": "semantic", "limit": 50}`},
		{"search_notes", `{"query": "zebraword payroll figures", "mode": "hybrid", "expand_links": true, "explain": true, "limit": 50}`},
		{"search_notes", `{"path_glob": "**", "limit": 100}`},
		{"search_notes", `{"query": "zebraword figures", "mode": "lexical", "group_by": "section", "limit": 50}`},
		{"search_notes", `{"query": "payroll figures reviews salaries", "mode": "hybrid", "group_by": "section", "explain": true, "limit": 50}`},
		{"search_notes", `{"tags": ["payroll"], "sort": "title"}`},
		{"search_notes", `{"frontmatter": {"salary_band": "*"}}`},
		{"get_context", `{"query": "zebraword payroll", "expand_links": true, "preview_chars": 500, "limit": 20}`},
		{"get_context", `{"query": "salaries figures", "mode": "semantic", "preview_chars": 500}`},
		{"get_links", `{"path": "Public/hub.md", "depth": 3, "limit": 100}`},
		{"get_links", `{"path": "Public/p1.md", "depth": 2}`},
		{"get_graph", `{}`},
		{"get_graph", `{"path": "Public/hub.md", "depth": 3}`},
		{"get_vault_tree", `{"depth": 5}`},
		{"list_tags", `{}`},
		{"list_frontmatter_keys", `{}`},
		{"list_frontmatter_keys", `{"key": "salary_band"}`},
		{"list_frontmatter_values", `{"key": "salary_band"}`},
		{"list_frontmatter_values", `{"key": "tags"}`},
		{"recent_notes", `{"limit": 100}`},
		{"find_similar", `{"path": "Public/p1.md", "limit": 50}`},
		{"find_broken_links", `{}`},
		{"list_tasks", `{"status": "all"}`},
		{"suggest_typed_links", `{"path_glob": "**"}`},
		{"frontmatter_validate", `{"required": ["title"]}`},
		{"index_status", `{}`},
		{"resolve_note", `{"note": "Salaries"}`},
		{"resolve_note", `{"note": "HR/Salaries.md"}`},
		{"resolve_note", `{"note": "Sal"}`},
	}
	for _, who := range []struct {
		p     *auth.Principal
		words []string
	}{{nil, hrWords}, {narrowed, append(hrWords, privWords...)}} {
		for _, c := range calls {
			js, e := callAs(t, env, who.p, c.op, c.in)
			if e != nil && e.Code != errs.CodeNotFound {
				t.Errorf("%s %s as %s: %s", c.op, c.in, who.p.Label(), js)
			}
			// Words the input itself holds may be echoed back.
			var words []string
			for _, w := range who.words {
				if !strings.Contains(c.in, w) {
					words = append(words, w)
				}
			}
			noLeak(t, fmt.Sprintf("%s %s as %s", c.op, c.in, who.p.Label()), js, words...)
		}
		// Reading a fenced note is note_not_found, the same as a missing one.
		for _, in := range []string{`{"path": "HR/Salaries.md"}`, `{"note": "Salaries"}`, `{"note": "[[Salaries]]"}`, `{"path": "Public/link.md"}`, `{"path": "hr/salaries.md"}`} {
			js, e := callAs(t, env, who.p, "read_note", in)
			if e == nil || e.Code != errs.CodeNotFound {
				t.Errorf("read_note %s as %s = %s", in, who.p.Label(), js)
			}
			noLeak(t, "read_note "+in, js, secret, "Reviews.md")
		}
		_, missing := callAs(t, env, who.p, "read_note", `{"path": "HR/Nothing.md"}`)
		_, fenced := callAs(t, env, who.p, "read_note", `{"path": "HR/Salaries.md"}`)
		if missing == nil || fenced == nil || strings.Replace(missing.Message, "Nothing", "Salaries", 1) != fenced.Message {
			t.Errorf("a fenced note answers unlike a missing one: %v / %v", missing, fenced)
		}
		for _, op := range []string{"get_links", "find_similar", "suggest_typed_links"} {
			if js, e := callAs(t, env, who.p, op, `{"path": "HR/Salaries.md"}`); e == nil || e.Code != errs.CodeNotFound {
				t.Errorf("%s on a fenced note as %s = %s", op, who.p.Label(), js)
			}
		}
	}
	// The narrowed principal sees the Public notes, and only them.
	js, _ := callAs(t, env, narrowed, "get_vault_tree", `{"depth": 5}`)
	var tree read.TreeOut
	json.Unmarshal([]byte(js), &tree)
	if tree.NoteCount != 8 {
		t.Errorf("tree count = %d, want 8 visible notes: %s", tree.NoteCount, js)
	}
	js, _ = callAs(t, env, narrowed, "list_tags", `{}`)
	if !strings.Contains(js, `{"tag":"pub","notes":8}`) {
		t.Errorf("tags = %s", js)
	}
	js, _ = callAs(t, env, narrowed, "index_status", `{}`)
	var st read.IndexStatusOut
	json.Unmarshal([]byte(js), &st)
	if st.Notes != 8 || st.IndexBytes != 0 {
		t.Errorf("index_status notes = %d bytes = %d, want 8 and 0", st.Notes, st.IndexBytes)
	}
	// The owner with the vault fence sees Private, not HR.
	js, _ = callAs(t, env, nil, "read_note", `{"path": "Private/Diary.md"}`)
	if !strings.Contains(js, "private diary") {
		t.Errorf("owner cannot read Private: %s", js)
	}
}

// TestNoFenceSeesEverything: the owner of a vault without read rules sees
// every note: the fence costs nothing and hides nothing.
func TestNoFenceSeesEverything(t *testing.T) {
	env := opstest.FixtureEnv(t, fencedFiles())
	if f := env.ReadFence(context.Background(), env.Vaults[0]); f != nil {
		t.Fatalf("fence without rules = %+v, want nil", f)
	}
	js, _ := callAs(t, env, nil, "search_notes", `{"query": "quokkasecret", "mode": "lexical"}`)
	if !strings.Contains(js, "HR/Salaries.md") || !strings.Contains(js, "HR/Reviews.md") {
		t.Errorf("owner search = %s", js)
	}
	js, _ = callAs(t, env, nil, "read_note", `{"path": "HR/Salaries.md"}`)
	if !strings.Contains(js, secret) {
		t.Errorf("owner read = %s", js)
	}
	js, _ = callAs(t, env, nil, "list_tags", `{}`)
	if !strings.Contains(js, `"payroll"`) {
		t.Errorf("owner tags = %s", js)
	}
}

// TestFencedSearchPages: the fence filters before ranking and paging, so
// every page but the last is full and the cursors walk the visible notes
// exactly once, in every mode.
func TestFencedSearchPages(t *testing.T) {
	env := fencedEnv(t)
	for _, mode := range []string{"lexical", "semantic", "hybrid"} {
		for _, p := range []*auth.Principal{nil, narrowed} {
			seen := map[string]bool{}
			cursor := ""
			for page := 0; page < 20; page++ {
				in := fmt.Sprintf(`{"query": "zebraword public note payroll", "mode": %q, "limit": 3, "cursor": %q}`, mode, cursor)
				js, e := callAs(t, env, p, "search_notes", in)
				if e != nil {
					t.Fatalf("%s: %s", in, js)
				}
				var out read.SearchNotesOut
				json.Unmarshal([]byte(js), &out)
				noLeak(t, mode+" page", js, secret, "HR/")
				for _, r := range out.Results {
					if seen[r.Path] {
						t.Errorf("%s as %s: %s on two pages", mode, p.Label(), r.Path)
					}
					seen[r.Path] = true
					if p != nil && !strings.HasPrefix(r.Path, "Public/") {
						t.Errorf("%s as %s: %s shown", mode, p.Label(), r.Path)
					}
				}
				if out.NextCursor == "" {
					break
				}
				if len(out.Results) != 3 {
					t.Errorf("%s as %s: page %d has %d results and a next cursor", mode, p.Label(), page, len(out.Results))
				}
				cursor = out.NextCursor
			}
			want := 9 // Public (8) + Private
			if p != nil {
				want = 8
			}
			if mode == "lexical" && len(seen) != want {
				t.Errorf("%s as %s: %d notes over the pages, want %d: %v", mode, p.Label(), len(seen), want, seen)
			}
			if len(seen) == 0 {
				t.Errorf("%s as %s: nothing found", mode, p.Label())
			}
		}
	}
}

func indexAll() index.SyncOptions { return index.SyncOptions{} }

// TestInspectACL: for a principal and a path, read and write with the rule
// that decided; admin only.
func TestInspectACL(t *testing.T) {
	env := fencedEnv(t)
	env.Writes = ops.WriteSettings{Enabled: true, DenyPaths: []string{"Public/locked/**"}, WritePaths: []string{"Public/**", "HR/**"}}
	writer := &auth.Principal{Name: "writer", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite}, DenyReadPaths: []string{"Public/p1.md"}, Via: auth.ViaToken}
	env.Principals = func(name string) (*auth.Principal, error) {
		switch name {
		case "agent":
			return narrowed, nil
		case "writer":
			return writer, nil
		}
		return nil, nil
	}
	cases := []struct {
		in                   string
		read                 bool
		readRule, readGlob   string
		write                bool
		writeRule, writeGlob string
	}{
		{`{"path": "Public/p2.md"}`, true, ops.SettingDefault, "", true, ops.SettingWritePaths, "Public/**"},
		{`{"path": "HR/Salaries.md"}`, false, ops.SettingDenyReadPaths, "HR/**", false, ops.SettingDenyReadPaths, "HR/**"},
		{`{"path": "hr/salaries.md"}`, false, ops.SettingDenyReadPaths, "HR/**", false, ops.SettingWritePaths, ""},
		{`{"path": "Private/Diary.md", "principal": "agent"}`, false, ops.SettingPrincipalReadPaths, "", false, ops.SettingScope, ""},
		{`{"path": "Public/p2.md", "principal": "agent"}`, true, ops.SettingPrincipalReadPaths, "Public/**", false, ops.SettingScope, ""},
		{`{"path": "Public/p1.md", "principal": "writer"}`, false, ops.SettingPrincipalDenyReadPaths, "Public/p1.md", false, ops.SettingPrincipalDenyReadPaths, "Public/p1.md"},
		{`{"path": "Public/locked/x.md", "principal": "writer"}`, true, ops.SettingDefault, "", false, ops.SettingDenyPaths, "Public/locked/**"},
		{`{"path": "Other/x.md", "principal": "owner"}`, true, ops.SettingDefault, "", false, ops.SettingWritePaths, ""},
		{`{"path": "Public/image.png"}`, false, ops.SettingNoteRule, "", false, ops.SettingNoteRule, ""},
	}
	for _, c := range cases {
		js, e := callAs(t, env, nil, "inspect_acl", c.in)
		if e != nil {
			t.Fatalf("%s: %s", c.in, js)
		}
		var out read.InspectACLOut
		json.Unmarshal([]byte(js), &out)
		if out.Read.Allowed != c.read || out.Read.Setting != c.readRule || out.Read.Glob != c.readGlob ||
			out.Write.Allowed != c.write || out.Write.Setting != c.writeRule || out.Write.Glob != c.writeGlob || out.Read.Reason == "" || out.Write.Reason == "" {
			t.Errorf("%s = %s", c.in, js)
		}
	}
	// A link's real path decides.
	if err := os.Symlink("../HR/Salaries.md", filepath.Join(opstest.Root(env), "Public", "link.md")); err == nil {
		js, _ := callAs(t, env, nil, "inspect_acl", `{"path": "Public/link.md"}`)
		var out read.InspectACLOut
		json.Unmarshal([]byte(js), &out)
		if out.Read.Allowed || out.Read.Resolved != "HR/Salaries.md" || out.Read.Setting != ops.SettingDenyReadPaths {
			t.Errorf("link = %s", js)
		}
	}
	// Paths out of the vault or into closed folders are refused as every
	// path input is.
	for _, p := range []string{"../x.md", ".obsidian/app.md", "/etc/passwd"} {
		if js, e := callAs(t, env, nil, "inspect_acl", `{"path": "`+p+`"}`); e == nil || e.Code != errs.CodePathDenied {
			t.Errorf("inspect_acl %s = %s", p, js)
		}
	}
	// Admin only; an unknown principal is not_found.
	if js, e := callAs(t, env, writer, "inspect_acl", `{"path": "Public/p2.md"}`); e == nil || e.Code != errs.CodeForbidden {
		t.Errorf("inspect_acl without admin = %s", js)
	}
	if js, e := callAs(t, env, nil, "inspect_acl", `{"path": "Public/p2.md", "principal": "nobody"}`); e == nil || e.Code != errs.CodeNotFound {
		t.Errorf("unknown principal = %s", js)
	}
	// The caller by default.
	js, _ := callAs(t, env, narrowed, "inspect_acl", `{"path": "Private/Diary.md"}`)
	if !strings.Contains(js, `"principal":"agent"`) || !strings.Contains(js, `"allowed":false`) {
		t.Errorf("caller = %s", js)
	}
}

// TestWritesHonourReadFences: a write never reads, shows or creates a path
// the caller may not read (path_denied, reason read_fence, whether a note
// is there or not), and renaming a note leaves the links inside fenced
// notes alone without naming them.
func TestWritesHonourReadFences(t *testing.T) {
	env := fencedEnv(t)
	env.Writes = ops.WriteSettings{Enabled: true}
	p := &auth.Principal{Name: "editor", Scopes: []auth.Scope{auth.ScopeRead, auth.ScopeWrite, auth.ScopeDestructive}, ReadPaths: []string{"Public/**"}, Confirm: auth.PolicyAllow, Via: auth.ViaToken}
	for _, in := range []struct{ op, in string }{
		{"write_note", `{"path": "HR/Salaries.md", "content": "x"}`},   // exists
		{"write_note", `{"path": "HR/Nothing.md", "content": "x"}`},    // does not
		{"write_note", `{"path": "Private/Diary.md", "content": "x"}`}, // outside the principal's read_paths
		{"edit_note", `{"path": "HR/Salaries.md", "patches": [{"op": "set_frontmatter", "key": "k", "value": "v"}]}`},
		{"set_task_status", `{"path": "HR/Salaries.md", "line": 7, "status": "done"}`},
	} {
		js, e := callAs(t, env, p, in.op, in.in)
		if e == nil || e.Code != errs.CodePathDenied || e.Details["reason"] != "read_fence" {
			t.Errorf("%s %s = %s", in.op, in.in, js)
		}
		noLeak(t, in.op, js, secret, "salary_band")
	}
	js, e := callAs(t, env, p, "relocate_note", `{"path": "Public/p1.md", "to": "Public/q1.md", "apply": true}`)
	if e != nil {
		t.Fatalf("relocate_note: %s", js)
	}
	noLeak(t, "relocate_note", js, "HR/", "Private/", secret) // the hub's own text names [[Salaries]]
	if b, _ := os.ReadFile(filepath.Join(opstest.Root(env), "HR", "Salaries.md")); !strings.Contains(string(b), "[[Public/p1]]") {
		t.Errorf("a fenced note was rewritten: %s", b)
	}
	js, _ = callAs(t, env, p, "write_history", `{}`)
	noLeak(t, "write_history", js, "HR/", "Private/")
}

// TestIndexStatusHidesServerPaths: a principal other than the owner is not
// told where the vaults and the index live, nor which vaults it may not use.
func TestIndexStatusHidesServerPaths(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{"a.md": "# A\n"})
	other := opstest.FixtureEnv(t, map[string]string{"b.md": "# B\n"})
	other.Vaults[0].Name = "other"
	env.Vaults = append(env.Vaults, other.Vaults[0])
	first := env.Vaults[0].Name

	js, e := callAs(t, env, nil, "index_status", `{}`)
	if e != nil {
		t.Fatal(js)
	}
	owner := decode[read.IndexStatusOut](t, js)
	if owner.Vault != env.Vaults[0].Vault.Root || owner.IndexPath == "" || len(owner.Vaults) != 2 || owner.Vaults[1].Root == "" {
		t.Errorf("owner status = %s", js)
	}

	agent := &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead}, Vaults: []string{first}, Via: auth.ViaToken}
	js, e = callAs(t, env, agent, "index_status", `{}`)
	if e != nil {
		t.Fatal(js)
	}
	st := decode[read.IndexStatusOut](t, js)
	if st.Vault != first || st.IndexPath != "" || len(st.Vaults) != 1 || st.Vaults[0].Name != first || st.Vaults[0].Root != "" || st.Notes != 1 {
		t.Errorf("agent status = %s", js)
	}
	for _, root := range []string{env.Vaults[0].Vault.Root, env.Vaults[1].Vault.Root} {
		if strings.Contains(js, root) {
			t.Errorf("agent status names %s: %s", root, js)
		}
	}
}
