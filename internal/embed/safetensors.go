package embed

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// A safetensors file (https://github.com/huggingface/safetensors) is an
// 8-byte little-endian header length N, N bytes of JSON mapping tensor
// names to {dtype, shape, data_offsets} (offsets relative to the end of the
// header), then the raw little-endian tensor bytes. The reader is
// hand-rolled (~100 lines, no dependency) so that every bound is ours: the
// header is capped, the offsets must lie inside the file, and shape × dtype
// size must equal the byte length before anything the size of the tensor
// is allocated.

// Bounds of a model file.
const (
	maxSafetensorsHeader = 16 << 20 // bytes of JSON header
	maxSafetensorsFile   = 8 << 30  // bytes of a whole file
)

// safetensorsEntry is one tensor of the header.
type safetensorsEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// tensor2D is a 2-D tensor read as float32, row-major.
type tensor2D struct {
	name       string
	dtype      string
	rows, cols int
	data       []float32
}

// safetensorsHeader reads and validates the header of r (size bytes long):
// the raw JSON (for the model's identity) and its entries.
func safetensorsHeader(r io.ReaderAt, size int64) ([]byte, map[string]safetensorsEntry, error) {
	if size < 8 {
		return nil, nil, fmt.Errorf("%d bytes: too short for a safetensors file", size)
	}
	if size > maxSafetensorsFile {
		return nil, nil, fmt.Errorf("%d bytes: larger than the %d-byte limit", size, int64(maxSafetensorsFile))
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, nil, fmt.Errorf("reading the header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxSafetensorsHeader {
		return nil, nil, fmt.Errorf("header of %d bytes: larger than the %d-byte limit", n, maxSafetensorsHeader)
	}
	if int64(n) > size-8 {
		return nil, nil, fmt.Errorf("header of %d bytes: longer than the file", n)
	}
	raw := make([]byte, n)
	if _, err := r.ReadAt(raw, 8); err != nil {
		return nil, nil, fmt.Errorf("reading the header: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, nil, fmt.Errorf("the header is not a JSON object: %v", err)
	}
	dataLen := size - 8 - int64(n)
	entries := make(map[string]safetensorsEntry, len(fields))
	for name, v := range fields {
		if name == "__metadata__" {
			continue
		}
		var e safetensorsEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %v", name, err)
		}
		if len(e.DataOffsets) != 2 || e.DataOffsets[0] < 0 || e.DataOffsets[1] < e.DataOffsets[0] || e.DataOffsets[1] > dataLen {
			return nil, nil, fmt.Errorf("tensor %q: data_offsets %v outside the %d data bytes", name, e.DataOffsets, dataLen)
		}
		entries[name] = e
	}
	return raw, entries, nil
}

// dtypeSize is the byte size of the element types read here.
func dtypeSize(dtype string) int64 {
	switch dtype {
	case "F32":
		return 4
	case "F16", "BF16":
		return 2
	}
	return 0
}

// readTensor2D reads the named 2-D tensor of r as float32, after checking
// its type, shape and byte length.
func readTensor2D(r io.ReaderAt, headerLen int64, name string, e safetensorsEntry) (*tensor2D, error) {
	es := dtypeSize(e.DType)
	if es == 0 {
		return nil, fmt.Errorf("tensor %q has dtype %s; supported: F32, F16, BF16", name, e.DType)
	}
	if len(e.Shape) != 2 || e.Shape[0] <= 0 || e.Shape[1] <= 0 {
		return nil, fmt.Errorf("tensor %q has shape %v; a 2-D table (vocabulary × dimensions) is needed", name, e.Shape)
	}
	rows, cols := e.Shape[0], e.Shape[1]
	if rows > math.MaxInt32 || cols > 1<<16 {
		return nil, fmt.Errorf("tensor %q has shape %v: too large", name, e.Shape)
	}
	want := rows * cols * es // cannot overflow: rows < 2^31, cols ≤ 2^16, es ≤ 4
	if got := e.DataOffsets[1] - e.DataOffsets[0]; got != want {
		return nil, fmt.Errorf("tensor %q: shape %v of %s is %d bytes, data_offsets span %d", name, e.Shape, e.DType, want, got)
	}
	t := &tensor2D{name: name, dtype: e.DType, rows: int(rows), cols: int(cols), data: make([]float32, rows*cols)}
	const chunk = 1 << 20
	buf := make([]byte, chunk)
	off := 8 + headerLen + e.DataOffsets[0]
	for i := 0; i < len(t.data); {
		n := min(int64(len(t.data)-i)*es, chunk)
		b := buf[:n]
		if _, err := r.ReadAt(b, off); err != nil {
			return nil, fmt.Errorf("reading tensor %q: %w", name, err)
		}
		off += n
		switch e.DType {
		case "F32":
			for j := 0; j < len(b); j += 4 {
				t.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[j:]))
				i++
			}
		case "F16":
			for j := 0; j < len(b); j += 2 {
				t.data[i] = halfToFloat32(binary.LittleEndian.Uint16(b[j:]))
				i++
			}
		case "BF16":
			for j := 0; j < len(b); j += 2 {
				t.data[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[j:])) << 16)
				i++
			}
		}
	}
	for _, x := range t.data {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("tensor %q holds NaN or infinite values", name)
		}
	}
	return t, nil
}

// halfToFloat32 converts an IEEE 754 half-precision value.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: renormalize
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// readEmbeddingTable opens a safetensors file and reads its embedding
// table: the tensor "embeddings" (Model2Vec), else "embedding.weight"
// (sentence-transformers StaticEmbedding), else the only tensor of the
// file. It returns the raw header too.
func readEmbeddingTable(path string) (*tensor2D, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("not a regular file")
	}
	raw, entries, err := safetensorsHeader(f, st.Size())
	if err != nil {
		return nil, nil, err
	}
	for _, n := range []string{"weights", "mapping"} {
		if _, ok := entries[n]; ok {
			return nil, nil, fmt.Errorf("the file holds a %q tensor (a vocabulary-quantized or weighted Model2Vec model): not supported; use a plain model such as potion-base-8M", n)
		}
	}
	var name string
	for _, n := range []string{"embeddings", "embedding.weight"} {
		if _, ok := entries[n]; ok {
			name = n
			break
		}
	}
	if name == "" {
		if len(entries) != 1 {
			names := make([]string, 0, len(entries))
			for n := range entries {
				names = append(names, n)
			}
			sort.Strings(names)
			if len(names) > 8 {
				names = append(names[:8], "...")
			}
			return nil, nil, fmt.Errorf("no tensor named \"embeddings\" among %d tensors %q", len(entries), names)
		}
		for n := range entries {
			name = n
		}
	}
	t, err := readTensor2D(f, int64(len(raw)), name, entries[name])
	if err != nil {
		return nil, nil, err
	}
	return t, raw, nil
}
