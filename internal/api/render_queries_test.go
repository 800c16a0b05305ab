package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/api"
	"github.com/loci-dev/loci/internal/auth"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/ops/catalog"
	"github.com/loci-dev/loci/internal/testutil"
)

// TestRenderQueriesOverREST: read_note and get_page with render_queries
// over POST /v1/ops/...: the queries array arrives in the JSON envelope
// with rows (the fenced note left out) and a malformed query's error entry,
// while the call itself succeeds.
func TestRenderQueriesOverREST(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vault")
	testutil.WriteFiles(t, dir, map[string]string{
		"graph/logseq/config.edn": "{:meta/version 1 :preferred-format :markdown}\n",
		"graph/pages/Home.md":     "- TODO one\n- {{query (task TODO)}}\n- {{query (and}}\n",
		"graph/pages/Hidden.md":   "- TODO quokka\n",
		"Dash.md":                 "# Dash\n\n```dataview\nTASK WHERE !completed\n```\n",
		"Work.md":                 "- [ ] ship\n",
		"Private/Secret.md":       "- [ ] quokka secret\n",
	})
	ctx := context.Background()
	vh, err := ops.OpenVault(ctx, dir, t.TempDir(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	vh.Read = ops.ReadRules{DenyReadPaths: []string{"Private/**", "graph/pages/Hidden.md"}}
	env := &ops.Env{Vaults: []*ops.VaultHandle{vh}}
	t.Cleanup(env.Close)
	if _, err := env.Sync(ctx, vh, index.SyncOptions{NoEmbed: true}); err != nil {
		t.Fatal(err)
	}
	h := api.New(catalog.All(), env, api.Options{Version: "test", MaxBodyBytes: 64 << 10})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), &auth.Principal{Name: "tester", Scopes: auth.AllScopes, Via: auth.ViaToken})))
	}))
	t.Cleanup(srv.Close)

	post := func(op, body string) (string, []ops.EmbeddedQuery) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/ops/"+op, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var env struct {
			OK     bool `json:"ok"`
			Result struct {
				Queries []ops.EmbeddedQuery `json:"queries"`
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &env); err != nil || resp.StatusCode != 200 || !env.OK {
			t.Fatalf("%s: %d %s", op, resp.StatusCode, b)
		}
		return string(b), env.Result.Queries
	}
	raw, qs := post("read_note", `{"path": "Dash.md", "render_queries": true}`)
	// TASK takes Logseq TODO blocks too; the fenced ones never.
	if len(qs) != 1 || qs[0].Line != 3 || qs[0].Error != nil || len(qs[0].Result.Rows) != 2 ||
		qs[0].Result.Rows[0].Path != "Work.md" || qs[0].Result.Rows[0].Line != 1 || qs[0].Result.Rows[1].Path != "graph/pages/Home.md" ||
		strings.Contains(raw, "quokka") {
		t.Errorf("read_note over REST: %s", raw)
	}
	raw, qs = post("get_page", `{"name": "home", "render_queries": true}`)
	if len(qs) != 2 || qs[0].Line != 2 || qs[0].Error != nil || len(qs[0].Result.Rows) != 1 || qs[0].Result.Rows[0].Path != "graph/pages/Home.md" ||
		qs[1].Line != 3 || qs[1].Error == nil || qs[1].Error.Code != "validation_failed" || strings.Contains(raw, "quokka") {
		t.Errorf("get_page over REST: %s", raw)
	}
}
