package search

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/loci-dev/loci/internal/embed"
	"github.com/loci-dev/loci/internal/errs"
)

// Retrieval modes.
const (
	ModeLexical  = "lexical"
	ModeSemantic = "semantic"
	ModeHybrid   = "hybrid"
)

// VectorSource gives the searcher its vectors; *index.Index implements it.
type VectorSource interface {
	// HasVectors reports whether semantic search can run (an error means
	// the vectors exist but cannot be used, e.g. a model mismatch).
	HasVectors(ctx context.Context) (bool, error)
	// VectorMatrix returns every chunk's vector, in memory.
	VectorMatrix(ctx context.Context) (*embed.Matrix, error)
	// EmbedQuery embeds a query in the index's vector space.
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// Fusion tunes hybrid ranking. A note's score is the reciprocal rank fusion
// Lexical/(K+lexical rank) + Semantic/(K+vector rank), plus the lexical
// margin term (LexicalMargin); with graph expansion a note linked from or
// to one of the top hits gains Graph × that hit's score.
type Fusion struct {
	K        float64 `json:"k"`
	Lexical  float64 `json:"lexical_weight"`
	Semantic float64 `json:"semantic_weight"`
	Graph    float64 `json:"graph_weight"`
	// MinSimilarity is the cosine below which a note does not enter the
	// vector ranking (it keeps gibberish and off-topic queries from
	// returning the "least unrelated" notes).
	MinSimilarity float64 `json:"min_similarity"`
	// AgreementFloor guards hybrid ranking against a vector side that
	// knows nothing about the query (see agreementGate): the semantic
	// weight is 0 when the vectors' agreement with the lexical ranking is
	// at most this many standard deviations above chance, full from one
	// more, linear between. Negative: no guard.
	AgreementFloor float64 `json:"agreement_floor"`
	// LexicalMargin gives back to the lexical side the margin that ranks
	// alone throw away: each lexical hit gains Lexical × LexicalMargin ×
	// (its BM25 / the best hit's BM25) / (K+1), so a note that wins the
	// lexical ranking by a wide score margin is not overtaken on ranks
	// alone, while lexical hits of near-equal scores are still reordered
	// by the vectors. Negative: none.
	LexicalMargin float64 `json:"lexical_margin"`
}

// DefaultFusion is the fusion used when nothing is configured (chosen on
// the golden sets; docs/search.md).
var DefaultFusion = Fusion{K: 20, Lexical: 1, Semantic: 0.5, Graph: 0.5, MinSimilarity: 0.2, AgreementFloor: 2, LexicalMargin: 0.25}

// withDefaults fills zero fields from DefaultFusion.
func (f Fusion) withDefaults() Fusion {
	if f.K <= 0 {
		f.K = DefaultFusion.K
	}
	if f.Lexical <= 0 {
		f.Lexical = DefaultFusion.Lexical
	}
	if f.Semantic <= 0 {
		f.Semantic = DefaultFusion.Semantic
	}
	if f.Graph <= 0 {
		f.Graph = DefaultFusion.Graph
	}
	if f.MinSimilarity == 0 {
		f.MinSimilarity = DefaultFusion.MinSimilarity
	}
	if f.AgreementFloor == 0 {
		f.AgreementFloor = DefaultFusion.AgreementFloor
	}
	if f.LexicalMargin == 0 {
		f.LexicalMargin = DefaultFusion.LexicalMargin
	}
	return f
}

// Explain tells where a result's score came from.
type Explain struct {
	// LexicalRank is the note's rank in the BM25 list (0: not in it).
	LexicalRank int `json:"lexical_rank,omitempty"`
	// LexicalScore is its BM25 score (higher is better).
	LexicalScore float64 `json:"lexical_score,omitempty"`
	// LexicalAnchorScore and LexicalDescriptionScore are the parts of
	// LexicalScore from the note's anchor text and description (weighted
	// BM25, before the title coverage factor; fields.go).
	LexicalAnchorScore      float64 `json:"lexical_anchor_score,omitempty"`
	LexicalDescriptionScore float64 `json:"lexical_description_score,omitempty"`
	// VectorRank is its rank by cosine similarity (0: not in the list).
	VectorRank int `json:"vector_rank,omitempty"`
	// VectorScore is the cosine of its best chunk with the query.
	VectorScore float64 `json:"vector_score,omitempty"`
	// Graph is what links from or to the top hits added.
	Graph float64 `json:"graph,omitempty"`
	// Via lists the top hits that link to or from the note.
	Via []string `json:"via,omitempty"`
	// Fused is the final score.
	Fused float64 `json:"fused"`
	// SemanticWeight is the weight the query's vector ranking had in the
	// fusion (hybrid mode): the configured semantic weight, lowered down
	// to 0 when the vectors did not agree with the lexical ranking (the
	// fusion guard; docs/search.md).
	SemanticWeight *float64 `json:"semantic_weight,omitempty"`
}

// seeds is how many top hits graph expansion starts from.
const seeds = 5

// neighborsPerSeed bounds what one hub note can bring in.
const neighborsPerSeed = 25

func (s *Searcher) resolveMode(ctx context.Context, mode string) (string, error) {
	switch mode {
	case "", ModeLexical, ModeSemantic, ModeHybrid:
	default:
		return "", errs.New(errs.CodeInvalidInput, "unknown mode %q (lexical, semantic, hybrid)", mode).With("mode", mode)
	}
	if mode == ModeLexical {
		return mode, nil
	}
	if s.Vectors == nil {
		if mode == "" {
			return ModeLexical, nil
		}
		return "", errs.New(errs.CodeEmbedUnavailable, "mode %s needs embeddings, which are not available here; use mode lexical", mode).With("mode", mode)
	}
	ok, err := s.Vectors.HasVectors(ctx)
	if err != nil {
		return "", err
	}
	if !ok {
		if mode == "" {
			return ModeLexical, nil
		}
		// Let the source say why (disabled, no vectors yet).
		if _, err := s.Vectors.VectorMatrix(ctx); err != nil {
			return "", err
		}
		return "", errs.New(errs.CodeEmbedUnavailable, "mode %s needs vectors; run `loci index`", mode)
	}
	if mode == "" {
		return s.defaultMode(ctx), nil
	}
	return mode, nil
}

type fusedNote struct {
	note      int64
	chunk     int64 // group_by section: the section (the unit ranked)
	lex       *hit
	lexRank   int
	vec       *embed.NoteHit
	vecRank   int
	graph     float64
	via       []int64
	score     float64
	firstSeen int
}

// fused runs the lexical and/or vector retrievers, fuses their rankings,
// expands along links when asked, and returns one page. terms is the whole
// query (embedded), lex what FTS5 matches and the snippets highlight.
func (s *Searcher) fused(ctx context.Context, q Query, mode string, terms, lex []term) (*Response, error) {
	f := s.Fusion
	if q.Fusion != nil {
		f = *q.Fusion
	}
	f = f.withDefaults()
	strict, relaxed := buildMatch(lex)
	resp := &Response{Results: []Result{}, Mode: mode}
	keep, err := s.filter(ctx, q)
	if err != nil {
		return nil, err
	}
	want := q.Offset + q.Limit
	cand := max(50, 2*(want+1))
	notes := map[int64]*fusedNote{}
	bySection := q.GroupBy == GroupSection
	// get returns the ranked unit of a hit: its note, or with bySection
	// its section (notes is then keyed by chunk id).
	get := func(id, chunk int64) *fusedNote {
		key := id
		if bySection {
			key = chunk
		}
		n := notes[key]
		if n == nil {
			n = &fusedNote{note: id, firstSeen: len(notes)}
			if bySection {
				n.chunk = chunk
			}
			notes[key] = n
		}
		return n
	}
	more := false
	semWeight := -1.0    // the vector ranking's weight, once known
	var lexNotes []int64 // the lexical ranking's first distinct notes (agreementGate)
	// The vector side (embedding the query, its exclusions, scoring every
	// section) needs nothing from the lexical one: in hybrid mode it runs
	// beside it, on another core, and the two meet for the fusion.
	var vecDone chan vecSide
	if mode != ModeLexical && strings.TrimSpace(q.Text) != "" {
		vecDone = make(chan vecSide, 1)
		run := func() { vecDone <- s.vectorSide(ctx, q, terms, lex, keep, cand, bySection) }
		if mode == ModeHybrid && strict != "" {
			go run()
		} else {
			run()
		}
	}
	if mode != ModeSemantic && strict != "" {
		hits, skipped, err := s.lexHits(ctx, lex, strict, relaxed, keep, cand, bySection)
		if err != nil {
			if vecDone != nil {
				<-vecDone // let it finish before the caller goes on
			}
			return nil, err
		}
		more = more || skipped || len(hits) > cand
		best := 0.0 // the best BM25 of the lexical hits (scores are negated)
		for i := range hits {
			best = max(best, -hits[i].score)
		}
		for i := range hits {
			n := get(hits[i].note, hits[i].chunk)
			n.lex, n.lexRank = &hits[i], i+1
			n.score += f.Lexical / (f.K + float64(i+1))
			if f.LexicalMargin > 0 && best > 0 {
				n.score += f.Lexical * f.LexicalMargin * (-hits[i].score / best) / (f.K + 1)
			}
			if len(lexNotes) < agreementNotes && !slices.Contains(lexNotes, hits[i].note) {
				lexNotes = append(lexNotes, hits[i].note)
			}
		}
	}
	if vecDone != nil {
		v := <-vecDone
		if v.err != nil {
			return nil, v.err
		}
		vhits := v.hits
		more = more || (len(vhits) > cand && float64(vhits[cand].Score) >= f.MinSimilarity)
		wsem := f.Semantic * agreementGate(f, v.st, lexNotes)
		semWeight = wsem
		for i := range vhits {
			if i == cand || float64(vhits[i].Score) < f.MinSimilarity {
				break
			}
			n := get(vhits[i].Note, vhits[i].Chunk)
			n.vec, n.vecRank = &vhits[i], i+1
			n.score += wsem / (f.K + float64(i+1))
		}
	}
	list := make([]*fusedNote, 0, len(notes))
	for _, n := range notes {
		list = append(list, n)
	}
	sortFused(list)
	if q.ExpandLinks && len(list) > 0 {
		if list, err = s.expand(ctx, list, notes, f, keep); err != nil {
			return nil, err
		}
	}
	if len(list) > want || more {
		resp.HasMore = len(list) > want || more
	}
	if q.Offset >= len(list) {
		resp.HasMore = false
		return resp, nil
	}
	list = list[q.Offset:min(len(list), want)]
	// Paths of the seeds, for explain's via.
	var seedPaths map[int64]string
	if q.Explain && q.ExpandLinks {
		seedPaths = map[int64]string{}
		for _, n := range list {
			for _, v := range n.via {
				seedPaths[v] = ""
			}
		}
		for id := range seedPaths {
			var p string
			s.DB.QueryRowContext(ctx, "SELECT path FROM notes WHERE id=?", id).Scan(&p)
			seedPaths[id] = p
		}
	}
	hl := highlighter(lex)
	rs := make([]Result, 0, len(list))
	for _, n := range list {
		r := Result{NoteID: n.note, Score: round6(n.score)}
		switch {
		case n.lex != nil:
			r.ChunkID, r.Matched = n.lex.chunk, n.lex.matched
		case n.vec != nil:
			r.ChunkID, r.Matched = n.vec.Chunk, "semantic"
		default:
			r.Matched = "link"
			if err := s.queryRow(ctx, "SELECT id FROM chunks WHERE note_id=? ORDER BY seq LIMIT 1", n.note).Scan(&r.ChunkID); err != nil {
				continue
			}
		}
		if mode == ModeLexical && !q.ExpandLinks && n.lex != nil {
			r.Score = round3(-n.lex.score) // lexical mode keeps BM25 scores
		}
		if q.Explain {
			e := &Explain{LexicalRank: n.lexRank, VectorRank: n.vecRank, Graph: round6(n.graph), Fused: round6(n.score)}
			if n.lex != nil {
				e.LexicalScore = round3(-n.lex.score)
				e.LexicalAnchorScore, e.LexicalDescriptionScore = round3(-n.lex.anchor), round3(-n.lex.desc)
			}
			if n.vec != nil {
				e.VectorScore = round6(float64(n.vec.Score))
			}
			for _, v := range n.via {
				e.Via = append(e.Via, seedPaths[v])
			}
			if mode == ModeHybrid && semWeight >= 0 {
				w := round6(semWeight)
				e.SemanticWeight = &w
			}
			r.Explain = e
		}
		rs = append(rs, r)
	}
	if resp.Results, err = s.fillAll(ctx, q, rs, hl); err != nil {
		return nil, err
	}
	return resp, s.blockUUIDs(ctx, q, resp.Results)
}

// vecSide is what the vector retriever found: the cand+1 best notes (or
// sections) by cosine and the score statistics of the query.
type vecSide struct {
	hits []embed.NoteHit
	st   embed.ScoreStats
	err  error
}

// vectorSide embeds the query and ranks every section (or note) by cosine,
// leaving out the notes keep refuses and those with an -excluded term. It
// may run on its own goroutine (fused): a panic comes back as an error.
func (s *Searcher) vectorSide(ctx context.Context, q Query, terms, lex []term, keep func(int64) bool, cand int, bySection bool) (v vecSide) {
	defer func() {
		if p := recover(); p != nil {
			v = vecSide{err: errs.New(errs.CodeInternal, "vector search failed: %v", p)}
		}
	}()
	m, err := s.Vectors.VectorMatrix(ctx)
	if err != nil {
		return vecSide{err: err}
	}
	qv, err := s.Vectors.EmbedQuery(ctx, semanticText(terms, q.Text))
	if err != nil {
		return vecSide{err: err}
	}
	excluded, err := s.excluded(ctx, lex)
	if err != nil {
		return vecSide{err: err}
	}
	var allow func(int64) bool
	if keep != nil || excluded != nil {
		allow = func(id int64) bool { return (keep == nil || keep(id)) && !excluded[id] }
	}
	if bySection {
		v.hits, v.st = m.TopChunksStats(qv, cand+1, allow)
	} else {
		v.hits, v.st = m.TopNotesStats(qv, cand+1, allow)
	}
	return v
}

func sortFused(list []*fusedNote) {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.score != b.score {
			return a.score > b.score
		}
		ra, rb := bestRank(a), bestRank(b)
		if ra != rb {
			return ra < rb
		}
		if a.note != b.note {
			return a.note < b.note
		}
		return a.chunk < b.chunk
	})
}

func bestRank(n *fusedNote) int {
	r := math.MaxInt
	if n.lexRank > 0 {
		r = n.lexRank
	}
	if n.vecRank > 0 && n.vecRank < r {
		r = n.vecRank
	}
	return r
}

// expand adds graph contributions: each note linked from or to one of the
// top hits (the seeds) gains Graph × the seed's score (the best seed's, when
// several link to it), joining the list if it was not in it.
func (s *Searcher) expand(ctx context.Context, list []*fusedNote, notes map[int64]*fusedNote, f Fusion, keep func(int64) bool) ([]*fusedNote, error) {
	nseed := min(seeds, len(list))
	seedScore := map[int64]float64{}
	args := make([]any, 0, 2*nseed)
	for _, n := range list[:nseed] {
		seedScore[n.note] = n.score
		args = append(args, n.note)
	}
	args = append(args, args...)
	in := strings.TrimSuffix(strings.Repeat("?,", nseed), ",")
	rows, err := s.DB.QueryContext(ctx, `SELECT seed, other, COUNT(*) FROM (
		SELECT src_id AS seed, dst_id AS other FROM links WHERE src_id IN (`+in+`) AND dst_id IS NOT NULL AND dst_id != src_id
		UNION ALL SELECT dst_id, src_id FROM links WHERE dst_id IN (`+in+`) AND src_id != dst_id)
		GROUP BY seed, other ORDER BY seed, COUNT(*) DESC, other`, args...)
	if err != nil {
		return nil, err
	}
	type link struct{ seed, other int64 }
	var links []link
	perSeed := map[int64]int{}
	for rows.Next() {
		var l link
		var c int
		if err := rows.Scan(&l.seed, &l.other, &c); err != nil {
			rows.Close()
			return nil, err
		}
		if perSeed[l.seed] >= neighborsPerSeed || (keep != nil && !keep(l.other)) {
			continue
		}
		perSeed[l.seed]++
		links = append(links, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	gain := map[int64]float64{}
	for _, l := range links {
		g := f.Graph * seedScore[l.seed]
		gain[l.other] = max(gain[l.other], g)
		n := notes[l.other]
		if n == nil {
			n = &fusedNote{note: l.other, firstSeen: len(notes)}
			notes[l.other] = n
			list = append(list, n)
		}
		n.via = append(n.via, l.seed)
	}
	for id, g := range gain {
		n := notes[id]
		n.graph = g
		n.score += g
	}
	sortFused(list)
	return list, nil
}

// semanticText is what gets embedded for a query: its words without the
// excluded terms and without the query syntax.
func semanticText(terms []term, raw string) string {
	var parts []string
	for _, t := range terms {
		if t.neg {
			continue
		}
		for _, w := range t.words {
			parts = append(parts, w.Text)
		}
	}
	if len(parts) == 0 {
		return raw
	}
	return strings.Join(parts, " ")
}

// excluded returns the notes that contain an -excluded term (nil when none
// is given), so semantic results honour exclusions like lexical ones.
func (s *Searcher) excluded(ctx context.Context, terms []term) (map[int64]bool, error) {
	var neg []string
	for _, t := range terms {
		if t.neg {
			neg = append(neg, ftsTerm(t))
		}
	}
	if len(neg) == 0 {
		return nil, nil
	}
	rows, err := s.query(ctx, `SELECT DISTINCT c.note_id FROM chunks_fts f JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ?`, strings.Join(neg, " OR "))
	if err != nil {
		return nil, errs.Wrap(err, errs.CodeInternal, "search failed")
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }

// agreementNotes is how many of the lexical ranking's first notes the
// agreement is measured on.
const agreementNotes = 10

// agreementGate is the share (0 to 1) of the semantic weight a query's
// vector ranking gets in hybrid fusion. The semantic side must not make a
// query worse than lexical alone, and a vector that carries nothing about
// the query (a model that does not know the vault's language or domain; in
// the limit, a random direction) re-ranks the lexical hits at random. It
// can be told apart by what it thinks of the lexical ranking's first
// notes: a vector that understands the query finds them, as a group,
// closer to it than the vault at large, while a random one does not. The
// agreement (embed.ScoreStats.Agreement) is that group's excess cosine in
// standard deviations of its value under a random query direction, so it
// is ≈ N(0, 1) for noise whatever the vault or model. The gate is 0 up to
// AgreementFloor, 1 from AgreementFloor+1, linear between. A query with no
// lexical hit has nothing to protect: the vectors keep their full weight.
func agreementGate(f Fusion, st embed.ScoreStats, lexNotes []int64) float64 {
	if f.AgreementFloor < 0 || len(lexNotes) == 0 {
		return 1
	}
	a := st.Agreement(lexNotes)
	if math.IsNaN(a) {
		return 0 // no vector to judge by: lexical alone
	}
	return min(1, max(0, a-f.AgreementFloor))
}
