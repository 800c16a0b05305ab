package embed

import (
	"reflect"
	"testing"
	"unsafe"
)

func TestMatrixCacheRoundTrip(t *testing.T) {
	for _, quant := range []bool{false, true} {
		b := NewMatrixBuilder(4, quant, 3)
		b.Add(10, 100, Normalize([]float32{1, 2, 3, 4}))
		b.Add(10, 101, Normalize([]float32{4, 3, 2, 1}))
		b.Add(11, 102, Normalize([]float32{1, 0, 0, 1}))
		m := b.Matrix()
		enc := m.MarshalBinary("rev-7")
		got, err := UnmarshalMatrix(enc, "rev-7")
		if err != nil {
			t.Fatalf("quant=%v: %v", quant, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("quant=%v: round trip differs\n got %+v\nwant %+v", quant, got, m)
		}
		// Aligned: the arrays are views of the bytes; unaligned: copies.
		// Both decode to the same matrix.
		if base := uintptr(unsafe.Pointer(&enc[0])); littleEndian && base%8 == 0 {
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(got.Chunk))); p < base || p >= base+uintptr(len(enc)) {
				t.Errorf("quant=%v: aligned cache decoded to a copy", quant)
			}
		}
		shifted := append(make([]byte, 1, len(enc)+1), enc...)[1:]
		if got, err := UnmarshalMatrix(shifted, "rev-7"); err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("quant=%v: unaligned round trip: %v\n got %+v\nwant %+v", quant, err, got, m)
		}
		if _, err := UnmarshalMatrix(enc, "rev-8"); err == nil {
			t.Errorf("stale key accepted")
		}
		for _, cut := range []int{0, 5, len(enc) / 2, len(enc) - 1} {
			if _, err := UnmarshalMatrix(enc[:cut], "rev-7"); err == nil {
				t.Errorf("truncated cache (%d bytes) accepted", cut)
			}
		}
	}
}

func FuzzUnmarshalMatrix(f *testing.F) {
	b := NewMatrixBuilder(2, false, 1)
	b.Add(1, 1, Normalize([]float32{1, 1}))
	f.Add(b.Matrix().MarshalBinary("k"))
	// An approximate (int8 + IVF) matrix.
	rows, _ := clustered(40, 0, 9)
	f.Add(buildRows(rows, false, 20).MarshalBinary("k"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := UnmarshalMatrix(data, "k")
		if err != nil || m.Rows == 0 {
			return
		}
		// Whatever was accepted can be searched without a panic.
		q := make([]float32, m.Dims)
		q[0] = 1
		m.TopNotesStats(q, 3, nil)
		m.TopChunksStats(q, 3, nil)
	})
}
