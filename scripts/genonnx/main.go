// Command genonnx writes a synthetic sentence-transformer folder of
// all-MiniLM-L6-v2's shape (6 layers, 384 wide, 12 heads, 1536 feed-forward,
// 30,522-token WordPiece vocabulary) with random weights, to measure what
// the onnx embedding provider costs on this machine without downloading a
// model. The vocabulary is the most frequent words of a Markdown folder
// plus their suffix pieces; the vectors mean nothing.
//
//	go run ./scripts/genonnx -corpus /path/to/vault -out /tmp/minilm-shape
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/embed/onnxtest"
)

func main() {
	corpus := flag.String("corpus", "", "folder of .md files for the vocabulary")
	out := flag.String("out", "", "folder to write")
	layers := flag.Int("layers", onnxtest.MiniLML6.Layers, "encoder layers")
	flag.Parse()
	if *out == "" {
		log.Fatal("-out is required")
	}
	shape := onnxtest.MiniLML6
	shape.Layers = *layers
	vocab := buildVocab(*corpus, shape.Vocab)
	if err := os.MkdirAll(filepath.Join(*out, "1_Pooling"), 0o755); err != nil {
		log.Fatal(err)
	}
	files := map[string][]byte{
		"model.onnx":                onnxtest.BertModel(shape, 1),
		"tokenizer.json":            onnxtest.TokenizerJSON(vocab),
		"1_Pooling/config.json":     []byte(fmt.Sprintf(`{"word_embedding_dimension": %d, "pooling_mode_mean_tokens": true}`, shape.Hidden)),
		"sentence_bert_config.json": []byte(`{"max_seq_length": 256, "do_lower_case": false}`),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("wrote %s: %d tokens, %d layers\n", *out, len(vocab), shape.Layers)
}

// buildVocab is [PAD] [UNK] [CLS] [SEP] [MASK], printable ASCII, the
// corpus's words by frequency, then suffix pieces, padded to n.
func buildVocab(corpus string, n int) []string {
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	for c := 33; c < 127; c++ {
		vocab = append(vocab, string(rune(c)))
	}
	count := map[string]int{}
	word := regexp.MustCompile(`[a-z]+`)
	if corpus != "" {
		filepath.WalkDir(corpus, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, w := range word.FindAllString(strings.ToLower(string(b)), -1) {
				count[w]++
			}
			return nil
		})
	}
	words := make([]string, 0, len(count))
	for w := range count {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if count[words[i]] != count[words[j]] {
			return count[words[i]] > count[words[j]]
		}
		return words[i] < words[j]
	})
	pieces := map[string]bool{}
	for _, w := range words {
		for i := 1; i < len(w); i++ {
			pieces["##"+w[i:]] = true
			pieces["##"+w[i:min(i+3, len(w))]] = true
		}
	}
	sortedPieces := make([]string, 0, len(pieces))
	for p := range pieces {
		sortedPieces = append(sortedPieces, p)
	}
	sort.Strings(sortedPieces)
	seen := map[string]bool{}
	for _, v := range vocab {
		seen[v] = true
	}
	for _, w := range append(words[:min(20000, len(words))], sortedPieces...) {
		if len(vocab) >= n {
			break
		}
		if !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	for len(vocab) < n {
		vocab = append(vocab, fmt.Sprintf("##pad%d", len(vocab)))
	}
	return vocab
}
