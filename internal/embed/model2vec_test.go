package embed

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
)

// testVocab is the synthetic WordPiece vocabulary: the id of a token is its
// index.
var testVocab = []string{
	"[UNK]", "[CLS]", "[SEP]", "the", "cat", "dog", "play", "##ing", "##s", "cafe",
	"!", ",", "中", "文", "un", "##able", "house", "home", "garden", "flower",
}

// testRow is the vector of id i: small integers and halves, exact in F16.
func testRow(i int) []float32 {
	return []float32{float32(i), float32(i%3) - 1, 0.5 * float32(i%4), 1}
}

func testTokenizerJSON(modelType string) []byte {
	vocab := map[string]int{}
	for i, t := range testVocab {
		vocab[t] = i
	}
	tj := map[string]any{
		"version":        "1.0",
		"added_tokens":   []any{},
		"normalizer":     map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": nil,
		"model":          map[string]any{"type": modelType, "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 12, "vocab": vocab},
	}
	b, _ := json.Marshal(tj)
	return b
}

// safetensorsFile encodes one tensor named name of the dtype (F32, F16 or
// BF16) with the rows, plus optional extra header fields.
func safetensorsFile(name, dtype string, rows [][]float32, meta map[string]string) []byte {
	var data []byte
	for _, r := range rows {
		for _, x := range r {
			switch dtype {
			case "F32":
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
			case "F16":
				data = binary.LittleEndian.AppendUint16(data, float32ToHalfExact(x))
			case "BF16":
				data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(x)>>16))
			}
		}
	}
	h := map[string]any{name: map[string]any{"dtype": dtype, "shape": []int{len(rows), len(rows[0])}, "data_offsets": []int{0, len(data)}}}
	if meta != nil {
		h["__metadata__"] = meta
	}
	hb, _ := json.Marshal(h)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hb)))
	return append(append(out, hb...), data...)
}

// float32ToHalfExact encodes a value that F16 holds exactly (normal range).
func float32ToHalfExact(x float32) uint16 {
	if x == 0 {
		return 0
	}
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	return sign | uint16(exp)<<10 | uint16(b>>13&0x3ff)
}

// writeModel writes a Model2Vec folder with the test vocabulary and rows.
func writeModel(t testing.TB, dir, dtype string) {
	t.Helper()
	rows := make([][]float32, len(testVocab))
	for i := range rows {
		rows[i] = testRow(i)
	}
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), safetensorsFile("embeddings", dtype, rows, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), testTokenizerJSON("WordPiece"), 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"model2vec","normalize":true}`), 0o644)
}

func ids(toks ...string) []int32 {
	var out []int32
	for _, t := range toks {
		out = append(out, int32(slices.Index(testVocab, t)))
	}
	return out
}

// TestWordPiece: the ids match a hand tokenisation: lowercase, accents
// stripped, punctuation split off, ## pieces, CJK ideographs split,
// control characters dropped, unknown and overlong words one [UNK].
func TestWordPiece(t *testing.T) {
	wp, err := parseWordPiece(testTokenizerJSON("WordPiece"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []int32
	}{
		{"The cats, playing!", ids("the", "cat", "##s", ",", "play", "##ing", "!")},
		{"Café", ids("cafe")},
		{"CAFÉ\tdog", ids("cafe", "dog")},
		{"中文dog", ids("中", "文", "dog")},
		{"unable", ids("un", "##able")},
		{"unzzz dog", ids("[UNK]", "dog")},             // a word not covered is one [UNK], not "un" + [UNK]
		{"the\u200bcat", ids("[UNK]")},                 // U+200B (Cf) is dropped: "thecat" is one unknown word
		{"the\u00a0cat", ids("the", "cat")},            // a no-break space separates
		{"dogdogdogdogdog", ids("[UNK]")},              // 15 chars > max_input_chars_per_word 12
		{"homes", ids("home", "##s")},                  // longest match first
		{"", nil},                                      // nothing
		{"\x00\x01 \ufffd", nil},                       // control characters only
		{"garden\xff flower", ids("garden", "flower")}, // an invalid byte is dropped (U+FFFD), not a word
		{"garden\xffflower", ids("[UNK]")},             // ... so the two sides join into one (unknown) word
	} {
		got := wp.tokenize(c.text, nil)
		if !slices.Equal(got, c.want) {
			t.Errorf("tokenize(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if wp.medianTokenLen != 4 { // 20 tokens of 1 to 6 characters: the 10th and 11th are 4
		t.Errorf("median token length %d, want 4", wp.medianTokenLen)
	}
}

// TestModel2VecVector: the vector is the L2-normalised mean of the rows of
// the known tokens (unknown ones dropped), for F32 and F16 tables alike.
func TestModel2VecVector(t *testing.T) {
	want := func(toks ...string) []float32 {
		v := make([]float32, 4)
		for _, id := range ids(toks...) {
			for d, x := range testRow(int(id)) {
				v[d] += x / float32(len(toks))
			}
		}
		return Normalize(v)
	}
	var idents []Identity
	for _, dtype := range []string{"F32", "F16", "BF16"} {
		dir := filepath.Join(t.TempDir(), "potion-test")
		writeModel(t, dir, dtype)
		m, err := NewModel2Vec(dir)
		if err != nil {
			t.Fatal(dtype, err)
		}
		idents = append(idents, m.Identity())
		texts := []string{"The cats, playing!", "zzz garden", "zzz", "中文"}
		vs, err := m.Embed(context.Background(), texts)
		if err != nil || len(vs) != len(texts) {
			t.Fatal(err)
		}
		for i, w := range [][]float32{
			want("the", "cat", "##s", ",", "play", "##ing", "!"),
			want("garden"), // the [UNK] of zzz is dropped, not averaged in
			{0, 0, 0, 0},   // no known token: zeros
			want("中", "文"),
		} {
			for d := range w {
				if math.Abs(float64(vs[i][d]-w[d])) > 1e-6 {
					t.Errorf("%s %q: %v, want %v", dtype, texts[i], vs[i], w)
					break
				}
			}
		}
		if u := m.Usage(); u.Texts != 4 || u.Tokens != 7+1+0+2 {
			t.Errorf("%s usage %+v", dtype, u)
		}
		// A batch large enough to run on every core gives the same vectors.
		big := make([]string, 200)
		for i := range big {
			big[i] = texts[i%len(texts)]
		}
		bv, err := m.Embed(context.Background(), big)
		if err != nil || !slices.Equal(bv[0], vs[0]) || !slices.Equal(bv[199], vs[3]) {
			t.Errorf("%s: the big batch differs", dtype)
		}
	}
	id := idents[0]
	if id.Provider != "model2vec" || id.Dims != 4 || !strings.HasPrefix(id.Model, "potion-test@") || len(id.Model) != len("potion-test@")+12 {
		t.Errorf("identity %+v", id)
	}
	// The table's header is part of the identity: another dtype is another model.
	if idents[0] == idents[1] || idents[1] == idents[2] {
		t.Errorf("identities of F32/F16/BF16 tables must differ: %v", idents)
	}
}

// TestModel2VecRefusals: a missing folder, missing files, another kind of
// tokenizer, a vocabulary larger than the table and a quantized model are
// embedding_unavailable, naming the folder.
func TestModel2VecRefusals(t *testing.T) {
	check := func(name, dir, want string) {
		t.Helper()
		_, err := NewModel2Vec(dir)
		if errs.Code(err) != CodeUnavailable || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (want %q)", name, err, want)
		}
	}
	check("no path", "", "embed.model_path")
	check("missing folder", filepath.Join(t.TempDir(), "nope"), "missing model.safetensors")

	dir := filepath.Join(t.TempDir(), "m")
	writeModel(t, dir, "F32")
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), testTokenizerJSON("Unigram"), 0o644)
	// A Unigram or BPE model with a WordPiece vocabulary map is damaged:
	// the library's failure is an error, not a crash.
	check("unigram with a map vocab", dir, `tokenizer.json: the tokenizer library failed on it`)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), testTokenizerJSON("BPE"), 0o644)
	check("bpe without merges", dir, `tokenizer.json: the tokenizer library failed on it`)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model": {"type": "Nonesuch"}}`), 0o644)
	check("unknown model", dir, `tokenizer.json`)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`[1, 2`), 0o644)
	check("not JSON", dir, `tokenizer.json`)

	dir = filepath.Join(t.TempDir(), "m")
	writeModel(t, dir, "F32")
	os.WriteFile(filepath.Join(dir, "model.safetensors"), safetensorsFile("embeddings", "F32", [][]float32{{1, 2}, {3, 4}}, nil), 0o644)
	check("short table", dir, "has 2 rows")
	rows := make([][]float32, len(testVocab))
	for i := range rows {
		rows[i] = testRow(i)
	}
	st := safetensorsFile("embeddings", "F32", rows, nil)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), st[:len(st)-3], 0o644)
	check("truncated", dir, "outside the")
	os.WriteFile(filepath.Join(dir, "model.safetensors"), safetensorsFile("mapping", "F32", rows, nil), 0o644)
	check("quantized", dir, `"mapping" tensor`)
}

// TestSafetensorsHostile: lying, truncated and oversized files are errors
// before any large allocation.
func TestSafetensorsHostile(t *testing.T) {
	good := safetensorsFile("embeddings", "F32", [][]float32{{1, 2}, {3, 4}}, map[string]string{"format": "pt"})
	hb := func(h string) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), append([]byte(h), make([]byte, 16)...)...)
	}
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"empty":        {nil, "too short"},
		"huge header":  {binary.LittleEndian.AppendUint64(nil, 1<<40), "larger than the"},
		"header > len": {binary.LittleEndian.AppendUint64(nil, 100), "longer than the file"},
		"not json":     {hb("[1,2]"), "not a JSON object"},
		"bad entry":    {hb(`{"embeddings":3}`), `tensor "embeddings"`},
		"lying end":    {hb(`{"embeddings":{"dtype":"F32","shape":[1,4],"data_offsets":[0,9999]}}`), "outside the 16 data bytes"},
		"reversed":     {hb(`{"embeddings":{"dtype":"F32","shape":[1,4],"data_offsets":[8,0]}}`), "outside"},
		"shape lies":   {hb(`{"embeddings":{"dtype":"F32","shape":[1000,1000],"data_offsets":[0,16]}}`), "span 16"},
		"negative":     {hb(`{"embeddings":{"dtype":"F32","shape":[-1,-4],"data_offsets":[0,16]}}`), "2-D table"},
		"1-D":          {hb(`{"embeddings":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`), "2-D table"},
		"int dtype":    {hb(`{"embeddings":{"dtype":"I64","shape":[1,2],"data_offsets":[0,16]}}`), "supported: F32, F16, BF16"},
		"nan":          {safetensorsFile("embeddings", "F32", [][]float32{{float32(math.NaN())}}, nil), "NaN"},
		"two, no name": {hb(`{"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1,1],"data_offsets":[4,8]}}`), `no tensor named "embeddings"`},
	} {
		p := filepath.Join(t.TempDir(), "model.safetensors")
		os.WriteFile(p, c.data, 0o644)
		_, _, err := readEmbeddingTable(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (want %q)", name, err, c.want)
		}
	}
	p := filepath.Join(t.TempDir(), "model.safetensors")
	os.WriteFile(p, good, 0o644)
	tab, raw, err := readEmbeddingTable(p)
	if err != nil || tab.rows != 2 || tab.cols != 2 || !slices.Equal(tab.data, []float32{1, 2, 3, 4}) || !bytes.Contains(raw, []byte("__metadata__")) {
		t.Fatalf("good file: %+v %v", tab, err)
	}
}

// TestHalf: F16 bit patterns, including subnormals and infinities.
func TestHalf(t *testing.T) {
	for bits, want := range map[uint16]float32{
		0x3C00: 1, 0xC000: -2, 0x3800: 0.5, 0x7BFF: 65504, 0x0001: float32(math.Ldexp(1, -24)),
		0x0200: float32(math.Ldexp(1, -15)), 0x8000: float32(math.Copysign(0, -1)), 0x7C00: float32(math.Inf(1)),
	} {
		if got := halfToFloat32(bits); got != want || math.Signbit(float64(got)) != math.Signbit(float64(want)) {
			t.Errorf("half %#04x = %v, want %v", bits, got, want)
		}
	}
	if !math.IsNaN(float64(halfToFloat32(0x7E00))) {
		t.Error("0x7E00 must be NaN")
	}
}

// FuzzSafetensors: no input panics or allocates beyond the file's size.
func FuzzSafetensors(f *testing.F) {
	f.Add(safetensorsFile("embeddings", "F16", [][]float32{{1, 2}, {3, 4}}, nil))
	f.Add(safetensorsFile("x", "BF16", [][]float32{{1}}, map[string]string{"a": "b"}))
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		raw, entries, err := safetensorsHeader(r, int64(len(data)))
		if err != nil {
			return
		}
		for name, e := range entries {
			if tab, err := readTensor2D(r, int64(len(raw)), name, e); err == nil && len(tab.data)*2 > len(data) {
				t.Fatalf("%d floats from %d bytes", len(tab.data), len(data))
			}
		}
	})
}

// TestResolveModel2Vec: provider model2vec takes its folder from
// LOCI_EMBED_MODEL_PATH or the user's config (relative to that file); a
// vault's own config may not name one.
func TestResolveModel2Vec(t *testing.T) {
	home, vaultDir := t.TempDir(), t.TempDir()
	writeModel(t, filepath.Join(home, "models", "potion"), "F32")
	user := filepath.Join(home, "config.yaml")
	os.WriteFile(user, []byte("embed:\n  provider: model2vec\n  model_path: models/potion\n"), 0o644)
	t.Setenv("LOCI_CONFIG", user)
	s, err := Resolve(vaultDir)
	if err != nil || s.Provider != "model2vec" || s.ModelPath != filepath.Join(home, "models", "potion") {
		t.Fatalf("user config: %+v %v", s, err)
	}
	p, err := New(s)
	if err != nil || p.Identity().Provider != "model2vec" || p.Identity().Dims != 4 {
		t.Fatalf("New: %v %v", p, err)
	}
	t.Setenv("LOCI_EMBED_MODEL_PATH", filepath.Join(home, "elsewhere"))
	if s, _ := Resolve(vaultDir); s.ModelPath != filepath.Join(home, "elsewhere") {
		t.Errorf("env: %+v", s)
	} else if _, err := New(s); errs.Code(err) != CodeUnavailable || !strings.Contains(err.Error(), "elsewhere") {
		t.Errorf("a folder without a model: %v", err)
	}

	// A vault's own file may choose model2vec but not the folder.
	os.WriteFile(user, nil, 0o644)
	t.Setenv("LOCI_EMBED_MODEL_PATH", "")
	os.MkdirAll(filepath.Join(vaultDir, ".loci"), 0o755)
	os.WriteFile(filepath.Join(vaultDir, ".loci", "config.yaml"), []byte("embed:\n  provider: model2vec\n  model_path: /etc\n"), 0o644)
	if _, err := Resolve(vaultDir); errs.Code(err) != errs.CodeConfigInvalid || !strings.Contains(err.Error(), "may only be set in your own config") {
		t.Errorf("vault model_path: %v", err)
	}
	os.WriteFile(filepath.Join(vaultDir, ".loci", "config.yaml"), []byte("embed:\n  provider: model2vec\n"), 0o644)
	s, err = Resolve(vaultDir)
	if err != nil || s.Provider != "model2vec" || s.ModelPath != "" {
		t.Fatalf("vault provider: %+v %v", s, err)
	}
	if _, err := New(s); errs.Code(err) != CodeUnavailable || !strings.Contains(err.Error(), "LOCI_EMBED_MODEL_PATH") {
		t.Errorf("no folder: %v", err)
	}
}

// TestNormalizeASCII: the ASCII fast path agrees with the general one.
func TestNormalizeASCII(t *testing.T) {
	wp, err := parseWordPiece(testTokenizerJSON("WordPiece"))
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for c := 0; c < 0x80; c++ {
		all = append(all, byte(c))
	}
	for _, s := range []string{string(all), "The Cats,\tPlaying!\r\n\v\f x", ""} {
		slow := wp.normalize(s + "é") // not ASCII: the general path
		if fast := wp.normalizeASCII(s); fast+"e" != slow {
			t.Errorf("%q: fast %q, general %q", s, fast, slow)
		}
	}
}

// TestModel2VecUnigram: a folder with a SentencePiece Unigram tokenizer
// (XLM-R style: Metaspace pre-tokenizer, <s> … </s> added by its
// post-processor) embeds, as Model2Vec does, the mean of its pieces' rows
// without special tokens, unknown pieces dropped; several workers at once
// give the same vectors.
func TestModel2VecUnigram(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "potion-multi-tiny")
	rows := make([][]float32, len(unigramVocab))
	for i := range rows {
		rows[i] = testRow(i + 1)
	}
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), safetensorsFile("embeddings", "F32", rows, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), unigramTokenizerJSON(), 0o644)
	m, err := NewModel2Vec(dir)
	if err != nil {
		t.Fatal(err)
	}
	mean := func(pieces ...string) []float32 {
		v := make([]float32, len(rows[0]))
		for _, p := range pieces {
			for k, x := range rows[slices.Index(unigramVocab, p)] {
				v[k] += x / float32(len(pieces))
			}
		}
		return Normalize(v)
	}
	texts := []string{"le chat", "the cats", "le ☃ chat"}
	// "☃" is no piece: Metaspace makes it "▁☃", which is the piece "▁"
	// and the unknown "☃", dropped.
	want := [][]float32{mean("▁le", "▁chat"), mean("▁the", "▁cat", "s"), mean("▁le", "▁", "▁chat")}
	var many []string
	for range 40 {
		many = append(many, texts...)
	}
	vs, err := m.Embed(context.Background(), many)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		w := want[i%len(texts)]
		for k := range w {
			if math.Abs(float64(v[k]-w[k])) > 1e-6 {
				t.Fatalf("%q: %v, want %v", many[i], v, w)
			}
		}
	}
	if id := m.Identity(); id.Provider != "model2vec" || id.Dims != len(rows[0]) {
		t.Errorf("identity %+v", id)
	}
}
