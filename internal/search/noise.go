package search

import (
	"context"
	"hash/fnv"
	"math"

	"github.com/loci-dev/loci/internal/embed"
)

// NoisyVectors is a VectorSource whose query vectors are noise: each query
// is embedded as a deterministic pseudo-random unit vector seeded by its
// text, while the notes keep their real vectors. It stands for the worst
// embedder a user could bring (one that knows nothing), and measures what
// the fusion does when the semantic side carries no information: hybrid
// should then stay as good as lexical (`loci eval --noise-vectors`).
type NoisyVectors struct {
	VectorSource
}

// EmbedQuery returns the query's noise vector, of the matrix's dimension.
func (n NoisyVectors) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	m, err := n.VectorMatrix(ctx)
	if err != nil {
		return nil, err
	}
	return NoiseVector(text, m.Dims), nil
}

// NoiseVector is a unit vector of dims Gaussian components seeded by text.
func NoiseVector(text string, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	seed := h.Sum64() | 1
	next := func() float64 {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return (float64(seed>>11) + 0.5) / (1 << 53)
	}
	v := make([]float32, dims)
	for i := range v {
		// Box–Muller: Gaussian components make the direction uniform.
		v[i] = float32(math.Sqrt(-2*math.Log(next())) * math.Cos(2*math.Pi*next()))
	}
	return embed.Normalize(v)
}
