package embed

import (
	"container/heap"
	"encoding/binary"
	"math"
	"sync"
)

// Matrix holds unit vectors in memory, one row per chunk, grouped by note,
// for exact cosine search (a dot product per row in a tight loop). Rows are
// float32, or int8 with one scale per row when built with Int8.
type Matrix struct {
	Dims   int
	Rows   int
	f32    []float32 // Rows × Dims
	i8     []int8    // Rows × Dims (Int8)
	scale  []float32 // per row (Int8)
	Chunk  []int64   // chunk id of each row
	noteOf []int32   // dense note index of each row
	Notes  []int64   // note id of each dense note index
	common []float32 // removed common component (RemoveCommon)

	denseOnce sync.Once
	dense     map[int64]int32 // note id → index in Notes (denseIndex)
	meanOnce  sync.Once
	mean      []float32 // the mean row (rowMean)
	trace     float64   // 1 − |mean|²

	ann      *ivf // the approximate index (matrix_ivf.go), nil: exact scans
	rowsOnce sync.Once
	byNote   *noteRowIndex // rows of each note (noteRowsIndex)
}

// MatrixBuilder collects rows for a Matrix.
type MatrixBuilder struct {
	m      Matrix
	dense  map[int64]int32
	int8   bool
	annMin int // rows from which Matrix builds the approximate index (≤ 0: never)
}

// NewMatrixBuilder returns a builder of dims-dimensional rows; quantize
// keeps the rows as int8 (a quarter of the memory).
func NewMatrixBuilder(dims int, quantize bool, sizeHint int) *MatrixBuilder {
	b := &MatrixBuilder{m: Matrix{Dims: dims}, dense: map[int64]int32{}, int8: quantize, annMin: ANNMinRows}
	b.m.f32 = make([]float32, 0, sizeHint*dims)
	b.m.Chunk = make([]int64, 0, sizeHint)
	b.m.noteOf = make([]int32, 0, sizeHint)
	return b
}

// ApproxFrom sets the number of rows from which Matrix builds the
// approximate index (default ANNMinRows; 0 or negative: never).
func (b *MatrixBuilder) ApproxFrom(minRows int) { b.annMin = minRows }

// Add appends the row of one chunk (v must be unit length and Dims long).
func (b *MatrixBuilder) Add(note, chunk int64, v []float32) {
	d, ok := b.dense[note]
	if !ok {
		d = int32(len(b.m.Notes))
		b.dense[note] = d
		b.m.Notes = append(b.m.Notes, note)
	}
	b.m.f32 = append(b.m.f32, v...)
	b.m.Chunk = append(b.m.Chunk, chunk)
	b.m.noteOf = append(b.m.noteOf, d)
	b.m.Rows++
}

// Matrix returns the built matrix, with the common component removed
// (see RemoveCommon) and, if asked, quantized to int8. From ANNMinRows
// rows (ApproxFrom) it also builds the approximate index (matrix_ivf.go) and quantizes
// whatever was asked.
func (b *MatrixBuilder) Matrix() *Matrix {
	m := &Matrix{Dims: b.m.Dims, Rows: b.m.Rows, f32: b.m.f32, Chunk: b.m.Chunk, noteOf: b.m.noteOf, Notes: b.m.Notes}
	b.m = Matrix{Dims: b.m.Dims}
	b.dense = map[int64]int32{}
	m.RemoveCommon()
	quant := b.int8
	if b.annMin > 0 && m.Rows >= b.annMin {
		m.buildIVF()
		quant = true
	}
	if quant {
		m.quantize()
	}
	return m
}

// quantize turns the float32 rows into int8 with one scale per row.
func (m *Matrix) quantize() {
	d := m.Dims
	m.i8 = make([]int8, len(m.f32))
	m.scale = make([]float32, m.Rows)
	for r := 0; r < m.Rows; r++ {
		_, m.scale[r] = quantizeRow(m.f32[r*d:r*d+d], m.i8[r*d:r*d+d])
	}
	m.f32 = nil
}

// Bytes is the memory the rows take (vectors plus ids).
func (m *Matrix) Bytes() int64 {
	n := int64(len(m.f32))*4 + int64(len(m.i8)) + int64(len(m.scale))*4 + int64(len(m.Chunk))*8 + int64(len(m.noteOf))*4 + int64(len(m.Notes))*8
	if m.ann != nil {
		n += int64(len(m.ann.lists))*4 + int64(len(m.ann.centroids))*4
	}
	return n
}

// NoteHit is one note of a vector search: its best chunk and that chunk's cosine.
type NoteHit struct {
	Note  int64
	Chunk int64
	Score float32
}

// Scores computes the cosine of q with every row into dst (len Rows), the
// rows split over GOMAXPROCS goroutines when there are many.
func (m *Matrix) Scores(q []float32, dst []float32) {
	parallelRows(m.Rows, func(lo, hi int) { m.scoreRange(q, lo, hi, dst[lo:hi]) })
}

// Dot is the dot product of two equal-length vectors.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// Row returns row r as float32 (a copy for int8 matrices).
func (m *Matrix) Row(r int) []float32 {
	d := m.Dims
	if m.i8 == nil {
		return m.f32[r*d : r*d+d]
	}
	out := make([]float32, d)
	for i, x := range m.i8[r*d : r*d+d] {
		out[i] = float32(x) * m.scale[r]
	}
	return out
}

// SimilarNotes returns the k notes closest to note (itself excluded), best
// first. The score is symmetric: the mean, over note's sections, of the best
// cosine with one of the other note's sections, averaged with the same
// mean taken the other way (so a long note does not win by having many
// sections to match). Each hit's Chunk is its section that matched best.
// allow filters by note id.
func (m *Matrix) SimilarNotes(note int64, k int, allow func(int64) bool) []NoteHit {
	src := m.NoteRows(note)
	if len(src) == 0 || k <= 0 {
		return nil
	}
	sum := make([]float32, len(m.Notes))
	bestRow := make([]int32, len(m.Notes))
	bestAll := make([]float32, len(m.Notes))
	for i := range bestAll {
		bestAll[i] = float32(math.Inf(-1))
	}
	scores := make([]float32, m.Rows)
	best := make([]float32, len(m.Notes))
	rowBest := make([]float32, m.Rows) // each row's best cosine with a section of note
	for i := range rowBest {
		rowBest[i] = float32(math.Inf(-1))
	}
	for _, r := range src {
		m.Scores(m.Row(r), scores)
		for i := range best {
			best[i] = float32(math.Inf(-1))
		}
		for row, s := range scores {
			n := m.noteOf[row]
			if s > best[n] {
				best[n] = s
			}
			if s > bestAll[n] {
				bestAll[n], bestRow[n] = s, int32(row)
			}
			rowBest[row] = max(rowBest[row], s)
		}
		for n, b := range best {
			sum[n] += b
		}
	}
	back := make([]float32, len(m.Notes))
	rows := make([]float32, len(m.Notes))
	for row, b := range rowBest {
		back[m.noteOf[row]] += b
		rows[m.noteOf[row]]++
	}
	h := &hitHeap{}
	for n, total := range sum {
		id := m.Notes[n]
		if id == note || (allow != nil && !allow(id)) {
			continue
		}
		s := (total/float32(len(src)) + back[n]/rows[n]) / 2
		if h.Len() == k && s <= (*h)[0].Score {
			continue
		}
		hit := NoteHit{Note: id, Chunk: m.Chunk[bestRow[n]], Score: s}
		h.offer(hit, k)
	}
	return h.best()
}

// NoteRows returns the rows of a note.
func (m *Matrix) NoteRows(note int64) []int {
	dn, ok := m.denseIndex()[note]
	if !ok {
		return nil
	}
	x := m.noteRowsIndex()
	var out []int
	for _, r := range x.rows[x.off[dn]:x.off[dn+1]] {
		out = append(out, int(r))
	}
	return out
}

// ScoreStats describes the cosines of one query with the whole matrix: the
// mean and standard deviation of every note's best cosine and how many
// notes there were. Most notes are unrelated to any one
// query, so these are (nearly) the null distribution a hit must stand out of.
type ScoreStats struct {
	N       int
	Mean    float64
	SD      float64
	best    []float32 // per dense note: its best cosine
	bestRow []int32   // per dense note: the row of that cosine (-1: none)
	q       []float32 // the (projected) query, when best is not computed (approximate)
	m       *Matrix
}

// noteBest is a dense note's best cosine and its row (-1: none).
func (st ScoreStats) noteBest(d int32) (float32, int32) {
	if st.best != nil {
		return st.best[d], st.bestRow[d]
	}
	return st.m.noteBest(st.q, d)
}

// Agreement tells whether the query's vector sees the given notes (the
// first notes of the lexical ranking) as closer to it than the vault at
// large: the sum of their cosines' z-scores divided by its standard
// deviation under a query vector that knows nothing (a random direction).
// For such a query the cosines of two rows a and b with it covary as a·b
// (up to the common factor 1/d), so near-duplicate notes count as about
// one and unrelated ones as many: the result is ≈ N(0, 1) whatever the
// notes, and grows with real agreement. NaN when none of the notes has a
// vector.
func (st ScoreStats) Agreement(notes []int64) float64 {
	if st.m == nil || (st.bestRow == nil && st.q == nil) || st.SD <= 0 {
		return math.NaN()
	}
	idx := st.m.denseIndex()
	var rows []int
	var sum float64
	for _, id := range notes {
		d, ok := idx[id]
		if !ok {
			continue
		}
		best, row := st.noteBest(d)
		if row < 0 {
			continue
		}
		rows = append(rows, int(row))
		sum += st.Z(best)
	}
	if len(rows) == 0 {
		return math.NaN()
	}
	// Centred on the mean row ā: z-scores are deviations from the mean
	// cosine, and the standard deviation they are in units of is, for a
	// random direction, √(tr Σ / d) with tr Σ = mean |a − ā|² = 1 − |ā|²
	// for unit rows. So Var(Σ z) = Σ_ij (a_i − ā)·(a_j − ā) / (1 − |ā|²).
	mean, trace := st.m.rowMean()
	c := make([]float32, len(mean))
	for _, r := range rows {
		for d, x := range st.m.Row(r) {
			c[d] += x - mean[d]
		}
	}
	v := float64(Dot(c, c)) / trace
	if !(v > 0) {
		return math.NaN()
	}
	return sum / math.Sqrt(v)
}

// rowMean returns the mean of the rows and 1 − its squared norm (the
// total variance of unit rows), computed once.
func (m *Matrix) rowMean() ([]float32, float64) {
	m.meanOnce.Do(func() {
		d := m.Dims
		acc := make([]float64, d)
		for r := 0; r < m.Rows; r++ {
			for i, x := range m.Row(r) {
				acc[i] += float64(x)
			}
		}
		m.mean = make([]float32, d)
		var sq float64
		for i := range acc {
			acc[i] /= float64(max(m.Rows, 1))
			m.mean[i] = float32(acc[i])
			sq += acc[i] * acc[i]
		}
		m.trace = max(1-sq, 1e-6)
	})
	return m.mean, m.trace
}

// denseIndex maps note id → dense note index, built on first use.
func (m *Matrix) denseIndex() map[int64]int32 {
	m.denseOnce.Do(func() {
		m.dense = make(map[int64]int32, len(m.Notes))
		for i, id := range m.Notes {
			m.dense[id] = int32(i)
		}
	})
	return m.dense
}

// Z is how many standard deviations s lies above the mean (0 when the
// deviation is 0).
func (st ScoreStats) Z(s float32) float64 {
	if st.SD <= 0 {
		return 0
	}
	return (float64(s) - st.Mean) / st.SD
}

func statsOf(xs []float32, skip func(i int) bool) ScoreStats {
	var st ScoreStats
	var sum, sq float64
	for i, x := range xs {
		if skip != nil && skip(i) {
			continue
		}
		sum += float64(x)
		sq += float64(x) * float64(x)
		st.N++
	}
	if st.N == 0 {
		return st
	}
	st.Mean = sum / float64(st.N)
	if v := sq/float64(st.N) - st.Mean*st.Mean; v > 0 {
		st.SD = math.Sqrt(v)
	}
	return st
}

// TopNotes returns the k notes whose best chunk is most similar to q, best
// first; allow (when non-nil) filters notes by id.
func (m *Matrix) TopNotes(q []float32, k int, allow func(note int64) bool) []NoteHit {
	h, _ := m.TopNotesStats(q, k, allow)
	return h
}

// TopNotesStats is TopNotes plus the statistics of every note's best cosine
// (all notes, whatever allow says: the distribution is the vault's).
func (m *Matrix) TopNotesStats(q []float32, k int, allow func(note int64) bool) ([]NoteHit, ScoreStats) {
	if m == nil || m.Rows == 0 || k <= 0 || len(q) != m.Dims {
		return nil, ScoreStats{}
	}
	q = m.project(q)
	if m.ann != nil {
		return m.annTop(q, k, allow, false), m.annStats(q)
	}
	scores := make([]float32, m.Rows)
	m.Scores(q, scores)
	best, bestRow := m.bestPerNote(scores)
	h := &hitHeap{}
	for n, s := range best {
		if bestRow[n] < 0 {
			continue
		}
		if h.Len() == k && s <= (*h)[0].Score {
			continue
		}
		if allow != nil && !allow(m.Notes[n]) {
			continue
		}
		hit := NoteHit{Note: m.Notes[n], Chunk: m.Chunk[bestRow[n]], Score: s}
		h.offer(hit, k)
	}
	return h.best(), m.noteStats(best, bestRow)
}

// bestPerNote is each note's best score among its rows and that row (-1,
// and -Inf, for a note without rows).
func (m *Matrix) bestPerNote(scores []float32) (best []float32, bestRow []int32) {
	best = make([]float32, len(m.Notes))
	bestRow = make([]int32, len(m.Notes))
	for i := range best {
		best[i] = float32(math.Inf(-1))
		bestRow[i] = -1
	}
	for r, s := range scores {
		if n := m.noteOf[r]; s > best[n] {
			best[n], bestRow[n] = s, int32(r)
		}
	}
	return best, bestRow
}

// noteStats is the ScoreStats of the notes' best scores.
func (m *Matrix) noteStats(best []float32, bestRow []int32) ScoreStats {
	st := statsOf(best, func(i int) bool { return bestRow[i] < 0 })
	st.best, st.bestRow, st.m = best, bestRow, m
	return st
}

// TopChunks is TopNotes by section: the k rows closest to q, best first,
// several of one note allowed (search_notes group_by section).
func (m *Matrix) TopChunks(q []float32, k int, allow func(note int64) bool) []NoteHit {
	h, _ := m.TopChunksStats(q, k, allow)
	return h
}

// TopChunksStats is TopChunks plus the statistics of every note's best cosine.
func (m *Matrix) TopChunksStats(q []float32, k int, allow func(note int64) bool) ([]NoteHit, ScoreStats) {
	if m == nil || m.Rows == 0 || k <= 0 || len(q) != m.Dims {
		return nil, ScoreStats{}
	}
	q = m.project(q)
	if m.ann != nil {
		return m.annTop(q, k, allow, true), m.annStats(q)
	}
	scores := make([]float32, m.Rows)
	m.Scores(q, scores)
	h := &hitHeap{}
	for r, s := range scores {
		if h.Len() == k && s <= (*h)[0].Score {
			continue
		}
		note := m.Notes[m.noteOf[r]]
		if allow != nil && !allow(note) {
			continue
		}
		hit := NoteHit{Note: note, Chunk: m.Chunk[r], Score: s}
		h.offer(hit, k)
	}
	// The statistics are the notes' (each note's best row), as TopNotesStats
	// gives them: the agreement is a judgement on notes.
	best, bestRow := m.bestPerNote(scores)
	return h.best(), m.noteStats(best, bestRow)
}

type hitHeap []NoteHit

// offer adds hit to a heap of fewer than k hits, or puts it in place of
// the worst kept (the root) when the heap is full; callers skip a hit no
// better than the root first.
func (h *hitHeap) offer(hit NoteHit, k int) {
	if h.Len() < k {
		heap.Push(h, hit)
		return
	}
	(*h)[0] = hit
	heap.Fix(h, 0)
}

// best empties the heap into a slice, best first.
func (h *hitHeap) best() []NoteHit {
	out := make([]NoteHit, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(NoteHit)
	}
	return out
}

func (h hitHeap) Len() int { return len(h) }
func (h hitHeap) Less(i, j int) bool {
	if h[i].Score != h[j].Score {
		return h[i].Score < h[j].Score
	}
	return h[i].Note > h[j].Note
}
func (h hitHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)   { *h = append(*h, x.(NoteHit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// EncodeVector stores a vector as little-endian float32 bytes (the BLOB format).
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector reads a BLOB written by EncodeVector into dst (reused when large enough).
func DecodeVector(b []byte, dst []float32) []float32 {
	n := len(b) / 4
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return dst
}

// RemoveCommon subtracts from every row its projection on the rows' first
// principal direction (found by power iteration) and renormalizes: the
// "common component removal" of SIF embeddings, which takes out what every
// text shares (style, frequent words) and leaves what tells them apart.
// Queries are projected the same way by TopNotes. Float32 matrices only;
// with fewer than 16 rows it does nothing.
func (m *Matrix) RemoveCommon() {
	if m.i8 != nil || m.Rows < 16 || m.common != nil {
		return
	}
	d := m.Dims
	u := make([]float32, d)
	for i := range u {
		u[i] = 1 / float32(math.Sqrt(float64(d)))
	}
	tmp := make([]float32, d)
	for it := 0; it < 30; it++ {
		clear(tmp)
		for r := 0; r < m.Rows; r++ {
			row := m.f32[r*d : r*d+d]
			p := Dot(row, u)
			for i, x := range row {
				tmp[i] += p * x
			}
		}
		Normalize(tmp)
		copy(u, tmp)
	}
	for r := 0; r < m.Rows; r++ {
		row := m.f32[r*d : r*d+d]
		p := Dot(row, u)
		for i := range row {
			row[i] -= p * u[i]
		}
		Normalize(row)
	}
	m.common = u
}

// project removes the common component from a query vector (a copy).
func (m *Matrix) project(q []float32) []float32 {
	if m.common == nil {
		return q
	}
	out := append([]float32(nil), q...)
	p := Dot(out, m.common)
	for i := range out {
		out[i] -= p * m.common[i]
	}
	return Normalize(out)
}
