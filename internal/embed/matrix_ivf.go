package embed

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// An approximate index for large matrices: IVF-flat (an inverted file of
// k-means lists, each scanned exactly). Past ANNMinRows rows, Matrix()
// clusters the rows into about 2√rows lists (spherical k-means: cosine),
// stores them list after list (so a list is one contiguous run of rows)
// and keeps each list's centroid. A query scores the centroids, scans the
// rows of the ANNProbe closest lists with the exact kernel, and ranks
// what it found; the cost is rows × ANNProbe / lists instead of rows.
//
// Why IVF and not HNSW: github.com/coder/hnsw v0.6.1 (the maintained
// pure-Go HNSW) measured recall@10 0.09–0.12 against exact on 10k–40k
// clustered 100-d vectors, 0.3–0.55 ms per insert on one core (a 3.3M-row
// build would take 20–30 minutes) and a Go map per node per layer (about
// 1 KB a row at M=16); IVF needs 4 bytes a row (none beyond the reordered
// rows), builds in seconds and works on the int8 rows as they are.
//
// The k-means is two-level so that assigning millions of rows stays cheap:
// √lists coarse centroids, then each coarse cluster split into its share
// of the lists; a row goes to the closest fine centroid of its closest
// coarse one (≈ 2√lists dot products instead of lists). Deterministic: the
// seed is derived from the matrix's shape.

// ANNMinRows is the default number of rows from which Matrix() builds the
// approximate index (and quantizes to int8: a matrix that large needs the
// memory); below it every query scans every row. The exact scan passes
// 50 ms p50 at ~300k rows on a loaded 2-core machine (docs/performance.md,
// "Scale"). 0 or negative: never.
var ANNMinRows = 250_000

// ANNProbe is how many lists a query scans (chosen for recall@10 ≥ 0.95
// against the exact scan; docs/performance.md "Scale").
var ANNProbe = 48

// annListsPerSqrt sets the number of lists: annListsPerSqrt × √rows.
var annListsPerSqrt = 2.0

// annStatsNotes is how many notes (a fixed, evenly spread sample) the
// score statistics of an approximate query are estimated from.
const annStatsNotes = 1024

// ivf is the approximate index of a matrix whose rows are ordered by list.
type ivf struct {
	lists     []int32   // len nlist+1: list l is rows [lists[l], lists[l+1])
	centroids []float32 // nlist × Dims, unit length
}

func (x *ivf) nlist() int { return len(x.lists) - 1 }

// Approximate reports whether queries use the approximate index.
func (m *Matrix) Approximate() bool { return m.ann != nil }

// buildIVF clusters the float32 rows into lists, reorders the rows (and
// their chunk and note ids) list by list, and keeps the index.
func (m *Matrix) buildIVF() {
	d, n := m.Dims, m.Rows
	nlist := max(16, min(8192, int(annListsPerSqrt*math.Sqrt(float64(n)))))
	rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
	// Train on a sample of at most 64 rows per list.
	sample := make([]int32, 0, min(n, 64*nlist))
	if n <= 64*nlist {
		for r := range n {
			sample = append(sample, int32(r))
		}
	} else {
		for _, r := range rng.Perm(n)[:64*nlist] {
			sample = append(sample, int32(r))
		}
		slices.Sort(sample)
	}
	// No more clusters than rows (a low search.approx_min_chunks on a tiny
	// vault): k-means seeds each centroid with a distinct row.
	k1 := max(1, min(len(sample), int(math.Sqrt(float64(nlist)))))
	coarse := m.kmeans(sample, k1, rng)
	// Split each coarse cluster into its share of the lists.
	members := make([][]int32, k1)
	for _, r := range sample {
		c, _ := nearest(coarse, d, m.f32[int(r)*d:int(r)*d+d])
		members[c] = append(members[c], r)
	}
	var fine [][]float32 // per coarse cluster: its fine centroids
	fine = make([][]float32, k1)
	first := make([]int, k1+1) // global list id of each coarse cluster's first fine list
	for c := range k1 {
		k2 := 0
		if len(members[c]) > 0 {
			k2 = max(1, int(math.Round(float64(nlist)*float64(len(members[c]))/float64(len(sample)))))
			k2 = min(k2, len(members[c]))
			fine[c] = m.kmeans(members[c], k2, rng)
		}
		first[c+1] = first[c] + k2
	}
	total := first[k1]
	// Assign every row to the closest fine centroid among those of its
	// assignCoarse closest coarse clusters (with the closest coarse one
	// alone, 14% of the rows of a text vault landed in a list that was not
	// their closest, which probing by centroid then misses).
	assign := make([]int32, n)
	parallelRows(n, func(lo, hi int) {
		var top []int
		var sc []float32
		for r := lo; r < hi; r++ {
			row := m.f32[r*d : r*d+d]
			top, sc = nearestN(coarse, d, row, assignCoarse, top[:0], sc[:0])
			best, bs := -1, float32(math.Inf(-1))
			for _, c := range top {
				if len(fine[c]) == 0 {
					continue
				}
				if f, s := nearest(fine[c], d, row); s > bs {
					best, bs = first[c]+f, s
				}
			}
			if best < 0 {
				// Only empty coarse clusters near: the closest non-empty one.
				c := nearestNonEmpty(coarse, fine, d, row)
				f, _ := nearest(fine[c], d, row)
				best = first[c] + f
			}
			assign[r] = int32(best)
		}
	})
	// Counting sort by list, stable (rows keep their order in a list).
	x := &ivf{lists: make([]int32, total+1), centroids: make([]float32, 0, total*d)}
	for _, l := range assign {
		x.lists[l+1]++
	}
	for l := range total {
		x.lists[l+1] += x.lists[l]
	}
	for c := range k1 {
		x.centroids = append(x.centroids, fine[c]...)
	}
	pos := slices.Clone(x.lists[:total])
	f32 := make([]float32, len(m.f32))
	chunk := make([]int64, n)
	noteOf := make([]int32, n)
	for r, l := range assign {
		p := int(pos[l])
		pos[l]++
		copy(f32[p*d:p*d+d], m.f32[r*d:r*d+d])
		chunk[p], noteOf[p] = m.Chunk[r], m.noteOf[r]
	}
	m.f32, m.Chunk, m.noteOf = f32, chunk, noteOf
	m.ann = x
}

// kmeans runs spherical k-means (8 rounds) over the given rows and returns
// k unit centroids (k × Dims).
func (m *Matrix) kmeans(rows []int32, k int, rng *rand.Rand) []float32 {
	d := m.Dims
	cent := make([]float32, k*d)
	for i, j := range rng.Perm(len(rows))[:k] {
		r := int(rows[j])
		copy(cent[i*d:i*d+d], m.f32[r*d:r*d+d])
	}
	assign := make([]int32, len(rows))
	sum := make([]float64, k*d)
	count := make([]int, k)
	for range 8 {
		parallelRows(len(rows), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				r := int(rows[i])
				c, _ := nearest(cent, d, m.f32[r*d:r*d+d])
				assign[i] = int32(c)
			}
		})
		clear(sum)
		clear(count)
		for i, c := range assign {
			r := int(rows[i])
			count[c]++
			s := sum[int(c)*d : int(c)*d+d]
			for j, v := range m.f32[r*d : r*d+d] {
				s[j] += float64(v)
			}
		}
		for c := range k {
			dst := cent[c*d : c*d+d]
			if count[c] == 0 {
				// An empty cluster restarts at a random row.
				r := int(rows[rng.IntN(len(rows))])
				copy(dst, m.f32[r*d:r*d+d])
				continue
			}
			for j := range dst {
				dst[j] = float32(sum[c*d+j])
			}
			Normalize(dst)
		}
	}
	return cent
}

// nearest is the index of the centroid with the largest dot product with v.
func nearest(cent []float32, d int, v []float32) (int, float32) {
	best, bs := 0, float32(math.Inf(-1))
	for c := 0; c*d < len(cent); c++ {
		if s := Dot(cent[c*d:c*d+d], v); s > bs {
			best, bs = c, s
		}
	}
	return best, bs
}

// assignCoarse is how many coarse clusters a row's fine list is sought in.
const assignCoarse = 4

// nearestN appends to dst the indexes of the n centroids with the largest
// dot products with v, best first (sc: their scores, scratch).
func nearestN(cent []float32, d int, v []float32, n int, dst []int, sc []float32) ([]int, []float32) {
	for c := 0; c*d < len(cent); c++ {
		s := Dot(cent[c*d:c*d+d], v)
		i := len(dst)
		for i > 0 && sc[i-1] < s {
			i--
		}
		if i >= n {
			continue
		}
		dst = slices.Insert(dst, i, c)
		sc = slices.Insert(sc, i, s)
		if len(dst) > n {
			dst, sc = dst[:n], sc[:n]
		}
	}
	return dst, sc
}

func nearestNonEmpty(coarse []float32, fine [][]float32, d int, v []float32) int {
	best, bs := 0, float32(math.Inf(-1))
	for c := range fine {
		if len(fine[c]) == 0 {
			continue
		}
		if s := Dot(coarse[c*d:c*d+d], v); s > bs {
			best, bs = c, s
		}
	}
	return best
}

// span is a run of rows [lo, hi).
type span struct{ lo, hi int }

// probe returns the row runs of the n lists whose centroids are closest to q.
func (m *Matrix) probe(q []float32, n int) []span {
	x := m.ann
	d := m.Dims
	nl := x.nlist()
	cs := make([]float32, nl)
	for l := range nl {
		cs[l] = Dot(x.centroids[l*d:l*d+d], q)
	}
	order := make([]int32, nl)
	for i := range order {
		order[i] = int32(i)
	}
	n = min(n, nl)
	sort.Slice(order, func(i, j int) bool {
		if cs[order[i]] != cs[order[j]] {
			return cs[order[i]] > cs[order[j]]
		}
		return order[i] < order[j]
	})
	out := make([]span, 0, n)
	for _, l := range order[:n] {
		if lo, hi := int(x.lists[l]), int(x.lists[l+1]); hi > lo {
			out = append(out, span{lo, hi})
		}
	}
	return out
}

// scoreSpans scores the rows of spans into a slice laid out span after
// span (len Σ hi-lo), split over GOMAXPROCS when there are many rows.
func (m *Matrix) scoreSpans(q []float32, spans []span) []float32 {
	off := make([]int, len(spans)+1)
	for i, s := range spans {
		off[i+1] = off[i] + s.hi - s.lo
	}
	out := make([]float32, off[len(spans)])
	parallelRows(len(out), func(lo, hi int) {
		// The spans overlapping [lo, hi) of out.
		i := sort.Search(len(spans), func(i int) bool { return off[i+1] > lo })
		for ; i < len(spans) && off[i] < hi; i++ {
			a, b := max(lo, off[i]), min(hi, off[i+1])
			r0 := spans[i].lo + a - off[i]
			m.scoreRange(q, r0, r0+b-a, out[a:b])
		}
	})
	return out
}

// annTop ranks the rows of the probed lists: the k best notes (their best
// row each), or with bySection the k best rows, best first. When allow
// leaves fewer than k among them, it probes twice as many lists, up to all
// of them (then it is the exact answer).
func (m *Matrix) annTop(q []float32, k int, allow func(int64) bool, bySection bool) []NoteHit {
	nprobe := max(1, ANNProbe)
	for {
		spans := m.probe(q, nprobe)
		scores := m.scoreSpans(q, spans)
		hits := m.rankSpans(spans, scores, k, allow, bySection)
		if len(hits) >= k || nprobe >= m.ann.nlist() {
			return hits
		}
		nprobe *= 2
	}
}

// rankSpans selects from the scored rows of spans the k best notes (or
// rows), allow applied.
func (m *Matrix) rankSpans(spans []span, scores []float32, k int, allow func(int64) bool, bySection bool) []NoteHit {
	// A heap of rows (as NoteHits; Note is the note id) wide enough that k
	// distinct notes are in it unless notes have many matching rows; if
	// not, again with every row.
	width := k
	if !bySection {
		width = 4 * k
	}
	allowed := map[int32]bool{} // dense note → allow's verdict
	ok := func(dn int32) bool {
		if allow == nil {
			return true
		}
		v, seen := allowed[dn]
		if !seen {
			v = allow(m.Notes[dn])
			allowed[dn] = v
		}
		return v
	}
	for {
		h := &hitHeap{}
		i := 0
		for _, sp := range spans {
			for r := sp.lo; r < sp.hi; r++ {
				s := scores[i]
				i++
				if h.Len() == width && s <= (*h)[0].Score {
					continue
				}
				dn := m.noteOf[r]
				if !ok(dn) {
					continue
				}
				h.offer(NoteHit{Note: m.Notes[dn], Chunk: m.Chunk[r], Score: s}, width)
			}
		}
		full := h.Len() == width
		rows := h.best()
		if bySection {
			return rows
		}
		out := make([]NoteHit, 0, k)
		seen := map[int64]bool{}
		for _, hit := range rows {
			if !seen[hit.Note] {
				seen[hit.Note] = true
				out = append(out, hit)
				if len(out) == k {
					return out
				}
			}
		}
		if !full || width >= len(scores) {
			return out
		}
		width = len(scores)
	}
}

// noteRowIndex maps a dense note to its rows (CSR), built on first use.
type noteRowIndex struct {
	off  []int32 // len notes+1
	rows []int32
}

func (m *Matrix) noteRowsIndex() *noteRowIndex {
	m.rowsOnce.Do(func() {
		x := &noteRowIndex{off: make([]int32, len(m.Notes)+1), rows: make([]int32, m.Rows)}
		for _, dn := range m.noteOf {
			x.off[dn+1]++
		}
		for i := range m.Notes {
			x.off[i+1] += x.off[i]
		}
		pos := slices.Clone(x.off[:len(m.Notes)])
		for r, dn := range m.noteOf {
			x.rows[pos[dn]] = int32(r)
			pos[dn]++
		}
		m.byNote = x
	})
	return m.byNote
}

// noteBest is a dense note's best cosine with q and that row (-Inf, -1:
// no rows).
func (m *Matrix) noteBest(q []float32, dn int32) (float32, int32) {
	x := m.noteRowsIndex()
	best, row := float32(math.Inf(-1)), int32(-1)
	for _, r := range x.rows[x.off[dn]:x.off[dn+1]] {
		s := m.rowScore(q, int(r))
		if s > best {
			best, row = s, r
		}
	}
	return best, row
}

// rowScore is the cosine of q with row r.
func (m *Matrix) rowScore(q []float32, r int) float32 {
	d := m.Dims
	if m.i8 != nil {
		return dotI8(m.i8[r*d:r*d+d], q) * m.scale[r]
	}
	return Dot(m.f32[r*d:r*d+d], q)
}

// annStats estimates the statistics of every note's best cosine from an
// evenly spread sample of annStatsNotes notes; Agreement computes the best
// cosine of the notes it is asked about when it needs them.
func (m *Matrix) annStats(q []float32) ScoreStats {
	n := len(m.Notes)
	step := max(1, n/annStatsNotes)
	var xs []float32
	for dn := 0; dn < n; dn += step {
		if s, r := m.noteBest(q, int32(dn)); r >= 0 {
			xs = append(xs, s)
		}
	}
	st := statsOf(xs, nil)
	st.N = n
	st.q, st.m = q, m
	return st
}
