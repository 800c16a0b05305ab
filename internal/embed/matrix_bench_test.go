package embed

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomMatrix is rows random unit vectors of dims (about 3 rows a note).
func randomMatrix(rows, dims int, quant bool, seed uint64) *Matrix {
	r := rand.New(rand.NewPCG(seed, 1))
	b := NewMatrixBuilder(dims, quant, rows)
	v := make([]float32, dims)
	for i := 0; i < rows; i++ {
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		b.Add(int64(i/3+1), int64(i+1), Normalize(v))
	}
	return b.Matrix()
}

// BenchmarkTopNotes times one TopNotesStats (what hybrid runs) over random
// unit vectors of the built-in model's 100 dims:
//
//	go test ./internal/embed -run '^$' -bench TopNotes -cpu 1,2
func BenchmarkTopNotes(b *testing.B) {
	for _, rows := range []int{30_000, 100_000, 300_000, 1_000_000} {
		for _, quant := range []bool{false, true} {
			m := randomMatrix(rows, 100, quant, 1)
			q := randomMatrix(1, 100, false, 2).Row(0)
			kind := "f32"
			if quant {
				kind = "i8"
			}
			b.Run(fmt.Sprintf("rows=%d/%s", rows, kind), func(b *testing.B) {
				for b.Loop() {
					m.TopNotesStats(q, 60, nil)
				}
			})
		}
	}
}

// BenchmarkApproxTopNotes times one approximate TopNotesStats over 200k
// clustered rows (64 dims):
//
//	go test ./internal/embed -run '^$' -bench ApproxTopNotes -cpuprofile cpu.out
func BenchmarkApproxTopNotes(b *testing.B) {
	rows, queries := clustered(200_000, 64, 1)
	m := buildRows(rows, false, 1)
	i := 0
	for b.Loop() {
		m.TopNotesStats(queries[i%len(queries)], 60, nil)
		i++
	}
}

// BenchmarkKernels times the two row kernels over 20,000 rows of 100 dims:
//
//	go test ./internal/embed -run '^$' -bench Kernels -cpu 1
func BenchmarkKernels(b *testing.B) {
	const n, d = 20000, 100
	a8 := make([]int8, n*d)
	af := make([]float32, n*d)
	for i := range a8 {
		a8[i] = int8(i*7 + 3)
		af[i] = float32(a8[i]) / 127
	}
	q := make([]float32, d)
	for i := range q {
		q[i] = float32(i*5-50) / 127
	}
	var sink float32
	b.Run("f32", func(b *testing.B) {
		for b.Loop() {
			for r := 0; r < n; r++ {
				sink += Dot(af[r*d:r*d+d], q)
			}
		}
	})
	b.Run("i8", func(b *testing.B) {
		for b.Loop() {
			for r := 0; r < n; r++ {
				sink += dotI8(a8[r*d:r*d+d], q)
			}
		}
	})
	_ = sink
}
