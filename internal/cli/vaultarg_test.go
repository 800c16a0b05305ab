package cli

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/testutil"
)

// entries lists a folder's names (to check that a refused command
// created nothing).
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// A command run where no vault was given and the working directory is
// not a vault refuses (vault_not_found, exit 3, a hint) and creates
// nothing: no .loci/ index in a random folder.
func TestVaultRuleRefusesAFolderThatIsNotAVault(t *testing.T) {
	t.Setenv("LOCI_VAULT", "")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# foo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(t.TempDir(), "golden.json")
	if err := os.WriteFile(golden, []byte(`[{"id":"q1","query":"foo","relevant_paths":["notes.md"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, args := range [][]string{
		{"search", "foo"},
		{"index"},
		{"tags"},
		{"status"},
		{"read", "notes.md"},
		{"config", "show"},
		{"config", "validate"},
		{"token"},
		{"serve", "--addr", "127.0.0.1:0"},
		{"mcp"},
		{"mcp-config", "claude-code"},
		{"eval", "--golden", golden},
	} {
		out, errOut, code := run(t, args...)
		if code != 3 || !strings.Contains(errOut, "is not a vault") || !strings.Contains(errOut, "[vault_not_found]") ||
			!strings.Contains(errOut, "--vault DIR") {
			t.Errorf("%v: code %d, want 3 and the hint\nstdout %s\nstderr %s", args, code, out, errOut)
		}
		if got := entries(t, dir); len(got) != 1 || got[0] != "notes.md" {
			t.Fatalf("%v created %v in a folder that is not a vault", args, got)
		}
	}
	// JSON errors carry the folder and the hint as details.
	_, errOut, _ := run(t, "search", "foo", "--format", "json")
	if !strings.Contains(errOut, `"cwd": "`+dir+`"`) || !strings.Contains(errOut, `"hint": "pass --vault DIR`) {
		t.Errorf("json error without details: %s", errOut)
	}
}

// Inside a vault's subfolder the refusal names the vault (parents do not
// count, but are pointed at).
func TestVaultRuleNamesTheParentVault(t *testing.T) {
	t.Setenv("LOCI_VAULT", "")
	v := demoCopy(t) // has .obsidian/
	t.Chdir(filepath.Join(v, "Ideas"))
	_, errOut, code := run(t, "search", "spaced")
	if code != 3 || !strings.Contains(errOut, "you are inside the vault "+v+": pass --vault "+v) {
		t.Fatalf("code %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(v, "Ideas", ".loci")); !os.IsNotExist(err) {
		t.Fatalf("a .loci/ was created in the subfolder: %v", err)
	}
	g := &globals{}
	if _, err := g.vaultDir(); errs.Code(err) != errs.CodeVaultNotFound || errs.As(err).Details["parent_vault"] != v {
		t.Fatalf("details: %v", err)
	}
}

// The working directory is used when it is a vault, by each marker:
// .obsidian/ (Obsidian), logseq/ (a Logseq graph), .loci/ (indexed by
// loci, e.g. with `loci index .`).
func TestVaultRuleUsesAWorkingDirectoryThatIsAVault(t *testing.T) {
	t.Setenv("LOCI_VAULT", "")
	v := demoCopy(t)
	t.Chdir(v)
	out, errOut, code := run(t, "search", "spaced", "repetition")
	if code != 0 || !strings.Contains(out, "Ideas/Spaced repetition.md") {
		t.Fatalf("obsidian vault as cwd: code %d\n%s\n%s", code, out, errOut)
	}

	graph := t.TempDir()
	for _, f := range []string{"logseq/config.edn", "pages/Atlas.md"} {
		os.MkdirAll(filepath.Dir(filepath.Join(graph, f)), 0o755)
		os.WriteFile(filepath.Join(graph, f), []byte("- Atlas launch plan\n"), 0o644)
	}
	t.Chdir(graph)
	out, errOut, code = run(t, "search", "launch")
	if code != 0 || !strings.Contains(out, "pages/Atlas.md") {
		t.Fatalf("logseq graph as cwd: code %d\n%s\n%s", code, out, errOut)
	}

	// A plain folder becomes a vault by being indexed explicitly.
	plain := t.TempDir()
	os.WriteFile(filepath.Join(plain, "a.md"), []byte("# Kestrel\n"), 0o644)
	t.Chdir(plain)
	if _, _, code := run(t, "search", "kestrel"); code != 3 {
		t.Fatalf("plain folder: code %d, want 3", code)
	}
	if out, errOut, code := run(t, "index", "."); code != 0 {
		t.Fatalf("index .: code %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = run(t, "search", "kestrel")
	if code != 0 || !strings.Contains(out, "a.md") {
		t.Fatalf("after loci index .: code %d\n%s\n%s", code, out, errOut)
	}
}

// A vault given by flag, environment or (for the commands that take only
// vaults) argument works from anywhere; two different ones are refused.
func TestVaultRuleGivenVault(t *testing.T) {
	t.Setenv("LOCI_VAULT", "")
	v := demoCopy(t)
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	out, _, code := run(t, "search", "spaced", "repetition", "--vault", v)
	if code != 0 || !strings.Contains(out, "Ideas/Spaced repetition.md") {
		t.Fatalf("--vault: code %d\n%s", code, out)
	}
	if out, _, code := run(t, "index", v, "-q"); code != 0 || !strings.Contains(out, "unchanged 16") {
		t.Fatalf("index <vault>: code %d\n%s", code, out)
	}
	if out, _, code := run(t, "config", "show", v); code != 0 || !strings.Contains(out, v) {
		t.Fatalf("config show <vault>: code %d\n%s", code, out)
	}
	// The same folder twice is one vault; two folders are refused.
	if _, errOut, code := run(t, "index", v, "--vault", v+"/", "-q"); code != 0 {
		t.Fatalf("same vault twice: code %d %s", code, errOut)
	}
	other := demoCopy(t)
	if _, errOut, code := run(t, "index", v, "--vault", other); code != 2 || !strings.Contains(errOut, "two vaults given") {
		t.Fatalf("two vaults: code %d %s", code, errOut)
	}
	if _, errOut, code := run(t, "serve", v, other, "--vault", v); code != 2 || !strings.Contains(errOut, "both as arguments and with --vault") {
		t.Fatalf("serve with arguments and --vault: code %d %s", code, errOut)
	}

	t.Setenv("LOCI_VAULT", v)
	out, _, code = run(t, "tags")
	if code != 0 || !strings.Contains(out, "learning") {
		t.Fatalf("LOCI_VAULT: code %d\n%s", code, out)
	}
	// An argument overrides LOCI_VAULT (a default, like the flag's).
	if out, _, code := run(t, "index", other, "-q"); code != 0 || !strings.Contains(out, other) {
		t.Fatalf("index <vault> with LOCI_VAULT set: code %d\n%s", code, out)
	}
	if got := entries(t, elsewhere); len(got) != 0 {
		t.Fatalf("created %v in the working directory", got)
	}
}

// The old surprise: `loci search foo <vault>` searched the working
// directory for "foo <vault>". A last word that is a folder is refused
// with the --vault hint; quoted, the words are a query.
func TestVaultRuleFolderAfterTheQuery(t *testing.T) {
	t.Setenv("LOCI_VAULT", "")
	parent := t.TempDir()
	v := filepath.Join(parent, "vault")
	os.MkdirAll(filepath.Join(v, ".obsidian"), 0o755)
	os.WriteFile(filepath.Join(v, "a.md"), []byte("# Heron\n\nthe heron vault\n"), 0o644)
	t.Chdir(parent)
	_, errOut, code := run(t, "search", "heron", "vault")
	if code != 2 || !strings.Contains(errOut, `"vault" is a folder, and would be read as part of the query`) ||
		!strings.Contains(errOut, "--vault vault") {
		t.Fatalf("code %d: %s", code, errOut)
	}
	if strings.Contains(errOut, "loci loci") {
		t.Fatalf("the hint names the command twice: %s", errOut)
	}
	// Inside a vault, a last word that names one of its plain folders is
	// a word of the query; a folder that is a vault, or a path, is not.
	os.MkdirAll(filepath.Join(v, "heron"), 0o755)
	os.MkdirAll(filepath.Join(v, "other", ".obsidian"), 0o755)
	t.Chdir(v)
	out, errOut, code := run(t, "search", "the", "heron")
	if code != 0 || !strings.Contains(out, "a.md") {
		t.Fatalf("search the heron inside the vault (heron/ is a folder there): code %d\n%s%s", code, out, errOut)
	}
	for _, last := range []string{"other", "./heron"} {
		_, errOut, code = run(t, "search", "the", last)
		if code != 2 || !strings.Contains(errOut, "would be read as part of the query") {
			t.Fatalf("search the %s: code %d: %s", last, code, errOut)
		}
	}
	t.Chdir(parent)
	// Ops with no positional argument, or too many: the same hint.
	_, errOut, code = run(t, "tags", "vault")
	if code != 2 || !strings.Contains(errOut, `"vault" is a folder`) {
		t.Fatalf("tags <folder>: code %d: %s", code, errOut)
	}
	_, errOut, code = run(t, "read", "a.md", "b.md", "--vault", v)
	if code != 2 || !strings.Contains(errOut, "the vault is given with --vault DIR") {
		t.Fatalf("read with two arguments: code %d: %s", code, errOut)
	}
	if got := entries(t, parent); len(got) != 1 {
		t.Fatalf("created %v", got)
	}
	// Inside the vault, a quoted query may end with a folder's name.
	t.Chdir(v)
	os.Mkdir(filepath.Join(v, "vault"), 0o755)
	out, errOut, code = run(t, "search", "heron vault")
	if code != 0 || !strings.Contains(out, "a.md") {
		t.Fatalf("quoted query: code %d\n%s\n%s", code, out, errOut)
	}
	// Unquoted too: vault/ here is a plain folder of this vault, not a vault.
	if _, _, code := run(t, "search", "heron", "vault"); code != 0 {
		t.Fatalf("unquoted query ending in a plain folder of the vault: code %d, want 0", code)
	}
}

// loci confirm needs a vault only for its token: with LOCI_TOKEN set it
// talks to the server from any folder (and creates nothing there).
func TestVaultRuleConfirmWithLociToken(t *testing.T) {
	t.Setenv("LOCI_VAULT", "")
	t.Setenv("LOCI_TOKEN", "")
	dir := t.TempDir()
	t.Chdir(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: the call fails to connect
	_, errOut, code := run(t, "confirm", "--list", "--addr", addr)
	if code != 3 || !strings.Contains(errOut, "is not a vault") {
		t.Fatalf("without LOCI_TOKEN: code %d %s", code, errOut)
	}
	t.Setenv("LOCI_TOKEN", "a-token-of-sixteen-chars")
	_, errOut, code = run(t, "confirm", "--list", "--addr", addr)
	if code == 0 || strings.Contains(errOut, "not a vault") || !strings.Contains(errOut, addr) {
		t.Fatalf("with LOCI_TOKEN: code %d %s", code, errOut)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Fatalf("created %v", got)
	}
}

// The built binary, as a person runs it: in an empty folder `loci search`
// exits 3 with the hint on stderr and leaves the folder empty; in the
// demo vault it answers.
func TestVaultRuleBinary(t *testing.T) {
	bin := testutil.LociBinary(t)
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "LOCI_VAULT=") {
			env = append(env, e)
		}
	}
	empty := t.TempDir()
	cmd := exec.Command(bin, "search", "foo")
	cmd.Dir, cmd.Env = empty, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(stderr.String(), "is not a vault") {
		t.Fatalf("empty folder: %v %s", err, stderr.String())
	}
	if got := entries(t, empty); len(got) != 0 {
		t.Fatalf("created %v", got)
	}
	v := demoCopy(t)
	cmd = exec.Command(bin, "search", "zettelkasten")
	cmd.Dir, cmd.Env = v, env
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "Ideas/Zettelkasten.md") {
		t.Fatalf("in the vault: %v %s", err, out)
	}
}
