package embed

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// clustered returns n unit rows in 64 dims around 60 topic directions
// (cosine ≈ 0.7 with their topic), 3 rows a note, and nq queries drawn
// the same way (not rows). Deterministic.
func clustered(n, nq int, seed uint64) (rows [][]float32, queries [][]float32) {
	const dims = 64
	r := rand.New(rand.NewPCG(seed, 99))
	gauss := func(scale float32, base []float32) []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = scale * float32(r.NormFloat64())
			if base != nil {
				v[i] += base[i]
			}
		}
		return Normalize(v)
	}
	topics := make([][]float32, 60)
	for i := range topics {
		topics[i] = gauss(1, nil)
	}
	draw := func() []float32 { return gauss(0.12, topics[r.IntN(len(topics))]) }
	for range n {
		rows = append(rows, draw())
	}
	for range nq {
		queries = append(queries, draw())
	}
	return rows, queries
}

func buildRows(rows [][]float32, quant bool, approxFrom int) *Matrix {
	b := NewMatrixBuilder(len(rows[0]), quant, len(rows))
	b.ApproxFrom(approxFrom)
	for i, v := range rows {
		b.Add(int64(i/3+1), int64(i+1), append([]float32(nil), v...))
	}
	return b.Matrix()
}

// TestApproximateRecall: on a clustered set, the approximate index finds
// at least 95% of the exact top 10 notes (and sections), and it is not
// the exact scan in disguise (it scans a fraction of the rows).
func TestApproximateRecall(t *testing.T) {
	rows, queries := clustered(9000, 100, 1)
	exact := buildRows(rows, false, 0)
	approx := buildRows(rows, false, 1000)
	if exact.Approximate() || !approx.Approximate() {
		t.Fatalf("approximate: exact %v, approx %v", exact.Approximate(), approx.Approximate())
	}
	if nl := approx.ann.nlist(); nl < 100 || nl > 300 { // 2√9000 ≈ 190
		t.Fatalf("%d lists", nl)
	}
	var hitN, hitC, tot int
	for _, q := range queries {
		want := map[int64]bool{}
		for _, h := range exact.TopNotes(q, 10, nil) {
			want[h.Note] = true
		}
		got := approx.TopNotes(q, 10, nil)
		if len(got) != 10 {
			t.Fatalf("%d hits", len(got))
		}
		seen := map[int64]bool{}
		for i, h := range got {
			if seen[h.Note] {
				t.Fatalf("note %d twice", h.Note)
			}
			seen[h.Note] = true
			if i > 0 && h.Score > got[i-1].Score {
				t.Fatalf("not best first: %v", got)
			}
			if want[h.Note] {
				hitN++
			}
		}
		wantC := map[int64]bool{}
		for _, h := range exact.TopChunks(q, 10, nil) {
			wantC[h.Chunk] = true
		}
		for _, h := range approx.TopChunks(q, 10, nil) {
			if wantC[h.Chunk] {
				hitC++
			}
		}
		tot += 10
	}
	rn, rc := float64(hitN)/float64(tot), float64(hitC)/float64(tot)
	t.Logf("recall@10: notes %.3f, sections %.3f", rn, rc)
	if rn < 0.95 || rc < 0.95 {
		t.Errorf("recall@10 notes %.3f, sections %.3f; want ≥ 0.95", rn, rc)
	}
	// A query probes ANNProbe of the lists, not all of them.
	spans := approx.probe(approx.project(queries[0]), ANNProbe)
	n := 0
	for _, s := range spans {
		n += s.hi - s.lo
	}
	if n <= 0 || n >= approx.Rows/2 {
		t.Errorf("one query scans %d of %d rows", n, approx.Rows)
	}
}

// TestApproximateScoresAreCosines: a hit's score is its row's cosine with
// the (projected) query, whatever order the rows were stored in, and the
// chunk and note ids moved with their rows. An approximate matrix is int8
// (its rows within quantization error of the float32 ones).
func TestApproximateScoresAreCosines(t *testing.T) {
	rows, queries := clustered(3000, 5, 2)
	approx := buildRows(rows, false, 100)
	exact := buildRows(rows, false, 0)
	if approx.i8 == nil {
		t.Fatal("an approximate matrix is int8")
	}
	at := map[int64]int{} // chunk → row in approx
	for r, c := range approx.Chunk {
		at[c] = r
	}
	for _, q := range queries {
		for _, h := range approx.TopChunks(q, 5, nil) {
			// The exact matrix keeps the rows in order: chunk c is row c-1,
			// note (c-1)/3+1.
			r := int(h.Chunk - 1)
			if h.Note != int64(r/3+1) {
				t.Fatalf("chunk %d came back with note %d", h.Chunk, h.Note)
			}
			if c := Dot(Normalize(approx.Row(at[h.Chunk])), exact.Row(r)); c < 0.999 {
				t.Fatalf("chunk %d: its row moved away from its vector (cosine %v)", h.Chunk, c)
			}
			want := Dot(approx.Row(at[h.Chunk]), approx.project(q))
			if math.Abs(float64(want-h.Score)) > 1e-5 {
				t.Fatalf("chunk %d: score %v, cosine %v", h.Chunk, h.Score, want)
			}
		}
	}
	// Every note keeps all its rows.
	for note := int64(1); note <= 1000; note += 97 {
		if got := len(approx.NoteRows(note)); got != 3 {
			t.Fatalf("note %d has %d rows", note, got)
		}
	}
}

// TestExactBelowThreshold: below the threshold nothing changes: no index,
// rows in insertion order, every row scanned (a hand-computed ranking).
func TestExactBelowThreshold(t *testing.T) {
	b := NewMatrixBuilder(2, false, 3)
	b.ApproxFrom(4)
	b.Add(1, 10, []float32{1, 0})
	b.Add(2, 20, []float32{0, 1})
	b.Add(3, 30, Normalize([]float32{1, 1}))
	m := b.Matrix()
	if m.Approximate() || !reflect.DeepEqual(m.Chunk, []int64{10, 20, 30}) {
		t.Fatalf("approximate %v, chunks %v", m.Approximate(), m.Chunk)
	}
	got := m.TopNotes([]float32{1, 0}, 3, nil)
	want := []NoteHit{{1, 10, 1}, {3, 30, float32(1 / math.Sqrt2)}, {2, 20, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestApproximateFilter: a filter that admits only notes far from the
// query (outside every probed list) still gets them, as the exact scan
// does: the probe widens until enough are found.
func TestApproximateFilter(t *testing.T) {
	rows, queries := clustered(6000, 3, 3)
	approx := buildRows(rows, false, 1000)
	exact := buildRows(rows, false, 0)
	for _, q := range queries {
		// The 5 notes least like the query.
		far := exact.TopNotes(neg(q), 5, nil)
		allow := map[int64]bool{}
		for _, h := range far {
			allow[h.Note] = true
		}
		keep := func(id int64) bool { return allow[id] }
		got := approx.TopNotes(q, 10, keep)
		want := exact.TopNotes(q, 10, keep)
		if len(got) != 5 || len(want) != 5 {
			t.Fatalf("filtered: got %d hits, exact %d", len(got), len(want))
		}
		for i := range got {
			if got[i].Note != want[i].Note {
				t.Fatalf("filtered ranking %v, exact %v", got, want)
			}
		}
		if g := approx.TopChunks(q, 20, keep); len(g) != 15 {
			t.Fatalf("filtered sections: %d, want the 15 rows of the 5 notes", len(g))
		}
	}
}

func neg(v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = -x
	}
	return out
}

// TestApproximateStats: the statistics estimated from a sample are close
// to the exact ones, and the agreement of a cluster the query points at
// is as high as with the exact scan.
func TestApproximateStats(t *testing.T) {
	rows, queries := clustered(9000, 3, 4)
	approx := buildRows(rows, false, 1000)
	exact := buildRows(rows, false, 0)
	for _, q := range queries {
		top, ste := exact.TopNotesStats(q, 10, nil)
		_, sta := approx.TopNotesStats(q, 10, nil)
		if sta.N != ste.N || math.Abs(sta.Mean-ste.Mean) > 0.02 || math.Abs(sta.SD-ste.SD) > 0.1*ste.SD {
			t.Fatalf("stats: approx %+v, exact %+v", sta, ste)
		}
		ids := make([]int64, len(top))
		for i, h := range top {
			ids[i] = h.Note
		}
		ae, aa := ste.Agreement(ids), sta.Agreement(ids)
		if !(aa > 4) || math.Abs(aa-ae) > 0.1*ae {
			t.Fatalf("agreement: approx %.2f, exact %.2f", aa, ae)
		}
		if a := sta.Agreement([]int64{1 << 40}); !math.IsNaN(a) {
			t.Fatalf("unknown note: %v", a)
		}
	}
}

// TestApproximateInt8Cache: an approximate int8 matrix survives the cache
// file and answers the same.
func TestApproximateInt8Cache(t *testing.T) {
	rows, queries := clustered(3000, 3, 5)
	m := buildRows(rows, true, 100)
	if m.i8 == nil || m.f32 != nil || !m.Approximate() {
		t.Fatalf("int8 %v, approximate %v", m.i8 != nil, m.Approximate())
	}
	enc := m.MarshalBinary("k")
	got, err := UnmarshalMatrix(enc, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Approximate() || !reflect.DeepEqual(got.ann, m.ann) {
		t.Fatalf("index lost in the cache")
	}
	for _, q := range queries {
		if a, b := m.TopNotes(q, 10, nil), got.TopNotes(q, 10, nil); !reflect.DeepEqual(a, b) {
			t.Fatalf("cached matrix answers %v, built %v", b, a)
		}
	}
	// A damaged index (offsets that do not end at Rows) is refused.
	last := &m.ann.lists[len(m.ann.lists)-1]
	*last--
	damaged := m.MarshalBinary("k")
	*last++
	if _, err := UnmarshalMatrix(damaged, "k"); err == nil {
		t.Fatal("damaged index accepted")
	}
}

// TestCacheRefusesShortCommon: a cache whose common component is not Dims
// long is refused (a query would index past it).
func TestCacheRefusesShortCommon(t *testing.T) {
	rows, _ := clustered(40, 0, 11)
	m := buildRows(rows, false, 0)
	if len(m.common) != m.Dims {
		t.Fatalf("common %d", len(m.common))
	}
	full := m.common
	m.common = full[:m.Dims-1]
	enc := m.MarshalBinary("k")
	m.common = full
	if _, err := UnmarshalMatrix(enc, "k"); err == nil {
		t.Fatal("short common component accepted")
	}
}

// TestApproximateFewRows: a threshold set below the number of lists
// (search.approx_min_chunks: 1) on a tiny vault builds an index of at most
// one list a row, and, every list probed, ranks as the exact scan does.
func TestApproximateFewRows(t *testing.T) {
	all, queries := clustered(40, 3, 5)
	for _, n := range []int{1, 2, 3, 5, 17, 40} {
		rows := all[:n]
		approx := buildRows(rows, false, 1)
		exact := buildRows(rows, true, 0) // approximate matrices are int8
		if !approx.Approximate() || approx.ann.nlist() > n {
			t.Fatalf("%d rows: approximate %v", n, approx.Approximate())
		}
		for _, q := range queries {
			got, want := approx.TopNotes(q, 5, nil), exact.TopNotes(q, 5, nil)
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%d rows: %d hits, exact %d", n, len(got), len(want))
			}
			for i := range got {
				if got[i].Note != want[i].Note {
					t.Fatalf("%d rows: ranking %v, exact %v", n, got, want)
				}
			}
		}
	}
}
