package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/ops"
)

// slowEmbedServer is an OpenAI-compatible /v1/embeddings server the test
// drives: each request of several texts (a page of sections or titles)
// announces them on calls and waits for a status on gate (200 answers
// with vectors, anything else fails with it), unless open is closed (then
// 200 at once). A request of one text (a query) is answered at once.
type slowEmbedServer struct {
	*httptest.Server
	calls chan []string
	gate  chan int
	open  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	texts []string // every text of a page answered with 200
}

func newSlowEmbedServer(t *testing.T) *slowEmbedServer {
	s := &slowEmbedServer{calls: make(chan []string, 100), gate: make(chan int), open: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		code := 200
		if len(req.Input) > 1 { // a query (one text) is answered at once
			s.calls <- req.Input
			select {
			case code = <-s.gate:
			case <-s.open:
			case <-r.Context().Done():
				return
			}
		}
		if code != 200 {
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"message":"status %d from the test server"}}`, code)
			return
		}
		if len(req.Input) > 1 {
			s.mu.Lock()
			s.texts = append(s.texts, req.Input...)
			s.mu.Unlock()
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Data []item `json:"data"`
		}{}
		for i, text := range req.Input {
			v := make([]float32, 8)
			for _, word := range strings.Fields(strings.ToLower(text)) {
				h := fnv.New32a()
				h.Write([]byte(word))
				v[h.Sum32()%8]++
			}
			v[0] += 0.01
			out.Data = append(out.Data, item{i, v})
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(func() { s.release(); s.Close() })
	return s
}

func (s *slowEmbedServer) release() { s.once.Do(func() { close(s.open) }) }

func (s *slowEmbedServer) next(t *testing.T) []string {
	t.Helper()
	select {
	case texts := <-s.calls:
		return texts
	case <-time.After(30 * time.Second):
		t.Fatal("no embedding request came")
		return nil
	}
}

func (s *slowEmbedServer) answered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.texts)
}

// A server with a slow embedder: its sync and its writes commit the lexical
// index and return while the embedder works; search is lexical by default
// until the vectors are complete, hybrid on request over the partial
// vectors; a failing embedder is recorded and fails nothing. `loci index`
// then reports the same failure and exits non-zero, and once the embedder
// answers it finishes what the server left.
func TestServeWithSlowEmbedder(t *testing.T) {
	t.Setenv("LOCI_ENABLE_WRITES", "1")
	emb := newSlowEmbedServer(t)
	v := demoCopy(t)
	os.MkdirAll(filepath.Join(v, ".loci"), 0o755)
	cfg := fmt.Sprintf("embed:\n  provider: ollama\n  base_url: %s/v1\n  model: slow\n  batch_size: 1000\n  max_retries: 0\n", emb.URL)
	if err := os.WriteFile(filepath.Join(v, ".loci", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	g := &globals{vault: ".", format: "text", stdout: &stdout, stderr: &stderr}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s, err := g.startServe(ctx, []string{v}, serveOptions{addr: "127.0.0.1:0", maxSessions: 4, logLevel: "warn"})
	if err != nil {
		t.Fatal(err)
	}
	synced := make(chan struct{})
	var once sync.Once
	defer s.env.Subscribe(func(ops.Change) { once.Do(func() { close(synced) }) })()
	embedEvents := make(chan ops.Event, 16)
	defer s.env.SubscribeEvents(func(ev ops.Event) {
		if ev.Kind == ops.EventEmbedFinished || ev.Kind == ops.EventEmbedFailed { // not index.embed_progress
			embedEvents <- ev
		}
	})()
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	call := func(op string, in any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(in)
		req, _ := http.NewRequest("POST", s.srv.URL()+"/v1/ops/"+op, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out struct {
			OK     bool           `json:"ok"`
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal(body, &out); err != nil || !out.OK {
			t.Fatalf("%s %s: %d %s", op, b, resp.StatusCode, body)
		}
		return out.Result
	}
	vectors := func() map[string]any {
		t.Helper()
		return call("index_status", map[string]any{})["vectors"].(map[string]any)
	}

	// The first build is published while the embedder holds its first page.
	first := emb.next(t)
	select {
	case <-synced:
	case <-time.After(30 * time.Second):
		t.Fatal("the background sync published nothing while the embedder was busy")
	}
	vs := vectors()
	job, _ := vs["job"].(map[string]any)
	if job == nil || job["running"] != true || vs["complete"] != false || vs["default_mode"] != "lexical" || vs["pending"].(float64) == 0 {
		t.Fatalf("status while embedding: %v", vs)
	}
	if f := s.env.VaultFigures()[0].Embed; f == nil || !f.Running || f.Failed || f.Pending == 0 {
		t.Errorf("/metrics figures while embedding: %+v", f)
	}
	r := call("search_notes", map[string]any{"query": "spaced repetition"})
	if r["mode"] != "lexical" || !strings.Contains(fmt.Sprint(r["results"]), "Ideas/Spaced repetition.md") {
		t.Fatalf("search while embedding: %v", r)
	}

	// Hybrid by name before the first page: refused, saying why.
	b, _ := json.Marshal(map[string]any{"query": "spaced repetition", "mode": "hybrid"})
	req, _ := http.NewRequest("POST", s.srv.URL()+"/v1/ops/search_notes", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "embedding_unavailable") || !strings.Contains(string(body), "background embedder") {
		t.Errorf("hybrid before any vector: %d %s", resp.StatusCode, body)
	}

	// A write returns, re-indexed, with the embedder still busy.
	w := call("write_note", map[string]any{"path": "Inbox/Quokka.md", "content": "# Quokka\n\nA small marsupial that smiles.\n", "apply": true})
	if w["reindexed"] != true {
		t.Fatalf("write: %v", w)
	}
	r = call("search_notes", map[string]any{"query": "marsupial"})
	if r["mode"] != "lexical" || !strings.Contains(fmt.Sprint(r["results"]), "Inbox/Quokka.md") {
		t.Fatalf("the written note is not searchable at once: %v", r)
	}

	// The first page written, the next one waits: vectors are partial.
	emb.gate <- 200
	emb.next(t)
	r = call("search_notes", map[string]any{"query": "spaced repetition"})
	if r["mode"] != "lexical" || r["vectors"] != "partial" {
		t.Errorf("default search with partial vectors: mode %v vectors %v", r["mode"], r["vectors"])
	}
	r = call("search_notes", map[string]any{"query": "spaced repetition", "mode": "hybrid"})
	if r["mode"] != "hybrid" || r["vectors"] != "partial" || len(r["results"].([]any)) == 0 {
		t.Errorf("hybrid search with partial vectors: %v", r)
	}
	vs = vectors()
	if vs["embedded"].(float64) < float64(len(first)) || vs["pending"].(float64) == 0 {
		t.Errorf("status after a page: %v", vs)
	}

	// The embedder fails (a bad key): recorded, nothing else fails.
	emb.gate <- 401
	s.env.Vaults[0].Index.WaitEmbeddings(t.Context())
	select {
	case ev := <-embedEvents:
		if ev.Kind != ops.EventEmbedFailed || !strings.Contains(fmt.Sprint(ev.Data["error"]), "401") || ev.Data["failures"] != 1 {
			t.Errorf("event after the failure: %+v", ev)
		}
	default:
		t.Error("no index.embed_failed event")
	}
	vs = vectors()
	job, _ = vs["job"].(map[string]any)
	if job == nil || job["running"] != false || !strings.Contains(fmt.Sprint(job["last_error"]), "401") || job["next_retry_at"] == nil || vs["complete"] != false {
		t.Fatalf("status after a failure: %v", vs)
	}
	if f := s.env.VaultFigures()[0].Embed; f == nil || f.Running || !f.Failed || f.Pending != 0 {
		t.Errorf("/metrics figures after a failure: %+v", f)
	}
	if w := call("write_note", map[string]any{"path": "Inbox/Wombat.md", "content": "# Wombat\n\nA burrowing marsupial.\n", "apply": true}); w["reindexed"] != true {
		t.Errorf("write after the failure: %v", w)
	}
	r = call("search_notes", map[string]any{"query": "burrowing"})
	if r["mode"] != "lexical" || !strings.Contains(fmt.Sprint(r["results"]), "Inbox/Wombat.md") {
		t.Errorf("search after the failure: %v", r)
	}
	pending := int(vectors()["pending"].(float64))
	if pending == 0 {
		t.Fatal("nothing pending after the failure")
	}
	// Stop the server (its watcher, its job) before the CLI takes over.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for len(emb.calls) > 0 {
		<-emb.calls
	}

	// `loci index` meets the same failure: the lexical index is done, the
	// command says so and exits non-zero.
	go func() { emb.next(t); emb.gate <- 401 }()
	out, errOut, code := run(t, "index", v)
	if code == 0 || !strings.Contains(out, "keyword search is up to date") || !strings.Contains(errOut, "401") {
		t.Fatalf("loci index with a failing embedder: code %d\n%s\n%s", code, out, errOut)
	}

	// The embedder is back: `loci index` embeds only what is pending.
	before := emb.answered()
	emb.release()
	out, errOut, code = run(t, "index", "--format", "json", v)
	if code != 0 {
		t.Fatalf("loci index: %d %s %s", code, out, errOut)
	}
	// Every pending section or note needs a text (a note's profile may
	// need two); none of the texts answered before is embedded again.
	emb.mu.Lock()
	seen := map[string]bool{}
	for _, s := range emb.texts[:before] {
		seen[s] = true
	}
	again := 0
	for _, s := range emb.texts[before:] {
		if seen[s] {
			again++
		}
	}
	emb.mu.Unlock()
	if got := emb.answered() - before; got < pending || again > 0 {
		t.Errorf("loci index embedded %d texts (%d of them again) for %d pending sections and notes", got, again, pending)
	}
	out, _, code = run(t, "status", "--format", "json", "--vault", v)
	if code != 0 || !strings.Contains(out, `"complete": true`) || !strings.Contains(out, `"default_mode": "hybrid"`) {
		t.Errorf("status after loci index: %s", out)
	}
}

// A query command on a vault never indexed, with an embedder that cannot
// run: the keyword index is built and the query answered, lexically.
func TestQueryWithUnavailableEmbedderIndexesLexically(t *testing.T) {
	t.Setenv("LOCI_EMBED_PROVIDER", "model2vec")
	t.Setenv("LOCI_EMBED_MODEL_PATH", "")
	v := demoCopy(t)
	out, errOut, code := run(t, "search", "spaced repetition", "--vault", v, "--format", "json")
	if code != 0 || !strings.Contains(out, "Ideas/Spaced repetition.md") || !strings.Contains(out, `"mode": "lexical"`) || !strings.Contains(errOut, "keyword search only") {
		t.Fatalf("search: code %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = run(t, "index", v)
	if code == 0 || !strings.Contains(out, "keyword search is up to date") {
		t.Errorf("loci index: code %d %s", code, out)
	}
}
