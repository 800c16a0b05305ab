package search_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/embed/onnxtest"
	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/search"
	"github.com/loci-dev/loci/internal/testutil"
)

// writeTinyTransformer writes an ONNX sentence-transformer folder whose
// token embeddings put cat words, zebra words and everything else on three
// axes, with e5-style prompts.
func writeTinyTransformer(t *testing.T, dir string) {
	t.Helper()
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "query", "passage", ":",
		"cat", "kitten", "feline", "zebra", "stripes", "savanna", "the", "sat", "on", "a", "mat", "in"}
	axis := map[string]int{"cat": 0, "kitten": 0, "feline": 0, "zebra": 1, "stripes": 1, "savanna": 1}
	rows := make([][]float32, len(vocab))
	for i, w := range vocab {
		rows[i] = make([]float32, 4)
		if a, ok := axis[w]; ok {
			rows[i][a] = 4
		} else {
			rows[i][3] = 0.1
		}
	}
	onnxtest.WriteFolder(t, dir, onnxtest.GatherModel(rows), vocab, map[string]string{
		"config_sentence_transformers.json": `{"prompts": {"query": "query: ", "passage": "passage: "}}`,
		"1_Pooling/config.json":             `{"word_embedding_dimension": 4, "pooling_mode_mean_tokens": true}`,
	})
}

// TestONNXSearch: with embed.provider onnx, the index embeds with the
// user's ONNX model (documents with the folder's passage prompt) and a
// semantic search finds the note by a word only the vectors relate; a
// changed prefix is another identity and takes the mismatch path.
func TestONNXSearch(t *testing.T) {
	model := filepath.Join(t.TempDir(), "tiny-e5")
	writeTinyTransformer(t, model)
	useModel(t, "onnx", model)

	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{
		"Pets.md":    "# Pets\n\nThe kitten sat on a mat.\n",
		"Savanna.md": "# Wildlife\n\nStripes in the savanna.\n",
	})
	idxDir := filepath.Join(t.TempDir(), "idx")
	open := func() *index.Index { return openIndexAt(t, root, idxDir) }
	ix := open()
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	id, ok := ix.StoredIdentity(context.Background())
	if !ok || id.Provider != "onnx" || !strings.HasPrefix(id.Model, "tiny-e5@") || id.Dims != 4 {
		t.Fatalf("stored identity %+v", id)
	}
	s := &search.Searcher{DB: ix.DB, Vectors: ix}
	for q, want := range map[string]string{"feline": "Pets.md", "zebra": "Savanna.md"} {
		wantByMeaningOnly(t, s, q, want, search.ModeSemantic)
	}
	ix.Close()

	// Another document prefix is another identity: the index refuses to mix.
	t.Setenv("LOCI_EMBED_DOCUMENT_PREFIX", "search_document: ")
	ix = open()
	defer ix.Close()
	if _, err := ix.Sync(context.Background(), index.SyncOptions{}); errs.Code(err) != errs.CodeEmbedMismatch || !strings.Contains(err.Error(), id.Model) {
		t.Errorf("changed prefix: %v", err)
	}
}
