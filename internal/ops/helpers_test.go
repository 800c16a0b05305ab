package ops

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/testutil"
)

var testReg = All()

// openEnv opens root as the only vault of an Env, with its index in a temp
// dir, and indexes it.
func openEnv(t *testing.T, root string) *Env {
	t.Helper()
	ctx := context.Background()
	vh, err := OpenVault(ctx, root, t.TempDir(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Vaults: []*VaultHandle{vh}}
	t.Cleanup(env.Close)
	if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	return env
}

// demoEnv is the demo vault, copied to a temp dir and indexed.
func demoEnv(t *testing.T) *Env {
	t.Helper()
	root := filepath.Join(t.TempDir(), "demo")
	testutil.CopyTree(t, testutil.DemoVault(), root)
	return openEnv(t, root)
}

// fixtureEnv writes files into a fresh vault and indexes it.
func fixtureEnv(t *testing.T, files map[string]string) *Env {
	t.Helper()
	root := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, root, files)
	return openEnv(t, root)
}

// call runs an op through the registry's dispatch pipeline with JSON input
// and decodes its output into T.
func call[T any](t *testing.T, env *Env, name, input string) *T {
	t.Helper()
	res := testReg.Call(context.Background(), env, Caller{Surface: "test"}, name, json.RawMessage(input))
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

// callErr runs an op that must fail and returns its error code and details.
func callErr(t *testing.T, env *Env, name, input string) (string, map[string]any) {
	t.Helper()
	res := testReg.Call(context.Background(), env, Caller{Surface: "test"}, name, json.RawMessage(input))
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

func wantCode(t *testing.T, env *Env, name, input, code string) map[string]any {
	t.Helper()
	got, details := callErr(t, env, name, input)
	if got != code {
		t.Errorf("%s %s: code %s, want %s (details %v)", name, input, got, code, details)
	}
	return details
}

func paths[T any](items []T, f func(T) string) []string {
	out := make([]string, len(items))
	for i, x := range items {
		out[i] = f(x)
	}
	return out
}
