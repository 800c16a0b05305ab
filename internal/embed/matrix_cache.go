package embed

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// The matrix cache is a flat little-endian file the index keeps beside the
// database so that a new process (a CLI call, an MCP server's first query)
// loads every vector at once instead of decoding tens of thousands of
// SQLite BLOBs. It is derived data: the index rebuilds it when it is absent,
// damaged or stale.
//
// Every array starts at a multiple of 8 bytes from the start of the file,
// so that on a little-endian machine UnmarshalMatrix uses the vectors,
// chunk ids and note ids where they lie (the file read into memory, or
// memory-mapped by the index) instead of decoding a copy.
const matrixMagic = "LOCIMX03"

// MarshalBinary encodes the matrix; key identifies the index state it was
// built from (checked by UnmarshalMatrix).
func (m *Matrix) MarshalBinary(key string) []byte {
	n := 8 + 4 + len(key) + 4*4 + 7*16 + m.Dims*4
	n += len(m.f32)*4 + len(m.i8) + len(m.scale)*4 + len(m.Chunk)*8 + len(m.noteOf)*4 + len(m.Notes)*8 + len(m.common)*4
	if m.ann != nil {
		n += 2*16 + len(m.ann.lists)*4 + len(m.ann.centroids)*4
	}
	out := make([]byte, 0, n+64)
	out = append(out, matrixMagic...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(key)))
	out = append(out, key...)
	out = pad8(out)
	for _, v := range []int{m.Dims, m.Rows, len(m.Notes), boolInt(m.i8 != nil)} {
		out = binary.LittleEndian.AppendUint32(out, uint32(v))
	}
	// Each array: its length (u32), padding to 8, its elements.
	array := func(n int) {
		out = binary.LittleEndian.AppendUint32(out, uint32(n))
		out = pad8(out)
	}
	appendF32 := func(fs []float32) {
		array(len(fs))
		for _, f := range fs {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
		}
	}
	if m.i8 != nil {
		array(len(m.i8))
		for _, x := range m.i8 {
			out = append(out, byte(x))
		}
		appendF32(m.scale)
	} else {
		appendF32(m.f32)
	}
	array(len(m.Chunk))
	for _, c := range m.Chunk {
		out = binary.LittleEndian.AppendUint64(out, uint64(c))
	}
	array(len(m.noteOf))
	for _, d := range m.noteOf {
		out = binary.LittleEndian.AppendUint32(out, uint32(d))
	}
	array(len(m.Notes))
	for _, id := range m.Notes {
		out = binary.LittleEndian.AppendUint64(out, uint64(id))
	}
	appendF32(m.common)
	// The mean row and the total variance (rowMean), which every process
	// would otherwise compute over all the rows on its first query.
	mean, trace := m.rowMean()
	appendF32(mean)
	out = binary.LittleEndian.AppendUint64(out, math.Float64bits(trace))
	// The approximate index (empty arrays: none).
	var lists []int32
	var cent []float32
	if m.ann != nil {
		lists, cent = m.ann.lists, m.ann.centroids
	}
	array(len(lists))
	for _, v := range lists {
		out = binary.LittleEndian.AppendUint32(out, uint32(v))
	}
	appendF32(cent)
	return out
}

func pad8(b []byte) []byte {
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// littleEndian: the machine's byte order is the file's, so its arrays can
// be used where they lie.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// UnmarshalMatrix decodes a cache written by MarshalBinary for the same key.
// On a little-endian machine, when b is 8-byte aligned, the matrix's arrays
// are views of b, not copies: b must stay unchanged as long as the matrix
// is used (the index's memory-mapped cache file is never written in place).
func UnmarshalMatrix(b []byte, key string) (*Matrix, error) {
	bad := fmt.Errorf("embed: stale or damaged matrix cache")
	r := reader{b: b, inPlace: littleEndian && len(b) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 == 0}
	if string(r.take(8)) != matrixMagic {
		return nil, bad
	}
	if string(r.take(int(r.u32()))) != key {
		return nil, bad
	}
	r.align()
	m := &Matrix{Dims: int(r.u32()), Rows: int(r.u32())}
	notes, quant := int(r.u32()), r.u32() == 1
	if r.err || m.Dims <= 0 || m.Rows < 0 || notes < 0 || m.Rows > len(b) || notes > len(b) || m.Rows*m.Dims > len(b) {
		return nil, bad
	}
	if quant {
		raw := r.array(1)
		if raw != nil {
			m.i8 = unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw))
		}
		m.scale = r.f32s()
	} else {
		m.f32 = r.f32s()
		if len(m.f32) != m.Rows*m.Dims {
			return nil, bad
		}
	}
	m.Chunk = r.i64s()
	m.noteOf = r.i32s()
	m.Notes = r.i64s()
	m.common = r.f32s()
	mean := r.f32s()
	trace := math.Float64frombits(r.u64())
	lists := r.i32s()
	cent := r.f32s()
	if len(lists) > 0 || len(cent) > 0 {
		if !validIVF(lists, cent, m.Rows, m.Dims) {
			return nil, bad
		}
		m.ann = &ivf{lists: lists, centroids: cent}
	}
	if r.err || len(r.b) != 0 || len(m.Chunk) != m.Rows || len(m.noteOf) != m.Rows || len(m.Notes) != notes ||
		(quant && (len(m.i8) != m.Rows*m.Dims || len(m.scale) != m.Rows)) {
		return nil, bad
	}
	for _, d := range m.noteOf {
		if d < 0 || int(d) >= notes {
			return nil, bad
		}
	}
	if len(m.common) == 0 {
		m.common = nil
	} else if len(m.common) != m.Dims {
		return nil, bad
	}
	if len(mean) != m.Dims || !(trace > 0) {
		return nil, bad
	}
	m.meanOnce.Do(func() { m.mean, m.trace = mean, trace })
	if m.Rows == 0 {
		// As built: no rows, no arrays (a view of b would be empty, not nil).
		m.f32, m.i8, m.scale, m.Chunk, m.noteOf = nil, nil, nil, nil, nil
		if notes == 0 {
			m.Notes = nil
		}
	}
	return m, nil
}

// validIVF checks a stored index: list offsets from 0 to rows, never
// decreasing, and one centroid per list.
func validIVF(lists []int32, cent []float32, rows, dims int) bool {
	if len(lists) < 2 || lists[0] != 0 || int(lists[len(lists)-1]) != rows || len(cent) != (len(lists)-1)*dims {
		return false
	}
	for i := 1; i < len(lists); i++ {
		if lists[i] < lists[i-1] {
			return false
		}
	}
	return true
}

type reader struct {
	b       []byte
	off     int // bytes taken so far (alignment is from the start)
	err     bool
	inPlace bool // arrays are views of b (see UnmarshalMatrix)
}

func (r *reader) take(n int) []byte {
	if r.err || n < 0 || n > len(r.b) {
		r.err = true
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	r.off += n
	return out
}

// align skips the padding to the next multiple of 8.
func (r *reader) align() {
	if p := (8 - r.off%8) % 8; p > 0 {
		r.take(p)
	}
}

func (r *reader) u64() uint64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (r *reader) u32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// array reads an array's length and padding, and returns its bytes
// (elements of size bytes each).
func (r *reader) array(size int) []byte {
	n := int(r.u32())
	r.align()
	if r.err || n > len(r.b)/size {
		r.err = true
		return nil
	}
	return r.take(n * size)
}

func (r *reader) f32s() []float32 {
	raw := r.array(4)
	if raw == nil {
		return nil
	}
	if r.inPlace {
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw)/4)
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func (r *reader) i32s() []int32 {
	raw := r.array(4)
	if raw == nil {
		return nil
	}
	if r.inPlace {
		return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw)/4)
	}
	out := make([]int32, len(raw)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func (r *reader) i64s() []int64 {
	raw := r.array(8)
	if raw == nil {
		return nil
	}
	if r.inPlace {
		return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw)/8)
	}
	out := make([]int64, len(raw)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return out
}
