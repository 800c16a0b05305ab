package search_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
	"github.com/loci-dev/loci/internal/vault"
)

// writeM2V writes a tiny Model2Vec folder: a WordPiece vocabulary whose
// rows put dwelling words, plant words and function words on three axes.
func writeM2V(t *testing.T, dir string, extra ...string) {
	t.Helper()
	axis := map[string]int{
		"house": 0, "home": 0, "live": 0, "cosy": 0,
		"garden": 1, "flower": 1, "##s": 1, "tomato": 1, "grow": 1,
		"we": 2, "in": 2, "a": 2, "the": 2,
	}
	vocab := append([]string{"[UNK]", "house", "home", "live", "cosy", "garden", "flower", "##s", "tomato", "grow", "we", "in", "a", "the"}, extra...)
	ids := map[string]int{}
	var data []byte
	for i, w := range vocab {
		ids[w] = i
		row := make([]float32, 4)
		if a, ok := axis[w]; ok {
			row[a] = 1
		} else {
			row[3] = 1
		}
		for _, x := range row {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
		}
	}
	hb, _ := json.Marshal(map[string]any{"embeddings": map[string]any{"dtype": "F32", "shape": []int{len(vocab), 4}, "data_offsets": []int{0, len(data)}}})
	st := append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(hb))), hb...), data...)
	tj, _ := json.Marshal(map[string]any{
		"normalizer":    map[string]any{"type": "BertNormalizer", "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": ids},
	})
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), tj, 0o644)
}

// useModel points the embedder at a model folder through the environment,
// over an empty user config (nothing of this machine's config leaks in).
func useModel(t *testing.T, provider, dir string) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(empty, nil, 0o644)
	t.Setenv("LOCI_CONFIG", empty)
	t.Setenv("LOCI_EMBED_PROVIDER", provider)
	t.Setenv("LOCI_EMBED_MODEL_PATH", dir)
}

// openIndexAt opens (without syncing) the index of the vault at root in dir.
func openIndexAt(t *testing.T, root, dir string) *index.Index {
	t.Helper()
	v, err := vault.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(context.Background(), v, index.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// wantByMeaningOnly: q finds nothing by its words, and want first in each
// of the modes.
func wantByMeaningOnly(t *testing.T, s *search.Searcher, q, want string, modes ...string) {
	t.Helper()
	ctx := context.Background()
	if lex, _ := s.Search(ctx, search.Query{Text: q, Mode: search.ModeLexical}); len(lex.Results) != 0 {
		t.Fatalf("%q: lexical should find nothing: %v", q, paths(lex))
	}
	for _, mode := range modes {
		r, err := s.Search(ctx, search.Query{Text: q, Mode: mode})
		if err != nil || len(r.Results) == 0 || r.Results[0].Path != want {
			t.Errorf("%q %s: %v %v, want %s first", q, mode, paths(r), err, want)
		}
	}
}

// TestModel2VecSearch: with embed.provider model2vec (from the
// environment), the index embeds with the user's model and a semantic
// search finds the note whose words share vectors with the query; a
// changed model is another identity and takes the mismatch path.
func TestModel2VecSearch(t *testing.T) {
	model := filepath.Join(t.TempDir(), "potion-tiny")
	writeM2V(t, model)
	useModel(t, "model2vec", model)

	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"Dwelling.md": "# Dwelling\n\nWe live in a cosy home.\n",
		"Plants.md":   "# Plants\n\nTomatoes grow in the garden.\n",
	})
	idxDir := filepath.Join(t.TempDir(), "idx")
	open := func() *index.Index { return openIndexAt(t, root, idxDir) }
	ix := open()
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	id, ok := ix.StoredIdentity(context.Background())
	if !ok || id.Provider != "model2vec" || !strings.HasPrefix(id.Model, "potion-tiny@") || id.Dims != 4 {
		t.Fatalf("stored identity %+v", id)
	}
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	for q, want := range map[string]string{"house": "Dwelling.md", "flowers": "Plants.md"} {
		wantByMeaningOnly(t, s, q, want, search.ModeSemantic)
	}
	ix.Close()

	// Another tokenizer.json is another model: the index refuses to mix.
	writeM2V(t, model, "extra")
	ix = open()
	defer ix.Close()
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); errs.Code(err) != errs.CodeEmbedMismatch || !strings.Contains(err.Error(), id.Model) {
		t.Errorf("changed model: %v", err)
	}
}

// TestModel2VecCrossLanguage: a multilingual static model (a SentencePiece
// Unigram tokenizer, as the multilingual potion models have, whose pieces
// for "cat", "chat" and "gato" share a row, as a multilingual model's
// vectors bring a word's translations together) finds an English note
// from a French or a Spanish query that shares no word with it.
func TestModel2VecCrossLanguage(t *testing.T) {
	model := filepath.Join(t.TempDir(), "potion-multi-tiny")
	pieces := []string{"<s>", "<pad>", "</s>", "<unk>", "▁", "▁the", "▁cat", "▁chat", "▁gato", "▁sleeps", "▁dort", "▁duerme", "▁el", "▁le",
		"▁tomato", "▁tomate", "▁grows", "▁pousse", "▁crece", "▁la", "s"}
	axis := map[string]int{"▁cat": 0, "▁chat": 0, "▁gato": 0, "▁sleeps": 0, "▁dort": 0, "▁duerme": 0,
		"▁tomato": 1, "▁tomate": 1, "▁grows": 1, "▁pousse": 1, "▁crece": 1}
	var vocab [][2]any
	var data []byte
	for i, p := range pieces {
		vocab = append(vocab, [2]any{p, -float64(i) / 10})
		row := make([]float32, 4)
		if a, ok := axis[p]; ok {
			row[a] = 1
		} else {
			row[3] = 1 // function words and the rest share one axis
		}
		for _, x := range row {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
		}
	}
	hb, _ := json.Marshal(map[string]any{"embeddings": map[string]any{"dtype": "F32", "shape": []int{len(pieces), 4}, "data_offsets": []int{0, len(data)}}})
	st := append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(hb))), hb...), data...)
	meta := map[string]any{"type": "Metaspace", "replacement": "▁", "add_prefix_space": true, "prepend_scheme": "always"}
	tj, _ := json.Marshal(map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": []any{},
		"normalizer": map[string]any{"type": "Lowercase"}, "pre_tokenizer": meta, "post_processor": nil, "decoder": meta,
		"model": map[string]any{"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": false},
	})
	os.MkdirAll(model, 0o755)
	os.WriteFile(filepath.Join(model, "model.safetensors"), st, 0o644)
	os.WriteFile(filepath.Join(model, "tokenizer.json"), tj, 0o644)
	useModel(t, "model2vec", model)

	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"Pets.md":   "# Pets\n\nThe cat sleeps.\n",
		"Garden.md": "# Garden\n\nThe tomato grows.\n",
	})
	ix := openIndexAt(t, root, filepath.Join(t.TempDir(), "idx"))
	defer ix.Close()
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	for q, want := range map[string]string{"le chat dort": "Pets.md", "el gato duerme": "Pets.md", "la tomate pousse": "Garden.md", "El tomate crece": "Garden.md"} {
		wantByMeaningOnly(t, s, q, want, search.ModeSemantic, search.ModeHybrid)
	}
}
