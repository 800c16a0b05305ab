package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/loci-dev/loci/internal/embed/onnxtest"

	"github.com/loci-dev/loci/internal/errs"
)

// The tests build their own ONNX model: input_ids → Gather rows of an
// embedding table → last_hidden_state [batch, seq, dims], with the
// attention_mask and token_type_ids inputs a BERT export has. Mean pooling
// of that output is the masked mean of the table rows of the tokens, which
// the tests compute by hand.

// onnxVocab is the WordPiece vocabulary of the test tokenizer; a token's
// id is its index.
var onnxVocab = []string{
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "query", ":", "passage", "the", "cat", "dog",
	"sat", "on", "mat", "kitten", "feline", "zebra", "stripes", "##s", "a", "b",
}

const onnxDims = 4

// onnxRow is the table row of id i: distinct, exactly representable.
func onnxRow(i int) []float32 {
	return []float32{float32(i%5) - 2, float32(i%3) + 0.5, float32(i) / 4, 1 - float32(i%2)}
}

// onnxTable is the table, with rows overridden by id.
func onnxTable(over map[int][]float32) [][]float32 {
	rows := make([][]float32, len(onnxVocab))
	for i := range rows {
		rows[i] = onnxRow(i)
		if r, ok := over[i]; ok {
			rows[i] = r
		}
	}
	return rows
}

func onnxID(tok string) int {
	for i, t := range onnxVocab {
		if t == tok {
			return i
		}
	}
	panic("no token " + tok)
}

// writeONNXModel writes a model folder of the test vocabulary.
func writeONNXModel(t testing.TB, dir string, model []byte, extra map[string]string) {
	t.Helper()
	onnxtest.WriteFolder(t, dir, model, onnxVocab, extra)
}

func gatherModel(rows [][]float32) []byte { return onnxtest.GatherModel(rows) }

// meanOf is the hand-computed sentence vector: the mean of the rows of the
// tokens, L2-normalised.
func meanOf(rows [][]float32, toks ...string) []float32 {
	v := make([]float64, len(rows[0]))
	for _, tok := range toks {
		for k, x := range rows[onnxID(tok)] {
			v[k] += float64(x)
		}
	}
	var n float64
	for k := range v {
		v[k] /= float64(len(toks))
		n += v[k] * v[k]
	}
	out := make([]float32, len(v))
	for k := range v {
		out[k] = float32(v[k] / math.Sqrt(n))
	}
	return out
}

func assertVec(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d dims, want %d", what, len(got), len(want))
	}
	for k := range got {
		if math.Abs(float64(got[k]-want[k])) > 1e-5 {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func newTestONNX(t *testing.T, dir string, q, d *string) *ONNX {
	t.Helper()
	m, err := NewONNX(dir, q, d)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestONNXMeanPooling(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny-bert")
	rows := onnxTable(nil)
	writeONNXModel(t, dir, gatherModel(rows), nil)
	m := newTestONNX(t, dir, nil, nil)
	if id := m.Identity(); id.Provider != "onnx" || !strings.HasPrefix(id.Model, "tiny-bert@") || len(id.Model) != len("tiny-bert@")+12 || id.Dims != 0 {
		t.Fatalf("identity before the first run: %+v", id)
	}
	if m.rt != nil {
		t.Fatal("the graph was loaded before the first Embed")
	}
	// Texts of different lengths share a batch: padding must not count.
	texts := []string{"The cat sat on the mat", "dog", "Cats", "zebra stripes"}
	vs, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"},
		{"[CLS]", "dog", "[SEP]"},
		{"[CLS]", "cat", "##s", "[SEP]"},
		{"[CLS]", "zebra", "stripes", "[SEP]"},
	}
	for i := range texts {
		assertVec(t, texts[i], vs[i], meanOf(rows, want[i]...))
	}
	if id := m.Identity(); id.Dims != onnxDims {
		t.Fatalf("dims after a run: %+v", id)
	}
	if u := m.Usage(); u.Texts != 4 || u.Tokens != 8+3+4+4 {
		t.Fatalf("usage %+v", u)
	}
	// One at a time gives the same vectors as the batch.
	for i, text := range texts {
		one, err := m.Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		assertVec(t, "alone: "+text, one[0], vs[i])
	}
	// The same folder is one loaded model per process.
	if again := newTestONNX(t, dir, nil, nil); again != m {
		t.Fatal("the provider was not cached")
	}
}

func TestONNXBatchesAndCancel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	rows := onnxTable(nil)
	writeONNXModel(t, dir, gatherModel(rows), nil)
	m := newTestONNX(t, dir, nil, nil)
	// 23 texts: batches of 16, 4, 2 and 1, sorted by length and put back
	// in order.
	var texts []string
	var want [][]float32
	words := []string{"cat", "dog", "mat", "zebra", "kitten"}
	for i := range 23 {
		toks := []string{"[CLS]"}
		text := ""
		for j := 0; j <= i%7; j++ {
			w := words[(i+j)%len(words)]
			text += w + " "
			toks = append(toks, w)
		}
		texts = append(texts, text)
		want = append(want, meanOf(rows, append(toks, "[SEP]")...))
	}
	vs, err := m.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		assertVec(t, texts[i], vs[i], want[i])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, texts); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestONNXTruncation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	rows := onnxTable(nil)
	writeONNXModel(t, dir, gatherModel(rows), map[string]string{"sentence_bert_config.json": `{"max_seq_length": 5}`})
	m := newTestONNX(t, dir, nil, nil)
	vs, err := m.Embed(context.Background(), []string{"the cat sat on the mat"})
	if err != nil {
		t.Fatal(err)
	}
	// Five tokens, the closing [SEP] kept.
	assertVec(t, "truncated", vs[0], meanOf(rows, "[CLS]", "the", "cat", "sat", "[SEP]"))
}

func TestONNXCLSPooling(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	rows := onnxTable(nil)
	writeONNXModel(t, dir, gatherModel(rows), map[string]string{"1_Pooling/config.json": `{"word_embedding_dimension": 4, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}`})
	m := newTestONNX(t, dir, nil, nil)
	if m.Identity().Dims != 4 {
		t.Fatalf("dims from 1_Pooling: %+v", m.Identity())
	}
	vs, err := m.Embed(context.Background(), []string{"cat", "zebra stripes"})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		assertVec(t, "cls", v, meanOf(rows, "[CLS]"))
		_ = i
	}
	mean := filepath.Join(t.TempDir(), "m")
	writeONNXModel(t, mean, gatherModel(rows), nil)
	if newTestONNX(t, mean, nil, nil).Identity().Model[2:] == m.Identity().Model[2:] {
		t.Fatal("pooling is not part of the identity")
	}
}

func TestONNXPrefixes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "e5")
	rows := onnxTable(nil)
	writeONNXModel(t, dir, gatherModel(rows), map[string]string{"config_sentence_transformers.json": `{"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null}`})
	m := newTestONNX(t, dir, nil, nil)
	if q, d := m.Prefixes(); q != "query: " || d != "passage: " {
		t.Fatalf("prefixes %q %q", q, d)
	}
	ctx := context.Background()
	doc, err := m.Embed(ctx, []string{"cat"})
	if err != nil {
		t.Fatal(err)
	}
	assertVec(t, "document", doc[0], meanOf(rows, "[CLS]", "passage", ":", "cat", "[SEP]"))
	q, err := Query(ctx, m, "cat")
	if err != nil {
		t.Fatal(err)
	}
	assertVec(t, "query", q, meanOf(rows, "[CLS]", "query", ":", "cat", "[SEP]"))

	// Config overrides the folder's prompts, and is another identity.
	empty, other := "", "passage: "
	o := newTestONNX(t, dir, &empty, &other)
	if o.Identity().Model == m.Identity().Model {
		t.Fatal("the prefixes are not part of the identity")
	}
	q2, err := Query(ctx, o, "cat")
	if err != nil {
		t.Fatal(err)
	}
	assertVec(t, "query without prefix", q2, meanOf(rows, "[CLS]", "cat", "[SEP]"))

	// Another tokenizer is another identity.
	tj := filepath.Join(dir, "tokenizer.json")
	b, _ := os.ReadFile(tj)
	os.WriteFile(tj, []byte(strings.Replace(string(b), `"lowercase":true`, `"lowercase":false`, 1)), 0o644)
	if n := newTestONNX(t, dir, nil, nil); n.Identity().Model == m.Identity().Model {
		t.Fatal("the tokenizer is not part of the identity")
	}
}

func TestPrefixedProvider(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "potion")
	writeModel(t, dir, "F32")
	base, err := NewModel2Vec(dir)
	if err != nil {
		t.Fatal(err)
	}
	q, d := "cat ", "dog "
	s := Settings{Provider: "model2vec", ModelPath: dir, QueryPrefix: &q, DocumentPrefix: &d}
	p, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Identity().Model == base.Identity().Model || !strings.HasPrefix(p.Identity().Model, base.Identity().Model+"+prefix@") {
		t.Fatalf("identity %v", p.Identity())
	}
	ctx := context.Background()
	got, _ := p.Embed(ctx, []string{"house"})
	want, _ := base.Embed(ctx, []string{"dog house"})
	assertVec(t, "document", got[0], want[0])
	gq, err := Query(ctx, p, "house")
	if err != nil {
		t.Fatal(err)
	}
	wq, _ := base.Embed(ctx, []string{"cat house"})
	assertVec(t, "query", gq, wq[0])
	// Empty prefixes change nothing, not even the identity.
	e := ""
	p2, _ := New(Settings{Provider: "model2vec", ModelPath: dir, QueryPrefix: &e, DocumentPrefix: &e})
	if p2.Identity() != base.Identity() {
		t.Fatalf("empty prefixes: %v", p2.Identity())
	}
}

func TestONNXRefusals(t *testing.T) {
	rows := onnxTable(nil)
	unavailable := func(t *testing.T, err error, want string) {
		t.Helper()
		if errs.Code(err) != CodeUnavailable || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want embedding_unavailable with %q", err, want)
		}
	}
	ctx := context.Background()
	embedErr := func(t *testing.T, dir string) error {
		t.Helper()
		m, err := NewONNX(dir, nil, nil)
		if err != nil {
			return err
		}
		_, err = m.Embed(ctx, []string{"cat"})
		if err == nil {
			t.Fatal("no error")
		}
		return err
	}
	t.Run("no folder", func(t *testing.T) {
		_, err := NewONNX("", nil, nil)
		unavailable(t, err, "model_path")
	})
	t.Run("missing files", func(t *testing.T) {
		dir := t.TempDir()
		_, err := NewONNX(dir, nil, nil)
		unavailable(t, err, "missing model.onnx")
		os.WriteFile(filepath.Join(dir, "model.onnx"), gatherModel(rows), 0o644)
		_, err = NewONNX(dir, nil, nil)
		unavailable(t, err, "missing tokenizer.json")
	})
	t.Run("onnx subfolder", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, filepath.Join(dir, "onnx"), gatherModel(rows), nil)
		os.Rename(filepath.Join(dir, "onnx", "tokenizer.json"), filepath.Join(dir, "tokenizer.json"))
		m, err := NewONNX(dir, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Embed(ctx, []string{"cat"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("garbage model", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, dir, []byte("\xff\xff\xff not a protobuf"), nil)
		unavailable(t, embedErr(t, dir), dir)
	})
	t.Run("empty model (no graph)", func(t *testing.T) {
		// An empty file is a valid, empty ModelProto: the parser finds no
		// graph (and dereferences it); the provider must recover.
		dir := t.TempDir()
		writeONNXModel(t, dir, nil, nil)
		unavailable(t, embedErr(t, dir), "the ONNX runtime failed while loading")
	})
	t.Run("unsupported op", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, dir, onnxtest.Graph(
			[][]byte{onnxtest.Node("NoSuchOp", []string{"embeddings", "input_ids"}, []string{"last_hidden_state"}, nil)},
			[][]byte{onnxtest.FloatTensor("embeddings", rows)}, onnxtest.BertInputs(),
			[][]byte{onnxtest.ValueInfo("last_hidden_state", onnxtest.Float, "batch", "sequence", 4)}), nil)
		unavailable(t, embedErr(t, dir), "NoSuchOp")
	})
	t.Run("wrong output shape", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, dir, onnxtest.Graph(
			[][]byte{onnxtest.Node("Gather", []string{"embeddings", "input_ids"}, []string{"last_hidden_state"}, map[string]int{"axis": 0})},
			[][]byte{onnxtest.FloatTensor("embeddings", rows)}, onnxtest.BertInputs(),
			[][]byte{onnxtest.ValueInfo("last_hidden_state", onnxtest.Float, "batch", "sequence", "x", 4)}), nil)
		unavailable(t, embedErr(t, dir), "want [batch, sequence, dims]")
	})
	t.Run("unknown input", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, dir, onnxtest.Graph(
			[][]byte{onnxtest.Node("Gather", []string{"embeddings", "input_ids"}, []string{"last_hidden_state"}, map[string]int{"axis": 0})},
			[][]byte{onnxtest.FloatTensor("embeddings", rows)}, append(onnxtest.BertInputs(), onnxtest.ValueInfo("pixel_values", onnxtest.Float, "batch", 3)),
			[][]byte{onnxtest.ValueInfo("last_hidden_state", onnxtest.Float, "batch", "sequence", 4)}), nil)
		unavailable(t, embedErr(t, dir), `"pixel_values"`)
	})
	t.Run("huge declared dimensions", func(t *testing.T) {
		// 2^40 rows declared, 16 bytes present: refused before the
		// converter allocates by the declared shape.
		dir := t.TempDir()
		writeONNXModel(t, dir, onnxtest.Graph(
			[][]byte{onnxtest.Node("Gather", []string{"embeddings", "input_ids"}, []string{"last_hidden_state"}, map[string]int{"axis": 0})},
			[][]byte{onnxtest.FloatTensorFlat("embeddings", []float32{1, 2, 3, 4}, 1<<40, 4)}, onnxtest.BertInputs(),
			[][]byte{onnxtest.ValueInfo("last_hidden_state", onnxtest.Float, "batch", "sequence", 4)}), nil)
		unavailable(t, embedErr(t, dir), "implausible dimensions")
	})
	t.Run("data shorter than dimensions", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, dir, onnxtest.Graph(
			[][]byte{onnxtest.Node("Gather", []string{"embeddings", "input_ids"}, []string{"last_hidden_state"}, map[string]int{"axis": 0})},
			[][]byte{onnxtest.FloatTensorFlat("embeddings", []float32{1, 2, 3, 4}, 1<<20, 4)}, onnxtest.BertInputs(),
			[][]byte{onnxtest.ValueInfo("last_hidden_state", onnxtest.Float, "batch", "sequence", 4)}), nil)
		unavailable(t, embedErr(t, dir), "16 bytes of data for 4194304 elements")
	})
	t.Run("dims disagree with config", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, dir, gatherModel(rows), map[string]string{"config.json": `{"hidden_size": 8}`})
		unavailable(t, embedErr(t, dir), "4 dimensions but the folder's config says 8")
	})
	t.Run("unsupported tokenizer", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, dir, gatherModel(rows), nil)
		os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model": {"type": "NoSuchModel"}}`), 0o644)
		unavailable(t, embedErr(t, dir), "tokenizer.json")
	})
	t.Run("unsupported pooling", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, dir, gatherModel(rows), map[string]string{"1_Pooling/config.json": `{"pooling_mode_max_tokens": true}`})
		_, err := NewONNX(dir, nil, nil)
		unavailable(t, err, "unsupported pooling")
	})
	t.Run("damaged config", func(t *testing.T) {
		dir := t.TempDir()
		writeONNXModel(t, dir, gatherModel(rows), map[string]string{"config_sentence_transformers.json": `{"prompts": [`})
		_, err := NewONNX(dir, nil, nil)
		unavailable(t, err, "config_sentence_transformers.json")
	})
	t.Run("token id beyond the table", func(t *testing.T) {
		// The table has fewer rows than the vocabulary: Gather of an id
		// out of range must not crash the process.
		dir := t.TempDir()
		writeONNXModel(t, dir, gatherModel(rows[:8]), nil)
		m, err := NewONNX(dir, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = m.Embed(ctx, []string{"zebra"}) // an error or a vector, never a panic
	})
}

func TestResolveONNX(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mini")
	writeONNXModel(t, dir, gatherModel(onnxTable(nil)), nil)
	vault, home := t.TempDir(), t.TempDir()
	user := filepath.Join(home, "config.yaml")
	os.WriteFile(user, nil, 0o644)
	t.Setenv("LOCI_CONFIG", user)
	t.Setenv("LOCI_EMBED_PROVIDER", "onnx")
	t.Setenv("LOCI_EMBED_MODEL_PATH", dir)
	t.Setenv("LOCI_EMBED_QUERY_PREFIX", "query: ")
	s, err := Resolve(vault)
	if err != nil {
		t.Fatal(err)
	}
	if s.Provider != "onnx" || s.ModelPath != dir || s.QueryPrefix == nil || *s.QueryPrefix != "query: " || s.DocumentPrefix != nil {
		t.Fatalf("settings %+v", s)
	}
	p, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	if q, d := p.(*ONNX).Prefixes(); q != "query: " || d != "" {
		t.Fatalf("prefixes %q %q", q, d)
	}
	// A vault's own file may choose onnx and prefixes, not the folder.
	t.Setenv("LOCI_EMBED_MODEL_PATH", "")
	os.MkdirAll(filepath.Join(vault, ".loci"), 0o755)
	os.WriteFile(filepath.Join(vault, ".loci", "config.yaml"), []byte("embed:\n  provider: onnx\n  model_path: /etc\n"), 0o644)
	if _, err := Resolve(vault); errs.Code(err) != errs.CodeConfigInvalid {
		t.Errorf("vault model_path: %v", err)
	}
	os.WriteFile(filepath.Join(vault, ".loci", "config.yaml"), []byte("embed:\n  provider: onnx\n  document_prefix: \"passage: \"\n"), 0o644)
	s, err = Resolve(vault)
	if err != nil || s.Provider != "onnx" || s.DocumentPrefix == nil || *s.DocumentPrefix != "passage: " {
		t.Fatalf("vault file: %+v %v", s, err)
	}
	if _, err := New(s); errs.Code(err) != CodeUnavailable || !strings.Contains(err.Error(), "LOCI_EMBED_MODEL_PATH") {
		t.Errorf("no folder: %v", err)
	}
}

// TestONNXAttentionPadding runs a small BERT-style encoder (self-attention
// masked by attention_mask, LayerNorm, GELU feed-forward): a text's vector
// must not depend on the longer texts padded into its batch, nor on the
// bucket its length is padded to.
func TestONNXAttentionPadding(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bert")
	shape := onnxtest.BertShape{Vocab: len(onnxVocab), Hidden: 8, Layers: 2, Heads: 2, FFN: 16}
	writeONNXModel(t, dir, onnxtest.BertModel(shape, 7), nil)
	m := newTestONNX(t, dir, nil, nil)
	ctx := context.Background()
	long := strings.Repeat("the cat sat on the mat ", 5)     // 30 words: padded to 32
	texts := []string{"dog", "zebra stripes", long, "a cat"} // one batch of 4
	batch, err := m.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		alone, err := m.Embed(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		assertVec(t, "alone vs batched: "+text, alone[0], batch[i])
		var n float64
		for _, x := range alone[0] {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-5 {
			t.Fatalf("%q: norm² %v", text, n)
		}
	}
	if d := m.Identity().Dims; d != 8 {
		t.Fatalf("dims %d", d)
	}
	// The vectors differ between texts (the model is not constant).
	same := true
	for k := range batch[0] {
		if math.Abs(float64(batch[0][k]-batch[1][k])) > 1e-4 {
			same = false
		}
	}
	if same {
		t.Fatal("two texts gave one vector")
	}
}

// TestONNXPositionIDs: a model that takes position_ids gets 0, 1, … (what
// a BERT export computes itself when they are not given).
func TestONNXPositionIDs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pos")
	rows := onnxTable(nil)
	pos := make([][]float32, 64)
	for p := range pos {
		pos[p] = []float32{float32(p), 0, 0, 0}
	}
	model := onnxtest.Graph(
		[][]byte{
			onnxtest.Node("Gather", []string{"embeddings", "input_ids"}, []string{"tok"}, map[string]int{"axis": 0}),
			onnxtest.Node("Gather", []string{"positions", "position_ids"}, []string{"pos"}, map[string]int{"axis": 0}),
			onnxtest.Node("Add", []string{"tok", "pos"}, []string{"last_hidden_state"}, nil),
		},
		[][]byte{onnxtest.FloatTensor("embeddings", rows), onnxtest.FloatTensor("positions", pos)},
		append(onnxtest.BertInputs(), onnxtest.ValueInfo("position_ids", onnxtest.Int64, "batch", "sequence")),
		[][]byte{onnxtest.ValueInfo("last_hidden_state", onnxtest.Float, "batch", "sequence", onnxDims)},
	)
	writeONNXModel(t, dir, model, nil)
	m := newTestONNX(t, dir, nil, nil)
	vs, err := m.Embed(context.Background(), []string{"cat", "the cat sat"})
	if err != nil {
		t.Fatal(err)
	}
	want := func(toks ...string) []float32 {
		shifted := onnxTable(nil)
		v := make([]float64, onnxDims)
		for p, tok := range toks {
			r := shifted[onnxID(tok)]
			for k := range v {
				v[k] += float64(r[k] + pos[p][k])
			}
		}
		var n float64
		for k := range v {
			n += v[k] * v[k]
		}
		out := make([]float32, onnxDims)
		for k := range v {
			out[k] = float32(v[k] / math.Sqrt(n))
		}
		return out
	}
	assertVec(t, "cat", vs[0], want("[CLS]", "cat", "[SEP]"))
	assertVec(t, "the cat sat", vs[1], want("[CLS]", "the", "cat", "sat", "[SEP]"))
}

// TestONNXConcurrent: concurrent calls (a query while the index embeds)
// run side by side and give the vectors of sequential calls.
func TestONNXConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	shape := onnxtest.BertShape{Vocab: len(onnxVocab), Hidden: 8, Layers: 1, Heads: 2, FFN: 16}
	writeONNXModel(t, dir, onnxtest.BertModel(shape, 3), nil)
	m := newTestONNX(t, dir, nil, nil)
	ctx := context.Background()
	texts := []string{"cat", "the dog sat on a mat", "zebra stripes", "kitten", "a b a b a b a b a b a b a b a b a b"}
	want, err := m.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([][][]float32, 8)
	errc := make(chan error, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vs, err := m.Embed(ctx, texts[g%len(texts):])
			if err != nil {
				errc <- err
				return
			}
			got[g] = vs
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for g, vs := range got {
		for i, v := range vs {
			assertVec(t, fmt.Sprintf("goroutine %d text %d", g, i), v, want[g%len(texts)+i])
		}
	}
}

// TestONNXExternalData: weights kept in a file next to model.onnx (as
// exports of models over 2 GB do) are read; a location outside the folder
// is refused.
func TestONNXExternalData(t *testing.T) {
	rows := onnxTable(nil)
	model := func(location string) ([]byte, []byte) {
		init, data := onnxtest.FloatTensorExternal("embeddings", rows, location, 8)
		return onnxtest.Graph(
			[][]byte{onnxtest.Node("Gather", []string{"embeddings", "input_ids"}, []string{"last_hidden_state"}, map[string]int{"axis": 0})},
			[][]byte{init}, onnxtest.BertInputs(),
			[][]byte{onnxtest.ValueInfo("last_hidden_state", onnxtest.Float, "batch", "sequence", onnxDims)}), data
	}
	dir := filepath.Join(t.TempDir(), "ext")
	g, data := model("model.onnx_data")
	writeONNXModel(t, dir, g, map[string]string{"model.onnx_data": "8 bytes!" + string(data)})
	m := newTestONNX(t, dir, nil, nil)
	vs, err := m.Embed(context.Background(), []string{"zebra stripes"})
	if err != nil {
		t.Fatal(err)
	}
	assertVec(t, "external", vs[0], meanOf(rows, "[CLS]", "zebra", "stripes", "[SEP]"))

	out := filepath.Join(t.TempDir(), "out")
	g, data = model("../secret.bin")
	writeONNXModel(t, out, g, nil)
	os.WriteFile(filepath.Join(filepath.Dir(out), "secret.bin"), append([]byte("8 bytes!"), data...), 0o644)
	m = newTestONNX(t, out, nil, nil)
	if _, err := m.Embed(context.Background(), []string{"cat"}); errs.Code(err) != CodeUnavailable || !strings.Contains(err.Error(), "not a file in the model's folder") {
		t.Fatalf("outside location: %v", err)
	}
}

// TestONNXHugeText: a text of megabytes is cut before tokenizing and
// embeds like its first tokens.
func TestONNXHugeText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	rows := onnxTable(nil)
	writeONNXModel(t, dir, gatherModel(rows), map[string]string{"sentence_bert_config.json": `{"max_seq_length": 4}`})
	m := newTestONNX(t, dir, nil, nil)
	huge := "cat dog " + strings.Repeat("zebra é ", 1<<19) // 4 MB, a multi-byte character at the cut
	vs, err := m.Embed(context.Background(), []string{huge})
	if err != nil {
		t.Fatal(err)
	}
	assertVec(t, "huge", vs[0], meanOf(rows, "[CLS]", "cat", "dog", "[SEP]"))
}

// FuzzONNXModel: whatever model.onnx holds, loading and embedding give a
// vector or embedding_unavailable, never a crash.
func FuzzONNXModel(f *testing.F) {
	rows := onnxTable(nil)
	f.Add(gatherModel(rows))
	f.Add(onnxtest.BertModel(onnxtest.BertShape{Vocab: len(onnxVocab), Hidden: 4, Layers: 1, Heads: 2, FFN: 8}, 1))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, model []byte) {
		dir := t.TempDir()
		writeONNXModel(t, dir, model, nil)
		m, err := NewONNX(dir, nil, nil)
		if err != nil {
			t.Fatal(err) // the files exist: only loading can fail
		}
		vs, err := m.Embed(context.Background(), []string{"the cat", "zebra stripes on a mat"})
		if err != nil {
			if errs.Code(err) != CodeUnavailable {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if len(vs) != 2 {
			t.Fatalf("%d vectors", len(vs))
		}
	})
}

// TestONNXMutatedModels: models with bytes flipped at deterministic
// random places load and embed, or fail with embedding_unavailable; none
// crashes the process (FuzzONNXModel explores further, slowly: the
// instrumented GoMLX is large).
func TestONNXMutatedModels(t *testing.T) {
	seeds := [][]byte{
		gatherModel(onnxTable(nil)),
		onnxtest.BertModel(onnxtest.BertShape{Vocab: len(onnxVocab), Hidden: 4, Layers: 1, Heads: 2, FFN: 8}, 1),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 150
	if testing.Short() {
		n = 20
	}
	failed := 0
	for i := range n {
		model := bytes.Clone(seeds[i%len(seeds)])
		for range 1 + rng.IntN(4) {
			model[rng.IntN(len(model))] = byte(rng.IntN(256))
		}
		dir := t.TempDir()
		writeONNXModel(t, dir, model, nil)
		m, err := NewONNX(dir, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Embed(context.Background(), []string{"the cat", "zebra stripes on a mat"}); err != nil {
			if errs.Code(err) != CodeUnavailable {
				t.Fatalf("mutation %d: untyped error: %v", i, err)
			}
			failed++
		}
	}
	if failed == 0 || failed == n {
		t.Fatalf("%d of %d mutations failed: the mutations do not exercise both paths", failed, n)
	}
	t.Logf("%d of %d mutated models refused", failed, n)
}

// TestONNXMutatedTokenizers: tokenizer.json with characters replaced at
// deterministic random places (mostly still JSON) tokenizes, or fails
// with embedding_unavailable; the tokenizer library's own log.Fatal paths
// are not reached (3,000 mutations by hand, 300 here).
func TestONNXMutatedTokenizers(t *testing.T) {
	seed := onnxtest.TokenizerJSON(onnxVocab)
	model := gatherModel(onnxTable(nil))
	alpha := []byte(`"{}[],:0123456789abcdefghijklmnopqrstuvwxyz#-_ `)
	rng := rand.New(rand.NewPCG(7, 7))
	n := 300
	if testing.Short() {
		n = 30
	}
	refused := 0
	for i := range n {
		tj := bytes.Clone(seed)
		for range 1 + rng.IntN(3) {
			tj[rng.IntN(len(tj))] = alpha[rng.IntN(len(alpha))]
		}
		dir := t.TempDir()
		writeONNXModel(t, dir, model, nil)
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tj, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := NewONNX(dir, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Embed(context.Background(), []string{"the cat sat", "Zebra stripes, on a mat!"}); err != nil {
			if errs.Code(err) != CodeUnavailable {
				t.Fatalf("mutation %d: untyped error: %v", i, err)
			}
			refused++
		}
	}
	if refused == 0 || refused == n {
		t.Fatalf("%d of %d refused: the mutations do not exercise both paths", refused, n)
	}
}

// unigramVocab is an XLM-R-style SentencePiece vocabulary (the tokenizer
// of multilingual-e5): <s> <pad> </s> <unk>, then pieces with scores.
var unigramVocab = []string{"<s>", "<pad>", "</s>", "<unk>", "▁query", ":", "▁le", "▁chat", "▁the", "▁cat", "▁gato", "s", "▁"}

// unigramTokenizerJSON is a Unigram tokenizer.json as XLM-R exports have
// it (Metaspace pre-tokenizer, <s> … </s> by TemplateProcessing), without
// the Precompiled normalizer's binary charsmap.
func unigramTokenizerJSON() []byte {
	var vocab [][2]any
	for i, p := range unigramVocab {
		score := -float64(i)
		if i < 4 {
			score = 0
		}
		vocab = append(vocab, [2]any{p, score})
	}
	special := func(tok string, id int) map[string]any {
		return map[string]any{"id": id, "content": tok, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
	}
	tok := func(id string) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": id, "type_id": 0}}
	}
	tj := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil,
		"added_tokens":  []any{special("<s>", 0), special("<pad>", 1), special("</s>", 2), special("<unk>", 3)},
		"normalizer":    nil,
		"pre_tokenizer": map[string]any{"type": "Metaspace", "replacement": "▁", "add_prefix_space": true, "prepend_scheme": "always"},
		"post_processor": map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{tok("<s>"), map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, tok("</s>")},
			"pair":   []any{tok("<s>"), map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, tok("</s>"), tok("</s>"), map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 0}}, tok("</s>")},
			"special_tokens": map[string]any{
				"<s>":  map[string]any{"id": "<s>", "ids": []int{0}, "tokens": []string{"<s>"}},
				"</s>": map[string]any{"id": "</s>", "ids": []int{2}, "tokens": []string{"</s>"}},
			},
		},
		"decoder": map[string]any{"type": "Metaspace", "replacement": "▁", "add_prefix_space": true, "prepend_scheme": "always"},
		"model":   map[string]any{"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": false},
	}
	b, err := json.Marshal(tj)
	if err != nil {
		panic(err)
	}
	return b
}

// TestONNXUnigramTokenizer: an e5-style folder (SentencePiece Unigram
// tokenizer, query prompt) embeds the mean of the rows of <s>, the
// pieces and </s>.
func TestONNXUnigramTokenizer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "e5-tiny")
	rows := make([][]float32, len(unigramVocab))
	for i := range rows {
		rows[i] = onnxRow(i)
	}
	onnxtest.WriteFolder(t, dir, onnxtest.GatherModel(rows), onnxVocab, map[string]string{
		"config_sentence_transformers.json": `{"prompts": {"query": "query: ", "passage": ""}}`,
	})
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), unigramTokenizerJSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newTestONNX(t, dir, nil, nil)
	ctx := context.Background()
	id := func(p string) int { return slices.Index(unigramVocab, p) }
	mean := func(pieces ...string) []float32 {
		v := make([]float64, onnxDims)
		for _, p := range pieces {
			for k, x := range rows[id(p)] {
				v[k] += float64(x)
			}
		}
		var n float64
		for k := range v {
			n += v[k] * v[k]
		}
		out := make([]float32, onnxDims)
		for k := range v {
			out[k] = float32(v[k] / math.Sqrt(n))
		}
		return out
	}
	vs, err := m.Embed(ctx, []string{"le chat", "the cats"})
	if err != nil {
		t.Fatal(err)
	}
	assertVec(t, "le chat", vs[0], mean("<s>", "▁le", "▁chat", "</s>"))
	assertVec(t, "the cats", vs[1], mean("<s>", "▁the", "▁cat", "s", "</s>"))
	q, err := Query(ctx, m, "gato")
	if err != nil {
		t.Fatal(err)
	}
	assertVec(t, "query", q, mean("<s>", "▁query", ":", "▁gato", "</s>"))
}

// TestONNXSentenceEmbeddingOutput: a model whose output is already one
// vector per text ([batch, dims], here its first token's row) is taken
// as it is, normalised.
func TestONNXSentenceEmbeddingOutput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pooled")
	rows := onnxTable(nil)
	model := onnxtest.Graph(
		[][]byte{
			onnxtest.Node("Gather", []string{"embeddings", "input_ids"}, []string{"tokens"}, map[string]int{"axis": 0}),
			onnxtest.Node("Gather", []string{"tokens", "zero"}, []string{"sentence_embedding"}, map[string]int{"axis": 1}),
		},
		[][]byte{onnxtest.FloatTensor("embeddings", rows), onnxtest.Int64Scalar("zero", 0)},
		onnxtest.BertInputs(),
		[][]byte{onnxtest.ValueInfo("sentence_embedding", onnxtest.Float, "batch", onnxDims)},
	)
	writeONNXModel(t, dir, model, nil)
	m := newTestONNX(t, dir, nil, nil)
	vs, err := m.Embed(context.Background(), []string{"cat", "zebra stripes on a mat"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		assertVec(t, "first token", v, meanOf(rows, "[CLS]"))
	}
}
