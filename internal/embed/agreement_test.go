package embed

import (
	"math"
	"math/rand"
	"testing"
)

// TestAgreementCalibration: for query directions that know nothing, the
// agreement of any group of notes is ≈ N(0, 1), whether the group's
// vectors are near-duplicates or unrelated; a query that points at the
// group scores far above.
func TestAgreementCalibration(t *testing.T) {
	const dims, notes = 64, 300
	rng := rand.New(rand.NewSource(3))
	gauss := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return Normalize(v)
	}
	center := gauss()
	b := NewMatrixBuilder(dims, false, notes)
	for i := 0; i < notes; i++ {
		v := gauss()
		if i < 10 { // a cluster of near-duplicates
			for d := range v {
				v[d] = center[d] + 0.2*v[d]
			}
			Normalize(v)
		}
		b.Add(int64(i+1), int64(i+1), v)
	}
	m := b.Matrix()
	cluster := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	spread := []int64{11, 40, 70, 100, 130, 160, 190, 220, 250, 280}
	for _, group := range [][]int64{cluster, spread} {
		var sum, sq float64
		const n = 400
		for i := 0; i < n; i++ {
			_, st := m.TopNotesStats(gauss(), 1, nil)
			a := st.Agreement(group)
			sum += a
			sq += a * a
		}
		mean := sum / n
		sd := math.Sqrt(sq/n - mean*mean)
		if math.Abs(mean) > 0.25 || sd < 0.75 || sd > 1.3 {
			t.Errorf("group %v: noise agreement mean %.2f sd %.2f, want ≈ 0 and 1", group[:2], mean, sd)
		}
	}
	_, st := m.TopNotesStats(center, 1, nil)
	if a := st.Agreement(cluster); a < 4 {
		t.Errorf("a query at the cluster: agreement %.2f", a)
	}
	if a := st.Agreement([]int64{9999}); !math.IsNaN(a) {
		t.Errorf("unknown notes: %v", a)
	}
}
