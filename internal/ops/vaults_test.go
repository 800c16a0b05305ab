package ops_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ai"
	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/aiops"
	"github.com/loci-dev/loci/internal/ops/opstest"
	"github.com/loci-dev/loci/internal/testutil"
)

// twoVaults opens vaults named C and D (in that order unless dFirst), each
// with its own write settings, indexed.
func twoVaults(t *testing.T, c, d ops.WriteSettings, dFirst bool) (*ops.Env, *ops.VaultHandle, *ops.VaultHandle) {
	t.Helper()
	ctx := context.Background()
	base := t.TempDir()
	files := map[string]string{"n.md": "# N\n\nnote\n", "Inbox/i.md": "i\n", "Private/p.md": "secret\n"}
	var hs [2]*ops.VaultHandle
	for i, name := range []string{"C", "D"} {
		root := filepath.Join(base, name)
		testutil.WriteFiles(t, root, files)
		vh, err := ops.OpenVault(ctx, root, t.TempDir(), nil, false)
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = vh
	}
	hs[0].Writes, hs[1].Writes = &c, &d
	env := &ops.Env{Vaults: []*ops.VaultHandle{hs[0], hs[1]}, Now: func() time.Time { return opstest.Now }}
	if dFirst {
		env.Vaults = []*ops.VaultHandle{hs[1], hs[0]}
	}
	t.Cleanup(env.Close)
	for _, vh := range env.Vaults {
		if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return env, hs[0], hs[1]
}

// snapshot records every file under root (the vault, .loci included) with
// its content.
func snapshot(t *testing.T, root string) map[string]string { return testutil.Tree(t, root) }

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if d := testutil.TreeDiff(before, after); d != "" {
		t.Errorf("%s changed: %s", what, d)
	}
}

// withVault adds "vault": name to a JSON object input.
func withVault(input, name string) string {
	var m map[string]any
	json.Unmarshal([]byte(input), &m)
	m["vault"] = name
	b, _ := json.Marshal(m)
	return string(b)
}

// TestEachVaultFollowsItsOwnWritePolicy: with two vaults served, a write to
// the vault whose policy forbids it is refused (writes_disabled for off or
// read-only, path_denied for deny_paths) and leaves its folder byte for
// byte as it was, while the other vault's write is applied. The refusal
// holds whether the call names the vault or reaches it as the default.
func TestEachVaultFollowsItsOwnWritePolicy(t *testing.T) {
	on := ops.WriteSettings{Enabled: true}
	for _, c := range []struct {
		name   string
		d      ops.WriteSettings
		code   string
		reason string
	}{
		{"read-only", ops.WriteSettings{Enabled: true, ReadOnly: true, DenyPaths: []string{"**"}}, errs.CodeWritesDisabled, "read_only"},
		{"off", ops.WriteSettings{}, errs.CodeWritesDisabled, "disabled"},
		{"deny all", ops.WriteSettings{Enabled: true, DenyPaths: []string{"**"}}, errs.CodePathDenied, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, dFirst := range []bool{false, true} {
				env, vc, vd := twoVaults(t, on, c.d, dFirst)
				before := snapshot(t, vd.Vault.Root)
				// Every write operation, naming D.
				for _, op := range opstest.Reg.List() {
					if op.Toolset != ops.ToolsetWrites || !op.IsWrite() {
						continue
					}
					got, d := opstest.CallErr(t, env, op.Name, withVault(op.Example, "D"))
					if c.code == errs.CodeWritesDisabled && (got != c.code || d["reason"] != c.reason || d["vault"] != "D") {
						t.Errorf("%s on D: %s %v", op.Name, got, d)
					}
					if c.code == errs.CodePathDenied && got == "" {
						t.Errorf("%s on D succeeded", op.Name)
					}
				}
				// Applied writes that would succeed on C.
				for _, in := range []string{
					`{"path":"n.md","content":"changed\n","overwrite":true,"apply":true}`,
					`{"path":"New.md","content":"new\n","apply":true}`,
				} {
					opstest.WantCode(t, env, "write_note", withVault(in, "D"), c.code)
					if dFirst { // D is the default vault: reached without naming it
						opstest.WantCode(t, env, "write_note", in, c.code)
					}
				}
				opstest.WantCode(t, env, "capture_note", `{"title":"x","vault":"D","apply":true}`, c.code)
				wantUndo := c.code
				if c.code == errs.CodePathDenied {
					wantUndo = errs.CodeUndoNotFound // D has nothing to undo
				}
				opstest.WantCode(t, env, "undo", `{"vault":"D","apply":true}`, wantUndo)
				sameTree(t, "vault D", before, snapshot(t, vd.Vault.Root))

				// C takes the same write.
				res := opstest.Call[ops.WriteResult](t, env, "write_note", `{"path":"n.md","content":"changed\n","overwrite":true,"apply":true,"vault":"C"}`)
				if b, _ := os.ReadFile(filepath.Join(vc.Vault.Root, "n.md")); !res.Applied || string(b) != "changed\n" {
					t.Errorf("write to C: %+v %q", res, b)
				}
				// Writes are advertised: one vault allows them.
				if op, _ := opstest.Reg.Get("write_note"); !env.Advertised(op) {
					t.Error("write_note not advertised though C allows writes")
				}
			}
		})
	}
}

// TestWritesOffEverywhere: with no vault allowing writes the dispatch
// pre-check refuses before decoding, and nothing is advertised.
func TestWritesOffEverywhere(t *testing.T) {
	env, _, _ := twoVaults(t, ops.WriteSettings{Enabled: true, ReadOnly: true}, ops.WriteSettings{}, false)
	if d := opstest.WantCode(t, env, "write_note", `{"path":"n.md","content":"y"}`, errs.CodeWritesDisabled); d["reason"] != "read_only" {
		t.Errorf("default vault C is read-only: %v", d)
	}
	if d := opstest.WantCode(t, env, "write_note", `{"path":"n.md","content":"y","vault":"D"}`, errs.CodeWritesDisabled); d["reason"] != "disabled" {
		t.Errorf("vault D is off: %v", d)
	}
	// The message names the vault and points at its own config.
	res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, "write_note", json.RawMessage(`{"path":"n.md","content":"y","vault":"D"}`))
	if m := res.Err.Message; !strings.Contains(m, `changes vault "D"`) || !strings.Contains(m, "that vault's .loci/config.yaml") {
		t.Errorf("message: %s", m)
	}
	for _, op := range opstest.Reg.List() {
		if op.Toolset == ops.ToolsetWrites && env.Advertised(op) {
			t.Errorf("%s advertised", op.Name)
		}
	}
}

// TestCaptureInboxPerVault: capture_note's default folder is the vault's.
func TestCaptureInboxPerVault(t *testing.T) {
	env, vc, vd := twoVaults(t, ops.WriteSettings{Enabled: true, Inbox: "CIn"}, ops.WriteSettings{Enabled: true, Inbox: "DIn"}, false)
	opstest.Call[ops.WriteResult](t, env, "capture_note", `{"title":"x","vault":"D","apply":true}`)
	opstest.Call[ops.WriteResult](t, env, "capture_note", `{"title":"y","apply":true}`)
	for _, p := range []string{filepath.Join(vd.Vault.Root, "DIn", "x.md"), filepath.Join(vc.Vault.Root, "CIn", "y.md")} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
}

// TestAIPerVault: each vault's AI runtime governs it: its allow/deny globs
// decide what reaches the provider, and an AI apply on a vault that does
// not allow writes is refused while its proposal (preview) still works.
func TestAIPerVault(t *testing.T) {
	env, vc, vd := twoVaults(t, ops.WriteSettings{Enabled: true}, ops.WriteSettings{Enabled: true, ReadOnly: true}, false)
	srv := aitest.New()
	t.Cleanup(srv.Close)
	rt := func(deny ...string) *ai.Runtime {
		return ai.New(ai.Settings{Provider: "openai-compatible", BaseURL: srv.BaseURL(), Model: "fake-1", Timeout: 5 * time.Second, DenyGlobs: deny}, filepath.Join(t.TempDir(), ".loci"))
	}
	vc.AI, vd.AI = rt(), rt("Private/**")
	var sent []string
	srv.Handler = func(req aitest.Request) aitest.Reply {
		var notes []any
		for _, n := range opstest.PromptNotes(req) {
			sent = append(sent, n[0])
			notes = append(notes, map[string]any{"path": n[0], "tags": []any{
				map[string]any{"tag": "checked", "confidence": 0.9, "citations": []any{opstest.Cite(n[0], n[1], 1, 1)}}}})
		}
		return aitest.Reply{Content: aitest.JSON(map[string]any{"notes": notes})}
	}
	// D's deny glob keeps Private/ from the provider; C's config has none.
	sent = nil
	opstest.Call[aiops.AITagOut](t, env, "ai_tag", `{"glob":"**","vault":"D"}`)
	if strings.Contains(strings.Join(sent, ","), "Private/") || len(sent) == 0 {
		t.Errorf("vault D sent %v", sent)
	}
	sent = nil
	opstest.Call[aiops.AITagOut](t, env, "ai_tag", `{"glob":"**","vault":"C"}`)
	if !strings.Contains(strings.Join(sent, ","), "Private/p.md") {
		t.Errorf("vault C sent %v", sent)
	}
	// A proposal on read-only D works; its apply is refused, D unchanged.
	before := snapshot(t, vd.Vault.Root)
	prev := opstest.Call[aiops.AITagOut](t, env, "ai_tag", `{"paths":["n.md"],"vault":"D"}`)
	if len(prev.Notes) != 1 || prev.Notes[0].Write == nil || prev.Notes[0].Write.Applied {
		t.Fatalf("preview on D: %+v", prev)
	}
	if d := opstest.WantCode(t, env, "ai_tag", `{"paths":["n.md"],"vault":"D","apply":true}`, errs.CodeWritesDisabled); d["vault"] != "D" {
		t.Errorf("apply on D: %v", d)
	}
	sameTree(t, "vault D", before, snapshot(t, vd.Vault.Root))
	out := opstest.Call[aiops.AITagOut](t, env, "ai_tag", `{"paths":["n.md"],"vault":"C","apply":true}`)
	if w := out.Notes[0].Write; w == nil || !w.Applied {
		t.Errorf("apply on C: %+v", out.Notes[0])
	}
	// ai_status reports each vault's own settings.
	st := opstest.Call[aiops.AIStatusOut](t, env, "ai_status", `{"vault":"D"}`)
	if strings.Join(st.DenyGlobs, ",") != "Private/**" {
		t.Errorf("ai_status D: %+v", st)
	}
	// AI is advertised when any vault has it.
	vc.AI = nil
	if op, _ := opstest.Reg.Get("ai_tag"); !env.Advertised(op) {
		t.Error("ai_tag not advertised though D has AI")
	}
}

// TestRunWriteChecksItsVault: the write pipeline itself refuses a vault
// whose settings forbid writes, whatever the dispatch pre-check let
// through: nothing is planned, locked or written. An AI proposal (preview)
// still runs there; its apply does not.
func TestRunWriteChecksItsVault(t *testing.T) {
	env, vc, vd := twoVaults(t, ops.WriteSettings{Enabled: true}, ops.WriteSettings{Enabled: true, ReadOnly: true}, false)
	ctx := context.Background()
	before := snapshot(t, vd.Vault.Root)
	for _, c := range []struct {
		vh      *ops.VaultHandle
		apply   bool
		propose bool
		want    string
	}{
		{vd, true, false, errs.CodeWritesDisabled},
		{vd, false, false, errs.CodeWritesDisabled}, // a write op's preview is a write too
		{vd, true, true, errs.CodeWritesDisabled},   // an AI apply
		{vc, true, false, ""},
		{vd, false, true, ""}, // an AI proposal (last: it takes the note's lock)
	} {
		if c.propose && !c.apply {
			sameTree(t, "vault D", before, snapshot(t, vd.Vault.Root))
		}
		built := false
		_, err := ops.RunWrite(ctx, env, ops.WriteSpec{Op: "write_note", Vault: c.vh, Opts: &ops.WriteOpts{Apply: c.apply}, Propose: c.propose, Locks: []string{"n.md"},
			Build: func(s *ops.Stage) error {
				built = true
				s.Main = "n.md"
				return nil
			}})
		if errs.Code(err) != c.want || built != (c.want == "") {
			t.Errorf("%s apply=%v propose=%v: %v (built %v)", c.vh.Name, c.apply, c.propose, err, built)
		}
	}
	// An idempotent replay is checked too.
	before = snapshot(t, vd.Vault.Root)
	ran := false
	_, err := ops.Idempotent(ctx, env, vd, "write_note", map[string]string{"k": "v"}, &ops.WriteOpts{Apply: true, IdempotencyKey: "k1"}, func() (*ops.WriteResult, error) {
		ran = true
		return &ops.WriteResult{}, nil
	})
	if errs.Code(err) != errs.CodeWritesDisabled || ran {
		t.Errorf("idempotent on D: %v ran=%v", err, ran)
	}
	sameTree(t, "vault D", before, snapshot(t, vd.Vault.Root))
}
