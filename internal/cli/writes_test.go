package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/testutil"
)

func etagFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestWriteCommands(t *testing.T) {
	v := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, v, map[string]string{"A.md": "# A\n\ntext\n", "B.md": "See [[A]].\n"})
	if _, errOut, code := run(t, "index", v, "-q"); code != 0 {
		t.Fatal(errOut)
	}

	// Preview by default: the diff, nothing written.
	out, errOut, code := run(t, "capture", "Idea: one", "--content", "body", "--tag", "idea", "--vault", v)
	if code != 0 || !strings.Contains(out, "+++ b/Inbox/Idea one.md") || !strings.Contains(out, "preview: would create Inbox/Idea one.md") {
		t.Fatalf("capture preview: %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(v, "Inbox", "Idea one.md")); !os.IsNotExist(err) {
		t.Fatal("a preview wrote the note")
	}
	out, _, code = run(t, "capture", "Idea: one", "--content", "body", "--tag", "idea", "--vault", v, "--apply")
	if code != 0 || !strings.Contains(out, "applied: create Inbox/Idea one.md") {
		t.Fatalf("capture --apply: %d %q", code, out)
	}

	// edit with patches from a file, guarded by the etag.
	patches := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(patches, []byte(`[{"op":"append_to_section","heading":"A","content":"more"},{"op":"set_frontmatter","key":"status","value":"done"}]`), 0o644)
	etag := etagFile(t, filepath.Join(v, "A.md"))
	out, errOut, code = run(t, "edit", "A.md", "--patches", "@"+patches, "--if-match", etag, "--apply", "--vault", v, "--format", "json")
	if code != 0 {
		t.Fatalf("edit: %d %s", code, errOut)
	}
	var res struct {
		Applied bool   `json:"applied"`
		Etag    string `json:"etag"`
		UndoID  string `json:"undo_id"`
	}
	json.Unmarshal([]byte(out), &res)
	if b, _ := os.ReadFile(filepath.Join(v, "A.md")); string(b) != "---\nstatus: done\n---\n# A\n\ntext\nmore\n" || !res.Applied || res.Etag != etagFile(t, filepath.Join(v, "A.md")) {
		t.Fatalf("edit result %q %+v", b, res)
	}
	// The old etag no longer matches: exit 7.
	_, errOut, code = run(t, "edit", "A.md", "--patches", `[{"op":"delete_lines","start_line":1}]`, "--if-match", etag, "--apply", "--vault", v)
	if code != 7 || !strings.Contains(errOut, "[etag_mismatch]") {
		t.Errorf("stale etag: %d %q", code, errOut)
	}
	_, errOut, code = run(t, "edit", "A.md", "--patches", `not json`, "--vault", v)
	if code != 2 {
		t.Errorf("bad --patches: %d %q", code, errOut)
	}

	// write from stdin, mv with link rewriting, rm to the trash.
	out, _, code = runStdin(t, "# C\n", "write", "C.md", "--content", "-", "--apply", "--vault", v)
	if b, _ := os.ReadFile(filepath.Join(v, "C.md")); code != 0 || string(b) != "# C\n" {
		t.Errorf("write from stdin: %d %q %q", code, out, b)
	}
	out, _, code = run(t, "mv", "A.md", "Archive/A2.md", "--apply", "--vault", v)
	if b, _ := os.ReadFile(filepath.Join(v, "B.md")); code != 0 || string(b) != "See [[A2]].\n" || !strings.Contains(out, "move A.md → Archive/A2.md") {
		t.Errorf("mv: %d %q %q", code, out, b)
	}
	out, _, code = run(t, "rm", "C.md", "--apply", "--vault", v)
	if _, err := os.Stat(filepath.Join(v, ".trash", "C.md")); code != 0 || err != nil {
		t.Errorf("rm: %d %q", code, out)
	}
	out, _, _ = run(t, "history", "--vault", v)
	if !strings.Contains(out, "delete_note  [cli]") || !strings.Contains(out, "relocate_note") {
		t.Errorf("history:\n%s", out)
	}
	// undo: the last write (the rm), then the mv by id.
	out, _, code = run(t, "undo", "--apply", "--vault", v)
	if _, err := os.Stat(filepath.Join(v, "C.md")); code != 0 || err != nil {
		t.Errorf("undo: %d %q", code, out)
	}
	var hist struct {
		Entries []struct {
			ID        string `json:"id"`
			Operation string `json:"operation"`
		} `json:"entries"`
	}
	out, _, _ = run(t, "history", "--vault", v, "--format", "json")
	json.Unmarshal([]byte(out), &hist)
	for _, e := range hist.Entries {
		if e.Operation == "relocate_note" {
			if _, errOut, code := run(t, "undo", e.ID, "--apply", "--vault", v); code != 0 {
				t.Errorf("undo %s: %s", e.ID, errOut)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(v, "B.md")); string(b) != "See [[A]].\n" {
		t.Errorf("after undo of mv: %q", b)
	}

	// Read-only mode and the config gate.
	_, errOut, code = run(t, "capture", "x", "--apply", "--vault", v, "--read-only")
	if code != 4 || !strings.Contains(errOut, "[writes_disabled]") {
		t.Errorf("--read-only: %d %q", code, errOut)
	}
	t.Setenv("LOCI_READ_ONLY", "1")
	if _, _, code = run(t, "capture", "x", "--vault", v); code != 4 {
		t.Errorf("LOCI_READ_ONLY: %d", code)
	}
	t.Setenv("LOCI_READ_ONLY", "")
	os.WriteFile(filepath.Join(v, ".loci", "config.yaml"), []byte("writes:\n  enabled: false\n"), 0o644)
	if _, _, code = run(t, "capture", "x", "--vault", v); code != 4 {
		t.Errorf("writes.enabled: false in the config: %d", code)
	}
	if _, _, code = run(t, "capture", "x", "--vault", v, "--enable-writes"); code != 0 {
		t.Errorf("--enable-writes over the config: %d", code)
	}
	os.WriteFile(filepath.Join(v, ".loci", "config.yaml"), []byte("writes:\n  deny_paths: [\"Inbox/**\"]\n"), 0o644)
	if _, errOut, code = run(t, "capture", "x", "--vault", v); code != 4 || !strings.Contains(errOut, "deny_paths") {
		t.Errorf("deny_paths: %d %q", code, errOut)
	}
}

func runStdin(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString(stdin)
	w.Close()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old }()
	return run(t, args...)
}

// Servers (loci mcp, loci serve) start with writes off unless told.
func TestServerWriteSettings(t *testing.T) {
	v := demoCopy(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, env, config string
		flag, want        bool
		readOnly          bool
	}{
		{"default off", "", "", false, false, false},
		{"flag", "", "", true, true, false},
		{"env", "1", "", false, true, false},
		{"env off beats config", "0", "writes:\n  enabled: true\n", false, false, false},
		{"the vault's own config cannot turn them on", "", "writes:\n  enabled: true\n", false, false, false},
		{"the vault's own config can make the vault read-only", "1", "writes:\n  read_only: true\n", false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("LOCI_ENABLE_WRITES", c.env)
			os.MkdirAll(filepath.Join(v, ".loci"), 0o755)
			os.WriteFile(filepath.Join(v, ".loci", "config.yaml"), []byte(c.config), 0o644)
			g := &globals{vault: v, enableWrites: c.flag, stdout: &strings.Builder{}, stderr: &strings.Builder{}}
			env, err := g.openServeEnv(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			if ws := env.WritesFor(env.Vaults[0]); ws.Enabled != c.want || ws.ReadOnly != c.readOnly {
				t.Errorf("writes %+v", ws)
			}
		})
	}
}
