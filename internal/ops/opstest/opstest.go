// Package opstest holds what the tests of the operation families share: a
// registry with every operation (Reg), vaults opened and indexed in temp
// dirs, calls through the dispatch pipeline with their output decoded, and
// a few file and AI-fixture helpers. Only tests import it.
package opstest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ai/aitest"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

// Reg is the registry of every operation (catalog.All).
var Reg = catalog.All()

// OpenEnv opens root as the only vault of an Env, with its index in a temp
// dir, and indexes it.
func OpenEnv(t *testing.T, root string) *ops.Env {
	t.Helper()
	return IndexedEnv(t, root, index.SyncOptions{})
}

// IndexedEnv opens root as the only vault of an Env, with its index in a
// temp dir, and syncs it with opts; benchmarks use it too.
func IndexedEnv(tb testing.TB, root string, opts index.SyncOptions) *ops.Env {
	tb.Helper()
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, root, tb.TempDir(), nil, false)
	if err != nil {
		tb.Fatal(err)
	}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	tb.Cleanup(env.Close)
	if _, err := env.Sync(ctx, vh, opts); err != nil {
		tb.Fatal(err)
	}
	return env
}

// CorpusEnv copies the corpus name (skipping when it is absent) to a temp
// dir and indexes it without embeddings.
func CorpusEnv(tb testing.TB, name string) *ops.Env {
	tb.Helper()
	src := testutil.Corpus(tb, name)
	root := filepath.Join(tb.TempDir(), name)
	testutil.CopyTree(tb, src, root)
	return IndexedEnv(tb, root, index.SyncOptions{NoEmbed: true})
}

// DemoEnv is the demo vault, copied to a temp dir and indexed.
func DemoEnv(t *testing.T) *ops.Env {
	t.Helper()
	root := filepath.Join(t.TempDir(), "demo")
	testutil.CopyTree(t, testutil.DemoVault(), root)
	return OpenEnv(t, root)
}

// FixtureEnv writes files into a fresh vault and indexes it.
func FixtureEnv(t *testing.T, files map[string]string) *ops.Env {
	t.Helper()
	root := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, root, files)
	return OpenEnv(t, root)
}

// Call runs an op through the registry's dispatch pipeline with JSON input
// and decodes its output into T.
func Call[T any](t *testing.T, env *ops.Env, name, input string) *T {
	t.Helper()
	res := Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, name, json.RawMessage(input))
	if res.Err != nil {
		t.Fatalf("%s %s: %s: %s %v", name, input, res.Err.Code, res.Err.Message, res.Err.Details)
	}
	out, ok := res.Output.(*T)
	if !ok {
		t.Fatalf("%s: output is %T", name, res.Output)
	}
	// The output must survive JSON (what every surface sends).
	if _, err := json.Marshal(out); err != nil {
		t.Fatalf("%s: output does not marshal: %v", name, err)
	}
	return out
}

// CallErr runs an op that must fail and returns its error code and details.
func CallErr(t *testing.T, env *ops.Env, name, input string) (string, map[string]any) {
	t.Helper()
	res := Reg.Call(context.Background(), env, ops.Caller{Surface: "test"}, name, json.RawMessage(input))
	if res.Err == nil {
		b, _ := json.Marshal(res.Output)
		t.Fatalf("%s %s: want an error, got %s", name, input, b)
	}
	// Details go over the wire as JSON too.
	var details map[string]any
	b, err := json.Marshal(res.Err.Details)
	if err != nil {
		t.Fatalf("%s: error details do not marshal: %v", name, err)
	}
	json.Unmarshal(b, &details)
	return res.Err.Code, details
}

// WantCode runs an op that must fail with code and returns the details.
func WantCode(t *testing.T, env *ops.Env, name, input, code string) map[string]any {
	t.Helper()
	got, details := CallErr(t, env, name, input)
	if got != code {
		t.Errorf("%s %s: code %s, want %s (details %v)", name, input, got, code, details)
	}
	return details
}

// Paths maps items to strings (their paths, usually).
func Paths[T any](items []T, f func(T) string) []string {
	out := make([]string, len(items))
	for i, x := range items {
		out[i] = f(x)
	}
	return out
}

// Now is the clock of the write tests.
var Now = time.Date(2026, 11, 20, 10, 15, 30, 0, time.Local)

// WriteEnv is FixtureEnv with writes enabled and the clock pinned.
func WriteEnv(t *testing.T, files map[string]string) *ops.Env {
	t.Helper()
	env := FixtureEnv(t, files)
	env.Writes = ops.WriteSettings{Enabled: true}
	env.Now = func() time.Time { return Now }
	return env
}

// Root is the vault folder of env's first vault.
func Root(env *ops.Env) string { return env.Vaults[0].Vault.Root }

// ReadFile returns the text of a vault file of env's first vault.
func ReadFile(t *testing.T, env *ops.Env, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(env), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

// Exists reports whether a vault file of env's first vault exists.
func Exists(env *ops.Env, rel string) bool {
	_, err := os.Stat(filepath.Join(Root(env), filepath.FromSlash(rel)))
	return err == nil
}

// CallAs runs an op as a caller of a given session.
func CallAs[T any](t *testing.T, env *ops.Env, session, name, input string) *T {
	t.Helper()
	res := Reg.Call(context.Background(), env, ops.Caller{Surface: "mcp", Session: session}, name, json.RawMessage(input))
	if res.Err != nil {
		t.Fatalf("%s %s: %s: %s %v", name, input, res.Err.Code, res.Err.Message, res.Err.Details)
	}
	return res.Output.(*T)
}

// EtagOf returns the etag of a vault file as it is on disk.
func EtagOf(t *testing.T, env *ops.Env, rel string) string {
	return vault.Etag([]byte(ReadFile(t, env, rel)))
}

// JS encodes v as JSON (an op's input).
func JS(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// MustWriter returns the write pipeline of env's first vault.
func MustWriter(t *testing.T, env *ops.Env) *vault.Writer {
	t.Helper()
	w, err := env.Writer(env.Vaults[0])
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// PromptNotes lists the (path, etag) pairs a request's prompt carries.
func PromptNotes(req aitest.Request) [][2]string {
	var out [][2]string
	for _, m := range req.Messages {
		for _, x := range noteHeader.FindAllStringSubmatch(m.Content, -1) {
			out = append(out, [2]string{x[1], x[2]})
		}
	}
	return out
}

// Cite is a citation as a fake model returns it.
func Cite(path, etag string, line, end int) map[string]any {
	return map[string]any{"path": path, "etag": etag, "line": line, "end_line": end}
}

// Traversal holds paths every path input must refuse before touching the disk.
var Traversal = []string{`"../x.md"`, `"/etc/passwd"`, `"%2e%2e/x.md"`, `"..\\x.md"`, `".obsidian/app.json"`}

// noteHeader is the header render() gives each note of a prompt.
var noteHeader = regexp.MustCompile(`=== NOTE path="([^"]+)" etag="([0-9a-f]+)"`)
