package ops_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/opstest"
)

// searchPaths runs search_notes as p (nil: the owner) and returns the
// result paths, sorted.
func searchPaths(t *testing.T, env *ops.Env, p *auth.Principal, input string) []string {
	t.Helper()
	res := opstest.Reg.Call(context.Background(), env, ops.Caller{Surface: "test", Principal: p}, "search_notes", json.RawMessage(input))
	if res.Err != nil {
		t.Fatalf("search_notes %s: %s: %s", input, res.Err.Code, res.Err.Message)
	}
	b, _ := json.Marshal(res.Output)
	var out struct{ Results []struct{ Path string } }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range out.Results {
		paths = append(paths, r.Path)
	}
	slices.Sort(paths)
	return paths
}

func wantStats(t *testing.T, vh *ops.VaultHandle, hits, misses uint64) {
	t.Helper()
	if h, m := ops.SearchCacheStats(vh); h != hits || m != misses {
		t.Fatalf("cache hits, misses = %d, %d; want %d, %d", h, m, hits, misses)
	}
}

// TestSearchCacheEditInvalidates: the same search twice is one miss and
// one hit with the same answer; an edit synced since is seen by the next
// search (a miss), in lexical and in the default mode.
func TestSearchCacheEditInvalidates(t *testing.T) {
	t.Run("vectors", func(t *testing.T) { testSearchCacheEdit(t, "") })
	// Without vectors, only the content revision tells an edit.
	t.Run("lexical-only", func(t *testing.T) { testSearchCacheEdit(t, "embed: {provider: none}\n") })
}

func testSearchCacheEdit(t *testing.T, config string) {
	files := map[string]string{
		"a.md": "# A\n\nThe zebra grazes.\n",
		"b.md": "# B\n\nA horse runs.\n",
	}
	if config != "" {
		files[".loci/config.yaml"] = config
	}
	env := opstest.FixtureEnv(t, files)
	vh := env.Vaults[0]
	ctx := context.Background()
	for i, in := range []string{`{"query":"zebra","mode":"lexical"}`, `{"query":"zebra"}`} {
		h, m := uint64(i), uint64(2*i)
		if got := searchPaths(t, env, nil, in); !slices.Equal(got, []string{"a.md"}) {
			t.Fatalf("%s: %v", in, got)
		}
		wantStats(t, vh, h, m+1)
		if got := searchPaths(t, env, nil, in); !slices.Equal(got, []string{"a.md"}) {
			t.Fatalf("%s again: %v", in, got)
		}
		wantStats(t, vh, h+1, m+1)
		// b.md now says zebra too; a stale entry would still answer a.md alone.
		body := "# B\n\nA zebra runs.\n"
		if i == 1 {
			body = "# B\n\nA zebra runs, striped.\n"
		}
		if err := os.WriteFile(filepath.Join(vh.Vault.Root, "b.md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := searchPaths(t, env, nil, in); !slices.Equal(got, []string{"a.md", "b.md"}) {
			t.Fatalf("%s after the edit: %v", in, got)
		}
		wantStats(t, vh, h+1, m+2)
		// Put b.md back for the next mode.
		if err := os.WriteFile(filepath.Join(vh.Vault.Root, "b.md"), []byte("# B\n\nA horse runs.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Sync(ctx, vh, index.SyncOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSearchCacheFence: an entry filed for one fence is never served to a
// call with another: the owner's unfenced answer is not what a narrowed
// principal gets, nor the reverse, nor after the vault's own rules change;
// each fence's repeated call is a hit with its own answer.
func TestSearchCacheFence(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"Public/a.md":  "# A\n\nThe zebra grazes.\n",
		"Private/b.md": "# B\n\nA zebra secret.\n",
	})
	vh := env.Vaults[0]
	agent := &auth.Principal{Name: "agent", Scopes: []auth.Scope{auth.ScopeRead}, ReadPaths: []string{"Public/**"}, Via: auth.ViaToken}
	in := `{"query":"zebra","mode":"lexical"}`
	all, public := []string{"Private/b.md", "Public/a.md"}, []string{"Public/a.md"}
	steps := []struct {
		p            *auth.Principal
		deny         []string
		want         []string
		hits, misses uint64
	}{
		{nil, nil, all, 0, 1},                       // owner: miss, filed unfenced
		{agent, nil, public, 0, 2},                  // fenced: never the owner's entry
		{nil, nil, all, 1, 2},                       // owner again: its own entry
		{agent, nil, public, 2, 2},                  // agent again: its own entry
		{nil, []string{"Private/**"}, public, 2, 3}, // the vault's rules changed: a new fence
		{nil, nil, all, 3, 3},
	}
	for i, s := range steps {
		vh.Read = ops.ReadRules{DenyReadPaths: s.deny}
		if got := searchPaths(t, env, s.p, in); !slices.Equal(got, s.want) {
			t.Fatalf("step %d: %v, want %v", i, got, s.want)
		}
		wantStats(t, vh, s.hits, s.misses)
	}
}

// TestSearchCacheKeysTheRequest: requests that differ in any option are
// different entries (and answers); a cached page cannot be changed by its
// caller.
func TestSearchCacheKeysTheRequest(t *testing.T) {
	env := opstest.FixtureEnv(t, map[string]string{
		"x/a.md": "---\ntags: [animal]\n---\n# A\n\nThe zebra grazes.\n",
		"y/b.md": "# B\n\nA zebra runs.\n",
	})
	vh := env.Vaults[0]
	for i, c := range []struct {
		in   string
		want []string
	}{
		{`{"query":"zebra","mode":"lexical"}`, []string{"x/a.md", "y/b.md"}},
		{`{"query":"zebra","mode":"lexical","path_glob":"y/**"}`, []string{"y/b.md"}},
		{`{"query":"zebra","mode":"lexical","tags":["animal"]}`, []string{"x/a.md"}},
		{`{"query":"zebra","mode":"lexical","limit":1}`, nil},
		{`{"query":"zebra runs","mode":"lexical"}`, nil},
	} {
		got := searchPaths(t, env, nil, c.in)
		if c.want != nil && !slices.Equal(got, c.want) {
			t.Fatalf("%s: %v, want %v", c.in, got, c.want)
		}
		wantStats(t, vh, 0, uint64(i+1))
	}
	if got := searchPaths(t, env, nil, `{"query":"zebra","mode":"lexical","limit":1}`); len(got) != 1 {
		t.Fatalf("limit 1 again: %v", got)
	}
	wantStats(t, vh, 1, 5)
}
