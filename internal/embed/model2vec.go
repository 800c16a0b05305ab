package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/loci-dev/loci/internal/errs"
)

// Model2Vec is a static embedding model distilled by Model2Vec
// (github.com/MinishLab/model2vec) from a sentence transformer, read from a
// folder the user brings: model.safetensors (the table, one row per
// vocabulary id) and tokenizer.json (WordPiece; Unigram, BPE or WordLevel
// through hfTokenizer), optionally config.json.
// A text's vector is, as in Model2Vec's StaticModel.encode: tokenize
// without special tokens, drop unknown tokens, keep the first 512 ids, take
// the mean of their rows, L2-normalise. No network, no cgo; a table
// lookup per token.
type Model2Vec struct {
	id    Identity
	table *tensor2D
	tok   m2vTokenizer
	u     usage
}

// Bounds and defaults of a Model2Vec folder.
const (
	maxTokenizerJSON = 256 << 20 // bytes of tokenizer.json
	// m2vMaxTokens is StaticModel.encode's default max_length.
	m2vMaxTokens = 512
)

// m2vCache keeps loaded models by folder, size and modification time of
// their files: loading potion-base-8M takes ~0.1 s and 30 MB, and a
// process may build several providers for one vault.
var (
	m2vMu    sync.Mutex
	m2vCache = map[string]*Model2Vec{}
)

// NewModel2Vec loads the Model2Vec model in dir. A folder that is missing,
// incomplete, damaged or of an unsupported kind is embedding_unavailable,
// with the path and the reason.
func NewModel2Vec(dir string) (*Model2Vec, error) {
	if dir == "" {
		return nil, errs.New(CodeUnavailable, "embed.provider is model2vec but no model folder is set: set embed.model_path in your own config (or LOCI_EMBED_MODEL_PATH) to a folder holding model.safetensors and tokenizer.json")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, errs.Wrap(err, CodeUnavailable, "invalid Model2Vec model folder").With("model_path", dir)
	}
	stPath, tjPath := filepath.Join(abs, "model.safetensors"), filepath.Join(abs, "tokenizer.json")
	key := abs
	for _, p := range []string{stPath, tjPath} {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, m2vError(abs, "missing "+filepath.Base(p)+" (a Model2Vec folder holds model.safetensors and tokenizer.json)", err)
		}
		key += fmt.Sprintf("|%d|%d", fi.Size(), fi.ModTime().UnixNano())
	}
	m2vMu.Lock()
	defer m2vMu.Unlock()
	if m, ok := m2vCache[key]; ok {
		return m, nil
	}
	m, err := loadModel2Vec(abs, stPath, tjPath)
	if err != nil {
		return nil, err
	}
	if len(m2vCache) >= 4 {
		clear(m2vCache)
	}
	m2vCache[key] = m
	return m, nil
}

func m2vError(dir, reason string, cause error) error {
	msg := "the Model2Vec model in " + dir + " cannot be used: " + reason
	var e *errs.Error
	if cause != nil {
		e = errs.Wrap(cause, CodeUnavailable, msg) // Error() appends the cause
	} else {
		e = errs.New(CodeUnavailable, "%s", msg)
	}
	return e.With("model_path", dir)
}

func loadModel2Vec(dir, stPath, tjPath string) (*Model2Vec, error) {
	tjRaw, err := readCapped(tjPath, maxTokenizerJSON)
	if err != nil {
		return nil, m2vError(dir, "tokenizer.json", err)
	}
	tok, err := parseM2VTokenizer(tjRaw)
	if err != nil {
		return nil, m2vError(dir, "tokenizer.json", err)
	}
	table, header, err := readEmbeddingTable(stPath)
	if err != nil {
		return nil, m2vError(dir, "model.safetensors", err)
	}
	if mx := tok.maxID(); int(mx) >= table.rows {
		return nil, m2vError(dir, fmt.Sprintf("tokenizer.json has token id %d but model.safetensors has %d rows", mx, table.rows), nil)
	}
	h := sha256.New()
	h.Write(header)
	h.Write(tjRaw)
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	return &Model2Vec{
		id:    Identity{Provider: "model2vec", Model: filepath.Base(dir) + "@" + sum, Dims: table.cols},
		table: table,
		tok:   tok,
	}, nil
}

// readCapped reads a file of at most limit bytes.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than the %d-byte limit", limit)
	}
	return b, nil
}

// Identity is model2vec, the folder's name with a hash of the table's
// header and of tokenizer.json (a changed model changes it), and the
// table's width.
func (m *Model2Vec) Identity() Identity { return m.id }

func (m *Model2Vec) Usage() Usage { return m.u.snapshot() }

// Embed encodes the texts, on all cores for a large batch.
func (m *Model2Vec) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var tokens int64
	var mu sync.Mutex
	run := func(idx <-chan int) {
		var ids []int32
		var n int64
		for i := range idx {
			if ctx.Err() != nil {
				break
			}
			out[i], ids = m.encode(texts[i], ids[:0])
			n += int64(len(ids))
		}
		mu.Lock()
		tokens += n
		mu.Unlock()
	}
	next := make(chan int, len(texts))
	for i := range texts {
		next <- i
	}
	close(next)
	workers := runtime.GOMAXPROCS(0)
	if len(texts) < 64 {
		workers = 1
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); run(next) }()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.u.requests.Add(1)
	m.u.texts.Add(int64(len(texts)))
	m.u.tokens.Add(tokens)
	return out, nil
}

// encode is one text's vector (all zeros when it has no known token) and
// the ids it used.
func (m *Model2Vec) encode(text string, ids []int32) ([]float32, []int32) {
	// StaticModel.tokenize cuts the text to max_length × the median token
	// length in characters first (it bounds the work on a huge text).
	if limit := m2vMaxTokens * max(m.tok.medianLen(), 1); len(text) > limit {
		n := 0
		for i := range text {
			if n == limit {
				text = text[:i]
				break
			}
			n++
		}
	}
	ids = m.tok.tokenize(text, ids)
	kept := ids[:0]
	for _, id := range ids {
		if id != m.tok.unk() {
			kept = append(kept, id)
		}
	}
	if len(kept) > m2vMaxTokens {
		kept = kept[:m2vMaxTokens]
	}
	cols := m.table.cols
	v := make([]float32, cols)
	for _, id := range kept {
		row := m.table.data[int(id)*cols : int(id+1)*cols]
		for d, x := range row {
			v[d] += x
		}
	}
	if len(kept) > 0 {
		inv := 1 / float32(len(kept))
		for d := range v {
			v[d] *= inv
		}
	}
	return Normalize(v), kept
}
