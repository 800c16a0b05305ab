package index

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/testutil"
)

// gatedEmbedder is a slow embedder the test drives: every call announces
// its texts on calls, then waits for one value on gate (nil: answer, an
// error: fail) unless open is closed; the vectors are fakeEmbedder's.
type gatedEmbedder struct {
	fakeEmbedder
	calls chan []string
	gate  chan error
	open  chan struct{}
	once  sync.Once
}

func newGated() *gatedEmbedder {
	return &gatedEmbedder{fakeEmbedder: fakeEmbedder{model: "slow"}, calls: make(chan []string, 100), gate: make(chan error), open: make(chan struct{})}
}

func (g *gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	g.calls <- texts
	select {
	case err := <-g.gate:
		if err != nil {
			return nil, err
		}
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.fakeEmbedder.Embed(ctx, texts)
}

// release lets every call through from now on.
func (g *gatedEmbedder) release() { g.once.Do(func() { close(g.open) }) }

func (g *gatedEmbedder) next(t *testing.T) []string {
	t.Helper()
	select {
	case texts := <-g.calls:
		return texts
	case <-time.After(30 * time.Second):
		t.Fatal("no embedding call came")
		return nil
	}
}

func vectorStatusOf(t *testing.T, ix *Index) VectorStatus {
	t.Helper()
	st, err := ix.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Vectors
}

func smallPages(t *testing.T, n int) {
	old := bgPageSize
	bgPageSize = n
	t.Cleanup(func() { bgPageSize = old })
}

// Today's foreground behaviour, kept for `loci index`: the sync returns
// only once everything is embedded.
func TestForegroundSyncWaitsForEmbedder(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
	g := newGated()
	ix := openWith(t, root, g, embed.Settings{})
	done := make(chan *SyncResult, 1)
	go func() {
		res, err := ix.Sync(context.Background(), SyncOptions{})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	g.next(t) // the sync is inside the embedder
	select {
	case <-done:
		t.Fatal("the sync returned before the embedder answered")
	default:
	}
	if ix.VectorsComplete(context.Background()) {
		t.Error("vectors complete while embedding")
	}
	g.release()
	res := <-done
	if res.Embed == nil || res.Embed.Background || res.Embed.Chunks != 2 || res.Embed.Titles != 2 {
		t.Fatalf("embed = %+v", res.Embed)
	}
	if !ix.VectorsComplete(context.Background()) {
		t.Error("vectors not complete after the sync")
	}
	vs := vectorStatusOf(t, ix)
	if vs.Total != 4 || vs.Embedded != 4 || vs.Pending != 0 || !vs.Complete || vs.DefaultMode != "hybrid" || vs.Job != nil {
		t.Errorf("status = %+v", vs)
	}
}

func TestBackgroundEmbedSyncReturnsAtOnce(t *testing.T) {
	smallPages(t, 2)
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"a.md": "# A\n\nalpha apples\n\n## Two\n\nmore apples\n",
		"b.md": "# B\n\nbeta bananas\n",
	})
	g := newGated()
	ix := openWith(t, root, g, embed.Settings{})
	ix.BackgroundEmbed()
	var runs []EmbedJob
	var completes []bool
	ix.OnEmbedRun(func(st EmbedJob, complete bool) { runs, completes = append(runs, st), append(completes, complete) })
	ctx := context.Background()

	// The sync commits the lexical index and returns with the embedder
	// blocked on its first page.
	res := mustSync(t, ix, SyncOptions{})
	if res.Indexed != 2 || res.Embed == nil || !res.Embed.Background || res.Embed.Provider != "fake" {
		t.Fatalf("sync = %+v, embed %+v", res, res.Embed)
	}
	if got := g.next(t); len(got) != 2 {
		t.Fatalf("first page = %q", got)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'bananas'"); n != 1 {
		t.Errorf("lexical index not committed: %d", n)
	}
	vs := vectorStatusOf(t, ix)
	if vs.Total != 5 || vs.Embedded != 0 || vs.Pending != 5 || vs.Complete || vs.DefaultMode != "lexical" || vs.Job == nil || !vs.Job.Running {
		t.Errorf("status while embedding = %+v job %+v", vs, vs.Job)
	}
	if ok, err := ix.HasVectors(ctx); ok || err != nil {
		t.Errorf("HasVectors before any page = %v %v", ok, err)
	}

	// The first page is written before the second is asked for.
	g.gate <- nil
	g.next(t)
	vs = vectorStatusOf(t, ix)
	if vs.Embedded != 2 || vs.Pending != 3 || vs.Complete || vs.DefaultMode != "lexical" || vs.Job.Done != 2 || vs.Job.Todo != 5 {
		t.Errorf("status after a page = %+v job %+v", vs, vs.Job)
	}
	if ok, err := ix.HasVectors(ctx); !ok || err != nil {
		t.Errorf("HasVectors with a page = %v %v", ok, err)
	}
	if m, err := ix.VectorMatrix(ctx); err != nil || m.Rows != 2 {
		t.Errorf("partial matrix = %+v %v", m, err)
	}

	// A note written while the embedder works is in the lexical index at
	// once (the sync does not wait for the job).
	testutil.WriteFiles(t, root, map[string]string{"c.md": "# C\n\ncherries\n"})
	res = mustSync(t, ix, SyncOptions{Paths: []string{"c.md"}})
	if res.Indexed != 1 {
		t.Fatalf("write sync = %+v", res)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'cherries'"); n != 1 {
		t.Errorf("new note not searchable: %d", n)
	}

	// Let it finish: every section and title gets its vector, c.md's too.
	g.release()
	if err := ix.WaitEmbeddings(ctx); err != nil {
		t.Fatal(err)
	}
	vs = vectorStatusOf(t, ix)
	if vs.Total != 7 || vs.Embedded != 7 || vs.Pending != 0 || !vs.Complete || vs.DefaultMode != "hybrid" || vs.Job.Running || vs.Job.LastError != "" {
		t.Errorf("status after = %+v job %+v", vs, vs.Job)
	}
	if n := count(t, ix, "SELECT COUNT(*) FROM chunk_vectors cv JOIN chunks c ON c.id = cv.chunk_id JOIN notes n ON n.id = c.note_id WHERE n.path = 'c.md'"); n != 1 {
		t.Errorf("c.md vectors = %d", n)
	}
	// Each run that embedded something was reported; the last one says
	// the vectors are complete.
	if len(runs) == 0 || !completes[len(runs)-1] || runs[0].Todo != 5 || runs[0].LastError != "" || runs[0].FinishedAt.IsZero() {
		t.Errorf("runs reported: %+v %v", runs, completes)
	}
	// A run with nothing to do is not reported.
	n := len(runs)
	mustSync(t, ix, SyncOptions{})
	ix.WaitEmbeddings(ctx)
	if len(runs) != n {
		t.Errorf("a no-op run was reported: %+v", runs[n:])
	}
}

// A page whose sections changed while the provider worked is not written
// for them: the vectors would be of the old text.
func TestBackgroundEmbedSkipsSectionsChangedMeanwhile(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "old text\n"})
	g := newGated()
	ix := openWith(t, root, g, embed.Settings{})
	ix.BackgroundEmbed()
	mustSync(t, ix, SyncOptions{})
	if got := g.next(t); !strings.Contains(strings.Join(got, "|"), "old text") {
		t.Fatalf("page = %q", got)
	}
	// The note changes (and its chunk is deleted, its id maybe reused)
	// while the embedder holds the old text.
	os.WriteFile(filepath.Join(root, "a.md"), []byte("new words\n"), 0o644)
	bump(t, filepath.Join(root, "a.md"), 2e9)
	mustSync(t, ix, SyncOptions{})
	g.release()
	if err := ix.WaitEmbeddings(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := textHash(ChunkEmbedText("[]", "new words"))
	var got []byte
	if err := ix.DB.QueryRow("SELECT cv.hash FROM chunk_vectors cv JOIN chunks c ON c.id = cv.chunk_id").Scan(&got); err != nil || string(got) != string(want[:]) {
		t.Errorf("chunk vector hash = %x (%v), want the new text's %x", got, err, want)
	}
	if !ix.VectorsComplete(context.Background()) || count(t, ix, "SELECT COUNT(*) FROM chunk_vectors") != 1 {
		t.Error("not complete")
	}
}

func TestBackgroundEmbedFailureBacksOff(t *testing.T) {
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "# A\n\nalpha\n"})
	g := newGated()
	ix := openWith(t, root, g, embed.Settings{})
	ix.BackgroundEmbed()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ix.bg.now = func() time.Time { return now }
	ix.bg.backoff = func(n int) time.Duration { return time.Duration(n) * time.Hour } // the job's own timer never fires here
	ctx := context.Background()

	mustSync(t, ix, SyncOptions{})
	g.next(t)
	g.gate <- errs.New(errs.CodeEmbedUnavailable, "401 Unauthorized: bad key")
	if err := ix.WaitEmbeddings(ctx); err != nil {
		t.Fatal(err)
	}
	vs := vectorStatusOf(t, ix)
	j := vs.Job
	if j == nil || j.Running || j.Failures != 1 || !strings.Contains(j.LastError, "bad key") || !j.NextRetryAt.Equal(now.Add(time.Hour)) || vs.Complete || vs.DefaultMode != "lexical" {
		t.Fatalf("status after a failure = %+v job %+v", vs, j)
	}

	// A sync within the backoff succeeds and does not call the embedder.
	testutil.WriteFiles(t, root, map[string]string{"b.md": "beta\n"})
	if res := mustSync(t, ix, SyncOptions{}); res.Indexed != 1 {
		t.Fatalf("sync during backoff = %+v", res)
	}
	if err := ix.WaitEmbeddings(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(g.calls); n != 0 {
		t.Errorf("%d embedding calls during the backoff", n)
	}
	if j := ix.EmbedJobState(); j.Failures != 1 {
		t.Errorf("job = %+v", j)
	}

	// Past it, the next sync retries; a second failure doubles the wait.
	now = now.Add(2 * time.Hour)
	mustSync(t, ix, SyncOptions{})
	g.next(t)
	g.gate <- errors.New("connection refused")
	ix.WaitEmbeddings(ctx)
	if j := ix.EmbedJobState(); j.Failures != 2 || !j.NextRetryAt.Equal(now.Add(2*time.Hour)) || !strings.Contains(j.LastError, "refused") {
		t.Errorf("job after a second failure = %+v", j)
	}

	// The server is back: the retry embeds everything, both notes.
	now = now.Add(3 * time.Hour)
	g.release()
	mustSync(t, ix, SyncOptions{})
	ix.WaitEmbeddings(ctx)
	vs = vectorStatusOf(t, ix)
	if j := vs.Job; j.Failures != 0 || j.LastError != "" || !j.NextRetryAt.IsZero() || !vs.Complete || vs.Pending != 0 || vs.Total != 4 {
		t.Errorf("status after recovery = %+v job %+v", vs, j)
	}
}

// A job stopped half-way (the server shut down) keeps its pages; the next
// process embeds only the rest.
func TestBackgroundEmbedResumesInTheNextProcess(t *testing.T) {
	smallPages(t, 2)
	files := map[string]string{"a.md": "one\n\n# H\n\ntwo\n\n# I\n\nthree\n", "b.md": "four\n"}
	// What a whole embedding of this vault takes (sections, titles and
	// note profiles), measured on a copy in one uninterrupted run.
	whole := func() int {
		root := t.TempDir()
		testutil.WriteFiles(t, root, files)
		f := &fakeEmbedder{model: "slow"}
		ix := openWith(t, root, f, embed.Settings{})
		mustSync(t, ix, SyncOptions{})
		return len(f.reset())
	}()
	root := t.TempDir()
	testutil.WriteFiles(t, root, files)
	g := newGated()
	ix := openWith(t, root, g, embed.Settings{})
	ix.BackgroundEmbed()
	mustSync(t, ix, SyncOptions{})
	first := g.next(t)
	g.gate <- nil
	g.next(t) // the second page is in the embedder when the server stops
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	f := &fakeEmbedder{model: "slow"} // same identity, another process
	ix2 := openWith(t, root, f, embed.Settings{})
	if ix2.VectorsComplete(context.Background()) {
		t.Fatal("complete after an interrupted job")
	}
	ix2.BackgroundEmbed()
	mustSync(t, ix2, SyncOptions{})
	if err := ix2.WaitEmbeddings(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := f.reset()
	vs := vectorStatusOf(t, ix2)
	// Everything but the first page (2 texts), which was kept.
	if len(got) != whole-len(first) || len(first) != 2 || vs.Pending != 0 || !vs.Complete {
		t.Errorf("second process embedded %q (first page %q); status %+v", got, first, vs)
	}
	for _, s := range first {
		for _, s2 := range got {
			if s == s2 {
				t.Errorf("%q embedded twice", s)
			}
		}
	}
}

// An embedder that cannot run (model2vec without its folder) does not
// stop the lexical index: `loci index` gets the error after the commit,
// a server's sync succeeds and the status says why there are no vectors.
func TestEmbedderUnavailableIndexesLexically(t *testing.T) {
	t.Setenv("LOCI_EMBED_PROVIDER", "model2vec")
	t.Setenv("LOCI_EMBED_MODEL_PATH", "")
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"a.md": "# A\n\nalpha\n"})
	ix := openTest(t, root)
	res, err := ix.Sync(context.Background(), SyncOptions{})
	if errs.Code(err) != errs.CodeEmbedUnavailable || !strings.Contains(err.Error(), "model_path") {
		t.Fatalf("foreground sync error = %v", err)
	}
	if res == nil || res.Indexed != 1 || count(t, ix, "SELECT COUNT(*) FROM notes") != 1 || ix.Interrupted(context.Background()) {
		t.Fatalf("lexical index not committed: %+v", res)
	}
	vs := vectorStatusOf(t, ix)
	if vs.DefaultMode != "lexical" || !strings.Contains(vs.ConfigError, "model_path") || vs.Configured != "model2vec (unavailable)" || vs.Pending != 2 {
		t.Errorf("status = %+v", vs)
	}
	// --no-embed asks for no vectors: no error.
	if _, err := ix.Sync(context.Background(), SyncOptions{NoEmbed: true}); err != nil {
		t.Errorf("NoEmbed sync: %v", err)
	}

	ix.BackgroundEmbed()
	testutil.WriteFiles(t, root, map[string]string{"b.md": "beta\n"})
	res, err = ix.Sync(context.Background(), SyncOptions{})
	if err != nil || res.Indexed != 1 || res.Embed == nil || !res.Embed.Background {
		t.Fatalf("background sync = %+v, %v", res, err)
	}
	vs = vectorStatusOf(t, ix)
	if vs.Job == nil || !strings.Contains(vs.Job.LastError, "model_path") || vs.Job.Running {
		t.Errorf("job = %+v", vs.Job)
	}
}

// The background job reports its progress page by page (OnEmbedProgress:
// the web UI's progress bar), from 0 to every text of the run.
func TestBackgroundEmbedReportsProgress(t *testing.T) {
	smallPages(t, 2)
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"a.md": "# A\n\nalpha apples\n\n## Two\n\nmore apples\n",
		"b.md": "# B\n\nbeta bananas\n",
	})
	ix := openWith(t, root, &fakeEmbedder{model: "fake"}, embed.Settings{})
	ix.BackgroundEmbed()
	var mu sync.Mutex
	var got [][2]int
	ix.OnEmbedProgress(func(done, total int) {
		mu.Lock()
		got = append(got, [2]int{done, total})
		mu.Unlock()
	})
	mustSync(t, ix, SyncOptions{})
	if err := ix.WaitEmbeddings(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Three sections in pages of two (2, 3), then the two titles (5).
	want := [][2]int{{0, 5}, {2, 5}, {3, 5}, {5, 5}}
	if !slices.Equal(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
}
