package embed

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// The matrix cache is a flat little-endian file the index keeps beside the
// database so that a new process (a CLI call, an MCP server's first query)
// loads every vector in one read instead of decoding tens of thousands of
// SQLite BLOBs. It is derived data: the index rebuilds it when it is absent,
// damaged or stale.
const matrixMagic = "LOCIMX01"

// MarshalBinary encodes the matrix; key identifies the index state it was
// built from (checked by UnmarshalMatrix).
func (m *Matrix) MarshalBinary(key string) []byte {
	n := 8 + 4 + len(key) + 4*4
	n += len(m.f32)*4 + len(m.i8) + len(m.scale)*4 + len(m.Chunk)*8 + len(m.noteOf)*4 + len(m.Notes)*8 + len(m.common)*4
	out := make([]byte, 0, n+64)
	out = append(out, matrixMagic...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(key)))
	out = append(out, key...)
	for _, v := range []int{m.Dims, m.Rows, len(m.Notes), boolInt(m.i8 != nil)} {
		out = binary.LittleEndian.AppendUint32(out, uint32(v))
	}
	appendF32 := func(fs []float32) {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(fs)))
		for _, f := range fs {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
		}
	}
	if m.i8 != nil {
		for _, x := range m.i8 {
			out = append(out, byte(x))
		}
		appendF32(m.scale)
	} else {
		appendF32(m.f32)
	}
	for _, c := range m.Chunk {
		out = binary.LittleEndian.AppendUint64(out, uint64(c))
	}
	for _, d := range m.noteOf {
		out = binary.LittleEndian.AppendUint32(out, uint32(d))
	}
	for _, id := range m.Notes {
		out = binary.LittleEndian.AppendUint64(out, uint64(id))
	}
	appendF32(m.common)
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// UnmarshalMatrix decodes a cache written by MarshalBinary for the same key.
func UnmarshalMatrix(b []byte, key string) (*Matrix, error) {
	bad := fmt.Errorf("embed: stale or damaged matrix cache")
	r := reader{b: b}
	if string(r.take(8)) != matrixMagic {
		return nil, bad
	}
	if string(r.take(int(r.u32()))) != key {
		return nil, bad
	}
	m := &Matrix{Dims: int(r.u32()), Rows: int(r.u32())}
	notes, quant := int(r.u32()), r.u32() == 1
	if r.err || m.Dims <= 0 || m.Rows < 0 || notes < 0 || m.Rows > len(b) || notes > len(b) {
		return nil, bad
	}
	if quant {
		raw := r.take(m.Rows * m.Dims)
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
	m.Chunk = make([]int64, m.Rows)
	for i := range m.Chunk {
		m.Chunk[i] = int64(r.u64())
	}
	m.noteOf = make([]int32, m.Rows)
	for i := range m.noteOf {
		m.noteOf[i] = int32(r.u32())
		if int(m.noteOf[i]) >= notes {
			r.err = true
		}
	}
	m.Notes = make([]int64, notes)
	for i := range m.Notes {
		m.Notes[i] = int64(r.u64())
	}
	m.common = r.f32s()
	if r.err || len(r.b) != 0 || (quant && (len(m.i8) != m.Rows*m.Dims || len(m.scale) != m.Rows)) {
		return nil, bad
	}
	if len(m.common) == 0 {
		m.common = nil
	}
	return m, nil
}

type reader struct {
	b   []byte
	err bool
}

func (r *reader) take(n int) []byte {
	if r.err || n < 0 || n > len(r.b) {
		r.err = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) u64() uint64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (r *reader) f32s() []float32 {
	n := int(r.u32())
	if r.err || n*4 > len(r.b) {
		r.err = true
		return nil
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(r.b[4*i:]))
	}
	r.b = r.b[4*n:]
	return out
}
