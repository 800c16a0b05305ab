package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

// fakeEmbedder hashes words into a small vector and records what it embeds.
type fakeEmbedder struct {
	model string
	mu    sync.Mutex
	texts []string
}

func (f *fakeEmbedder) Identity() embed.Identity {
	return embed.Identity{Provider: "fake", Model: f.model, Dims: 8}
}
func (f *fakeEmbedder) Usage() embed.Usage { return embed.Usage{} }
func (f *fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.texts = append(f.texts, texts...)
	f.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 8)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%8]++
		}
		v[0] += 0.01
		out[i] = v
	}
	return out, nil
}
func (f *fakeEmbedder) reset() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.texts
	f.texts = nil
	return t
}

func openWith(t *testing.T, root string, p embed.Provider, s embed.Settings) *Index {
	t.Helper()
	v, err := vault.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Open(context.Background(), v, Options{Embedder: p, EmbedSettings: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func TestEmbeddingsIncremental(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"a.md":     "# Alpha\n\nFirst section about apples.\n\n## Two\n\nSecond section about pears.\n",
		"b.md":     "# Beta\n\nBananas and more bananas.\n",
		"dir/c.md": "Cherries without a heading.\n",
	})
	fe := &fakeEmbedder{model: "m1"}
	ix := openWith(t, root, fe, embed.Settings{})
	res := mustSync(t, ix, SyncOptions{})
	// 4 sections, 3 note profiles, and the rest of a.md's profile (its
	// heading "Two"; a heading repeating the title is left out), embedded
	// apart from its title.
	if res.Embed == nil || res.Embed.Chunks != 4 || res.Embed.Titles != 3 || res.Embed.Embedded != 8 {
		t.Fatalf("first embed = %+v", res.Embed)
	}
	fe.reset()
	if id, ok := ix.StoredIdentity(context.Background()); !ok || id.Model != "m1" || id.Dims != 8 {
		t.Fatalf("identity = %+v", id)
	}
	m, err := ix.VectorMatrix(context.Background())
	if err != nil || m.Rows != 4 || len(m.Notes) != 3 {
		t.Fatalf("matrix = %+v, %v", m, err)
	}

	// Nothing changed: nothing embedded.
	res = mustSync(t, ix, SyncOptions{})
	if got := fe.reset(); len(got) != 0 || res.Embed.Chunks != 0 {
		t.Errorf("no-op sync embedded %q", got)
	}

	// One section changes: only its text is embedded (the title is cached).
	os.WriteFile(filepath.Join(root, "a.md"), []byte("# Alpha\n\nFirst section about apples.\n\n## Two\n\nSecond section about plums.\n"), 0o644)
	bump(t, filepath.Join(root, "a.md"), 2e9)
	mustSync(t, ix, SyncOptions{})
	if got := fe.reset(); len(got) != 1 || !strings.Contains(got[0], "plums") {
		t.Errorf("edit embedded %q", got)
	}

	// A move costs nothing; a rename embeds only the new title.
	os.MkdirAll(filepath.Join(root, "moved"), 0o755)
	os.Rename(filepath.Join(root, "dir/c.md"), filepath.Join(root, "moved/c.md"))
	res = mustSync(t, ix, SyncOptions{})
	if got := fe.reset(); len(got) != 0 || res.Embed.Cached == 0 {
		t.Errorf("move embedded %q (%+v)", got, res.Embed)
	}
	os.Rename(filepath.Join(root, "b.md"), filepath.Join(root, "Bee.md"))
	mustSync(t, ix, SyncOptions{})
	if got := fe.reset(); len(got) > 1 {
		t.Errorf("rename embedded %q", got)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunk_vectors"); n != count(t, ix, "SELECT COUNT(*) FROM chunks") {
		t.Errorf("chunk_vectors %d != chunks", n)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)"); n != 0 {
		t.Errorf("%d orphan vectors", n)
	}
	// The cache drops what nothing points to after a full sync.
	if n := count(t, ix, "SELECT COUNT(*) FROM vectors WHERE hash NOT IN (SELECT hash FROM chunk_vectors UNION SELECT hash FROM note_vectors)"); n != 0 {
		t.Errorf("%d unreferenced cached vectors", n)
	}

	// Deleting a note deletes its vectors; the matrix reloads.
	os.Remove(filepath.Join(root, "Bee.md"))
	mustSync(t, ix, SyncOptions{})
	m, _ = ix.VectorMatrix(context.Background())
	if m.Rows != 3 {
		t.Errorf("rows after delete = %d", m.Rows)
	}

	// --no-embed: the lexical sync alone.
	testutil.WriteFiles(t, root, map[string]string{"d.md": "Dates.\n"})
	res = mustSync(t, ix, SyncOptions{NoEmbed: true})
	if res.Embed != nil || len(fe.reset()) != 0 {
		t.Errorf("NoEmbed embedded: %+v", res.Embed)
	}
	res = mustSync(t, ix, SyncOptions{})
	if res.Embed.Chunks != 1 {
		t.Errorf("catch-up = %+v", res.Embed)
	}
	st, _ := ix.Status(context.Background())
	if st.Vectors.Chunks != 4 || st.Vectors.DefaultMode != "hybrid" || st.Vectors.Model != "m1" || st.Vectors.MemoryBytes == 0 {
		t.Errorf("status = %+v", st.Vectors)
	}
}

func TestEmbeddingsMismatch(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "# A\n\nsome text\n"})
	ix := openWith(t, root, &fakeEmbedder{model: "m1"}, embed.Settings{})
	mustSync(t, ix, SyncOptions{})
	ix.Close()

	other := &fakeEmbedder{model: "m2"}
	ix = openWith(t, root, other, embed.Settings{})
	_, err := ix.Sync(context.Background(), SyncOptions{})
	if errs.Code(err) != errs.CodeEmbedMismatch || !strings.Contains(err.Error(), "loci index --reset") {
		t.Fatalf("sync with another model: %v", err)
	}
	if _, err := ix.EmbedQuery(context.Background(), "text"); errs.Code(err) != errs.CodeEmbedMismatch {
		t.Errorf("query with another model: %v", err)
	}
	if ok, err := ix.HasVectors(context.Background()); ok || errs.Code(err) != errs.CodeEmbedMismatch {
		t.Errorf("HasVectors = %v, %v", ok, err)
	}
	// --reset re-embeds with the new model.
	mustSync(t, ix, SyncOptions{Reset: true})
	if id, _ := ix.StoredIdentity(context.Background()); id.Model != "m2" {
		t.Errorf("after reset: %+v", id)
	}
	ix.Close()
	// on_mismatch: reembed switches without a reset.
	third := &fakeEmbedder{model: "m3"}
	ix = openWith(t, root, third, embed.Settings{OnMismatch: "reembed"})
	mustSync(t, ix, SyncOptions{})
	if id, _ := ix.StoredIdentity(context.Background()); id.Model != "m3" || len(third.texts) != 2 {
		t.Errorf("reembed: %+v, %d texts", id, len(third.texts))
	}
}

// TestEmbeddingsOpenAI runs the openai provider against a fake
// OpenAI-compatible server through a sync, then switches model.
func TestEmbeddingsOpenAI(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		requests++
		mu.Unlock()
		var data []map[string]any
		for i, s := range req.Input {
			v := []float32{1, float32(len(s)), 0, 0}
			data = append(data, map[string]any{"index": i, "embedding": v})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data, "usage": map[string]int{"total_tokens": 3 * len(req.Input)}})
	}))
	defer srv.Close()
	root := t.TempDir()
	files := map[string]string{}
	for i := 0; i < 5; i++ {
		files[string(rune('a'+i))+".md"] = "# Note\n\nbody " + strings.Repeat("x", i) + "\n"
	}
	testutil.WriteFiles(t, root, files)
	s := embed.Settings{Provider: "openai", Model: "text-embed-a", BaseURL: srv.URL + "/v1", BatchSize: 4, Concurrency: 2, MaxRetries: 1, PricePerMTok: 0.02}
	ix := openWith(t, root, embed.NewOpenAI(s), s)
	res := mustSync(t, ix, SyncOptions{})
	// 5 distinct chunk texts + 1 distinct title ("Note", the H1 of all five)
	// = 6 texts; sections and titles are separate pages, each in batches of
	// 4 (5 texts: 2 requests; 1 text: 1); the other 4 titles come from the cache.
	if res.Embed.Embedded != 6 || res.Embed.Cached != 4 || requests != 3 || res.Embed.Tokens != 18 || res.Embed.CostUSD <= 0 || res.Embed.Dims != 4 {
		t.Fatalf("embed = %+v, %d requests", res.Embed, requests)
	}
	ix.Close()
	s.Model = "text-embed-b"
	ix = openWith(t, root, embed.NewOpenAI(s), s)
	if _, err := ix.Sync(context.Background(), SyncOptions{}); errs.Code(err) != errs.CodeEmbedMismatch || !strings.Contains(err.Error(), "openai/text-embed-a") {
		t.Errorf("model switch: %v", err)
	}
}

// TestMigrateV1 opens an index written by schema v1 (before embeddings).
func TestMigrateV1(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "# A\n\nold text\n"})
	dir := filepath.Join(root, ".loci")
	os.MkdirAll(dir, 0o755)
	db, err := sql.Open("sqlite", filepath.Join(dir, DBName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(migrations[0]); err != nil {
		t.Fatal(err)
	}
	db.Exec("PRAGMA user_version = 1")
	db.Close()
	ix := openWith(t, root, &fakeEmbedder{model: "m1"}, embed.Settings{})
	if n := count(t, ix, "PRAGMA user_version"); n != SchemaVersion {
		t.Fatalf("version = %d", n)
	}
	res := mustSync(t, ix, SyncOptions{})
	if res.Indexed != 1 || res.Embed.Chunks != 1 {
		t.Errorf("sync after migration = %+v %+v", res, res.Embed)
	}
}

func TestEmbeddingsDisabled(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "# A\n\ntext\n"})
	v, _ := vault.Open(root, nil)
	ix, err := Open(context.Background(), v, Options{NoEmbed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	res := mustSync(t, ix, SyncOptions{})
	if res.Embed != nil || count(t, ix, "SELECT COUNT(*) FROM vectors") != 0 {
		t.Error("embedded with NoEmbed")
	}
	if ok, err := ix.HasVectors(context.Background()); ok || err != nil {
		t.Errorf("HasVectors = %v %v", ok, err)
	}
	if _, err := ix.VectorMatrix(context.Background()); errs.Code(err) != errs.CodeEmbedUnavailable {
		t.Errorf("VectorMatrix: %v", err)
	}
}

// A long-running server never blocks a search on reloading vectors: it gets
// the previous matrix while the new one loads, then the new one.
func TestStaleMatrixWhileReloading(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "# Alpha\n\napples\n", "b.md": "# Beta\n\nbananas\n"})
	ix := openWith(t, root, &fakeEmbedder{model: "m1"}, embed.Settings{})
	ix.AllowStaleMatrix()
	mustSync(t, ix, SyncOptions{})
	ctx := context.Background()
	m1, err := ix.VectorMatrix(ctx)
	if err != nil || m1.Rows != 2 {
		t.Fatalf("first matrix = %+v, %v", m1, err)
	}
	testutil.WriteFiles(t, root, map[string]string{"c.md": "# Gamma\n\ncherries\n"})
	mustSync(t, ix, SyncOptions{})
	m2, err := ix.VectorMatrix(ctx)
	if err != nil || m2 != m1 {
		t.Fatalf("expected the previous matrix while reloading, got %+v, %v", m2, err)
	}
	deadline := time.Now().Add(10 * time.Second) // a guard, not a timing assumption
	for {
		m3, err := ix.VectorMatrix(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m3.Rows == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reloaded matrix never arrived")
		}
		runtime.Gosched()
	}
}
