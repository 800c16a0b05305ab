package embed

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/llm"
)

func TestBuiltin(t *testing.T) {
	p := Builtin()
	id := p.Identity()
	if id.Provider != "builtin" || id.Dims != 100 || !strings.HasPrefix(id.Model, "sif-glove100d-") {
		t.Fatalf("identity = %+v", id)
	}
	vs, err := p.Embed(context.Background(), []string{
		"The cat sat on the mat.",
		"A kitten was sleeping on the rug.",
		"Stock markets fell sharply after the central bank raised interest rates.",
		"zzqqxx qqzzyy",
		"Café",
		"cafe",
	})
	if err != nil {
		t.Fatal(err)
	}
	cat, kitten, market := vs[0], vs[1], vs[2]
	if a, b := Dot(cat, kitten), Dot(cat, market); a <= b+0.1 {
		t.Errorf("cat·kitten %.3f should beat cat·market %.3f", a, b)
	}
	if n := Dot(cat, cat); n < 0.999 || n > 1.001 {
		t.Errorf("not unit length: %f", n)
	}
	if Dot(vs[3], vs[3]) != 0 {
		t.Error("only unknown words must give a zero vector")
	}
	if d := Dot(vs[4], vs[5]); d < 0.999 {
		t.Errorf("accents must fold: %f", d)
	}
	again, _ := p.Embed(context.Background(), []string{"The cat sat on the mat."})
	if Dot(again[0], cat) < 0.99999 {
		t.Error("not deterministic")
	}
	// The parallel path gives the same vectors.
	many := make([]string, 200)
	for i := range many {
		many[i] = "The cat sat on the mat."
	}
	mv, _ := p.Embed(context.Background(), many)
	if Dot(mv[199], cat) < 0.99999 {
		t.Error("parallel embedding differs")
	}
}

func TestMatrixTopNotes(t *testing.T) {
	for _, q8 := range []bool{false, true} {
		b := NewMatrixBuilder(3, q8, 4)
		b.Add(1, 10, Normalize([]float32{1, 0, 0}))
		b.Add(1, 11, Normalize([]float32{0, 1, 0}))
		b.Add(2, 20, Normalize([]float32{0.9, 0.1, 0}))
		b.Add(3, 30, Normalize([]float32{0, 0, 1}))
		m := b.Matrix()
		got := m.TopNotes([]float32{0, 1, 0}, 2, nil)
		if len(got) != 2 || got[0].Note != 1 || got[0].Chunk != 11 {
			t.Fatalf("int8=%v: %+v", q8, got)
		}
		got = m.TopNotes([]float32{1, 0, 0}, 5, func(n int64) bool { return n != 1 })
		if len(got) != 2 || got[0].Note != 2 || got[1].Note != 3 {
			t.Fatalf("int8=%v filtered: %+v", q8, got)
		}
		if m.Bytes() == 0 {
			t.Error("no bytes")
		}
	}
}

// TestMatrixTopChunks: by section, two chunks of one note may both rank;
// the filter still works by note.
func TestMatrixTopChunks(t *testing.T) {
	for _, q8 := range []bool{false, true} {
		b := NewMatrixBuilder(3, q8, 4)
		b.Add(1, 10, Normalize([]float32{1, 0, 0}))
		b.Add(1, 11, Normalize([]float32{0.8, 0.2, 0}))
		b.Add(2, 20, Normalize([]float32{0.5, 0.5, 0}))
		b.Add(3, 30, Normalize([]float32{0, 0, 1}))
		m := b.Matrix()
		got := m.TopChunks([]float32{1, 0, 0}, 3, nil)
		if len(got) != 3 || got[0].Chunk != 10 || got[1].Chunk != 11 || got[2].Chunk != 20 || got[1].Note != 1 {
			t.Fatalf("int8=%v: %+v", q8, got)
		}
		got = m.TopChunks([]float32{1, 0, 0}, 5, func(n int64) bool { return n != 1 })
		if len(got) != 2 || got[0].Chunk != 20 || got[1].Chunk != 30 {
			t.Fatalf("int8=%v filtered: %+v", q8, got)
		}
	}
}

func TestVectorBlob(t *testing.T) {
	v := []float32{1.5, -2, 0.25}
	if got := DecodeVector(EncodeVector(v), nil); len(got) != 3 || got[0] != 1.5 || got[1] != -2 || got[2] != 0.25 {
		t.Fatal(got)
	}
}

// fakeServer is an OpenAI-compatible /v1/embeddings endpoint.
type fakeServer struct {
	mu       sync.Mutex
	batches  [][]string
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	fail     func(n int) (int, string) // status and body for the n-th request (0: succeed)
	dims     int
	calls    atomic.Int32
	// retryAfter is the Retry-After of a 429 (default "0"); noUsage
	// leaves usage out of the answers.
	retryAfter string
	noUsage    bool
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(f.calls.Add(1))
	cur := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if cur <= m || f.maxSeen.CompareAndSwap(m, cur) {
			break
		}
	}
	time.Sleep(5 * time.Millisecond)
	if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer sk-test" {
		w.WriteHeader(404)
		return
	}
	if f.fail != nil {
		if code, body := f.fail(n); code != 0 {
			if code == 429 {
				ra := f.retryAfter
				if ra == "" {
					ra = "0"
				}
				w.Header().Set("Retry-After", ra)
			}
			w.WriteHeader(code)
			w.Write([]byte(body))
			return
		}
	}
	var req llm.EmbedRequest
	json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.batches = append(f.batches, req.Input)
	f.mu.Unlock()
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []item
	// Reverse order: the client must place vectors by index.
	for i := len(req.Input) - 1; i >= 0; i-- {
		v := make([]float32, f.dims)
		v[len(req.Input[i])%f.dims] = 1
		data = append(data, item{i, v})
	}
	if f.noUsage {
		json.NewEncoder(w).Encode(map[string]any{"data": data, "model": req.Model})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"data": data, "model": req.Model, "usage": map[string]int{"prompt_tokens": 7 * len(req.Input), "total_tokens": 7 * len(req.Input)}})
}

func newFake(t *testing.T, f *fakeServer) Settings {
	if f.dims == 0 {
		f.dims = 8
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return Settings{Provider: "openai", Model: "fake-embed", BaseURL: srv.URL + "/v1", APIKey: "sk-test", BatchSize: 3, Concurrency: 2, MaxRetries: 3, PricePerMTok: 0.02}
}

func noSleep(o *OpenAI) { o.sleep = func(context.Context, time.Duration) error { return nil } }

func TestOpenAIBatching(t *testing.T) {
	f := &fakeServer{}
	o := NewOpenAI(newFake(t, f))
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g", "hh", "iii", "j"}
	vs, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.batches) != 4 {
		t.Errorf("batches = %d, want 4 of at most 3", len(f.batches))
	}
	for _, b := range f.batches {
		if len(b) > 3 {
			t.Errorf("batch of %d", len(b))
		}
	}
	if f.maxSeen.Load() > 2 {
		t.Errorf("%d requests in flight, limit 2", f.maxSeen.Load())
	}
	for i, v := range vs {
		if v[len(texts[i])%8] != 1 {
			t.Fatalf("vector %d out of order", i)
		}
	}
	u := o.Usage()
	if u.Tokens != 70 || u.Texts != 10 || u.Requests != 4 || u.CostUSD <= 0 {
		t.Errorf("usage = %+v", u)
	}
	if id := o.Identity(); id != (Identity{"openai", "fake-embed", 8}) {
		t.Errorf("identity = %+v", id)
	}
}

func TestOpenAIRetry(t *testing.T) {
	f := &fakeServer{fail: func(n int) (int, string) {
		switch n {
		case 1:
			return 429, `{"error":{"message":"slow down"}}`
		case 2:
			return 503, `upstream down`
		}
		return 0, ""
	}}
	o := NewOpenAI(newFake(t, f))
	noSleep(o)
	if _, err := o.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if u := o.Usage(); u.Retries != 2 || u.Requests != 3 {
		t.Errorf("usage = %+v", u)
	}
	// Retries run out.
	f2 := &fakeServer{fail: func(int) (int, string) { return 500, `{"error":{"message":"boom"}}` }}
	o2 := NewOpenAI(newFake(t, f2))
	noSleep(o2)
	_, err := o2.Embed(context.Background(), []string{"x"})
	if errs.Code(err) != CodeUnavailable || !strings.Contains(err.Error(), "after 4 attempts") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("err = %v", err)
	}
}

func TestOpenAIErrors(t *testing.T) {
	cases := []struct {
		status int
		body   string
		code   string
		msg    string
	}{
		{401, `{"error":{"message":"Incorrect API key"}}`, CodeUnavailable, "refused the API key"},
		{404, `{"error":{"message":"model not found"}}`, CodeUnavailable, "not found"},
		{400, `{"error":{"message":"input too long"}}`, CodeUnavailable, "input too long"},
		// An error object in a 200 answer is the server's message, not "0 vectors".
		{200, `{"error":{"message":"input too long"}}`, CodeUnavailable, "input too long"},
	}
	for _, c := range cases {
		f := &fakeServer{fail: func(int) (int, string) { return c.status, c.body }}
		o := NewOpenAI(newFake(t, f))
		noSleep(o)
		_, err := o.Embed(context.Background(), []string{"x"})
		if errs.Code(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%d: err = %v", c.status, err)
		}
		if f.calls.Load() != 1 {
			t.Errorf("%d: retried %d times; client errors are final", c.status, f.calls.Load()-1)
		}
	}
	// A model that changes dimension is a mismatch.
	f := &fakeServer{dims: 8}
	s := newFake(t, f)
	s.Dims = 16
	_, err := NewOpenAI(s).Embed(context.Background(), []string{"x"})
	if errs.Code(err) != CodeMismatch {
		t.Errorf("dims: err = %v", err)
	}
}

// TestOpenAIRetryAfter: the wait is the Retry-After the server asked for,
// not a jittered fraction of it.
func TestOpenAIRetryAfter(t *testing.T) {
	f := &fakeServer{retryAfter: "2", fail: func(n int) (int, string) {
		if n == 1 {
			return 429, `{"error":{"message":"slow down"}}`
		}
		return 0, ""
	}}
	o := NewOpenAI(newFake(t, f))
	var waits []time.Duration
	o.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	if _, err := o.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0] != 2*time.Second {
		t.Errorf("waits %v, want [2s]", waits)
	}
}

// TestOpenAITokenEstimate: without usage in the answer, tokens are
// estimated, a token a character for Chinese, Japanese and Korean.
func TestOpenAITokenEstimate(t *testing.T) {
	f := &fakeServer{noUsage: true}
	o := NewOpenAI(newFake(t, f))
	if _, err := o.Embed(context.Background(), []string{"知识管理", "abcdefgh"}); err != nil {
		t.Fatal(err)
	}
	if u := o.Usage(); u.Tokens != 4+2 {
		t.Errorf("tokens %d, want 6", u.Tokens)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/empty.yaml", nil, 0o644)
	t.Setenv("LOCI_CONFIG", dir+"/empty.yaml")
	s, err := Resolve(dir)
	if err != nil || s.Provider != "builtin" || s.OnMismatch != "fail" {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	t.Setenv("LOCI_EMBED_PROVIDER", "openai")
	if _, err := Resolve(dir); errs.Code(err) != errs.CodeConfigInvalid {
		t.Errorf("openai without a model: %v", err)
	}
	t.Setenv("LOCI_EMBED_MODEL", "nomic-embed-text")
	t.Setenv("LOCI_EMBED_BASE_URL", "http://127.0.0.1:11434/v1")
	t.Setenv("LOCI_EMBED_BATCH_SIZE", "16")
	s, err = Resolve(dir)
	if err != nil || s.Model != "nomic-embed-text" || s.BatchSize != 16 || s.BaseURL != "http://127.0.0.1:11434/v1" {
		t.Errorf("env: %+v %v", s, err)
	}
	t.Setenv("LOCI_EMBED_PROVIDER", "none")
	if s, _ := Resolve(dir); !s.Disabled() {
		t.Error("none must disable")
	}
	t.Setenv("LOCI_EMBED_PROVIDER", "word2vec")
	if _, err := Resolve(dir); err == nil {
		t.Error("unknown provider accepted")
	}
}

// TestListPrice: OpenAI's embedding models are priced from loci's list
// when price_per_mtok is not set; your price wins; a server on this
// machine costs nothing.
func TestListPrice(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/empty.yaml", nil, 0o644)
	t.Setenv("LOCI_CONFIG", dir+"/empty.yaml")
	t.Setenv("LOCI_EMBED_PROVIDER", "openai")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("LOCI_EMBED_MODEL", "text-embedding-3-small")
	if s, err := Resolve(dir); err != nil || s.PricePerMTok != 0.02 {
		t.Errorf("list price: %+v %v", s, err)
	}
	t.Setenv("LOCI_EMBED_PRICE_PER_MTOK", "0.5")
	if s, err := Resolve(dir); err != nil || s.PricePerMTok != 0.5 {
		t.Errorf("yours: %+v %v", s, err)
	}
	t.Setenv("LOCI_EMBED_PRICE_PER_MTOK", "")
	t.Setenv("LOCI_EMBED_BASE_URL", "http://127.0.0.1:8080/v1")
	if s, err := Resolve(dir); err != nil || s.PricePerMTok != 0 {
		t.Errorf("local: %+v %v", s, err)
	}
}

// TestMaxRetriesZero: LOCI_EMBED_MAX_RETRIES=0 (or embed.max_retries: 0)
// means no retries; unset keeps the default 4.
func TestMaxRetriesZero(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/empty.yaml", nil, 0o644)
	t.Setenv("LOCI_CONFIG", dir+"/empty.yaml")
	t.Setenv("LOCI_EMBED_PROVIDER", "openai-compatible")
	t.Setenv("LOCI_EMBED_MODEL", "fake-embed")
	f := &fakeServer{fail: func(int) (int, string) { return 503, `{"error":{"message":"loading"}}` }}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("LOCI_EMBED_BASE_URL", srv.URL+"/v1")
	if s, err := Resolve(dir); err != nil || s.MaxRetries != 4 {
		t.Fatalf("default: %+v %v", s, err)
	}
	t.Setenv("LOCI_EMBED_MAX_RETRIES", "0")
	s, err := Resolve(dir)
	if err != nil || s.MaxRetries != 0 {
		t.Fatalf("LOCI_EMBED_MAX_RETRIES=0: %+v %v", s, err)
	}
	o := NewOpenAI(s)
	noSleep(o)
	if _, err := o.Embed(context.Background(), []string{"x"}); err == nil || o.Usage().Requests != 1 || o.Usage().Retries != 0 {
		t.Errorf("no retries: %v %+v", err, o.Usage())
	}
}
