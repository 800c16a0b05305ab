package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/search"
)

func init() { commandFactories = append(commandFactories, newEvalCmd) }

func newEvalCmd(g *globals) *cobra.Command {
	var golden, mode string
	var k int
	var expand, noise bool
	var rrfK, wLex, wSem, wGraph, agree, margin float64
	cmd := &cobra.Command{
		Use:   "eval --golden FILE [--vault DIR]",
		Short: "Measure search quality on a golden set (nDCG, MRR, Hit@n, Recall)",
		Long: "Run every query of a golden set (a JSON array of {id, query, relevant_paths, partial_paths, category}) against the vault " +
			"and report nDCG@5 and nDCG@10 (partial = 0.5), MRR, Hit@1/3/5 and Recall@10, overall and per category, and the queries " +
			"with no relevant note in the first k results. The vault is indexed (with embeddings, unless disabled) first. " +
			"Use it to compare modes and to tune fusion (--rrf-k and the weights; set the winners in the config's search section).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if golden == "" {
				return errs.New(errs.CodeInvalidInput, "--golden is required")
			}
			gs, err := search.LoadGolden(golden)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			vh, err := g.openVault(ctx, false)
			if err != nil {
				return err
			}
			defer vh.Index.Close()
			t0 := time.Now()
			res, err := vh.Index.Sync(ctx, index.SyncOptions{Wait: true})
			if err != nil {
				return err
			}
			if g.format == "text" && res.Indexed+res.Removed > 0 {
				fmt.Fprintf(g.stderr, "loci: indexed %d notes in %s\n", res.Indexed, time.Since(t0).Round(time.Millisecond))
			}
			sc := vh.Index.SearchSettings()
			f := search.Fusion{K: sc.RRFK, Lexical: sc.LexicalWeight, Semantic: sc.SemanticWeight, Graph: sc.GraphWeight, MinSimilarity: sc.MinSimilarity, AgreementFloor: sc.AgreementFloor, LexicalMargin: sc.LexicalMargin}
			set := func(name string, dst *float64, v float64) {
				if cmd.Flags().Changed(name) {
					*dst = v
				}
			}
			set("rrf-k", &f.K, rrfK)
			set("lexical-weight", &f.Lexical, wLex)
			set("semantic-weight", &f.Semantic, wSem)
			set("graph-weight", &f.Graph, wGraph)
			set("agreement-floor", &f.AgreementFloor, agree)
			set("lexical-margin", &f.LexicalMargin, margin)
			s := &search.Searcher{DB: vh.Index.DB, Vectors: vh.Index, Fusion: f, Shared: search.NewShared(vh.Index.DB)}
			if noise {
				s.Vectors = search.NoisyVectors{VectorSource: vh.Index}
			}
			var used string
			run := func(ctx context.Context, q string) ([]string, error) {
				resp, err := s.Search(ctx, search.Query{Text: q, Limit: k, Mode: mode, ExpandLinks: expand})
				if err != nil {
					return nil, err
				}
				used = resp.Mode
				paths := make([]string, len(resp.Results))
				for i, r := range resp.Results {
					paths[i] = r.Path
				}
				return paths, nil
			}
			rep, err := search.Evaluate(ctx, gs, k, run)
			if err != nil {
				return err
			}
			rep.Mode = used
			if expand {
				rep.Mode += "+links"
			}
			if g.format == "json" {
				b, _ := json.MarshalIndent(evalJSON{Report: rep, Fusion: f, Vault: vh.Vault.Root, Golden: golden, Model: modelOf(ctx, vh)}, "", "  ")
				fmt.Fprintln(g.stdout, string(b))
				return nil
			}
			fmt.Fprintf(g.stdout, "golden %s (%d queries), vault %s\n", golden, len(gs), vh.Vault.Root)
			if m := modelOf(ctx, vh); m != "" && used != search.ModeLexical {
				fmt.Fprintf(g.stdout, "vectors %s; fusion k=%g lexical=%g semantic=%g graph=%g agreement_floor=%g lexical_margin=%g\n", m, orDef(f.K, search.DefaultFusion.K),
					orDef(f.Lexical, search.DefaultFusion.Lexical), orDef(f.Semantic, search.DefaultFusion.Semantic), orDef(f.Graph, search.DefaultFusion.Graph),
					orZero(f.AgreementFloor, search.DefaultFusion.AgreementFloor), orZero(f.LexicalMargin, search.DefaultFusion.LexicalMargin))
			}
			fmt.Fprint(g.stdout, rep.Text())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&golden, "golden", "", "golden set file (JSON)")
	fl.StringVar(&mode, "mode", "", "lexical, semantic or hybrid (default: hybrid when the index has vectors)")
	fl.IntVar(&k, "k", 10, "results per query")
	fl.BoolVar(&expand, "expand-links", false, "add linked notes (graph expansion)")
	fl.Float64Var(&rrfK, "rrf-k", 0, "reciprocal rank fusion constant k (default: config search.rrf_k, else 60)")
	fl.Float64Var(&wLex, "lexical-weight", 0, "weight of the lexical ranking in fusion")
	fl.Float64Var(&wSem, "semantic-weight", 0, "weight of the vector ranking in fusion")
	fl.Float64Var(&wGraph, "graph-weight", 0, "share of a top hit's score its linked notes get")
	fl.Float64Var(&margin, "lexical-margin", 0, "hybrid: a lexical hit gains this weight × its BM25 / the best hit's, at rank 1's share (default 0.25; negative: none)")
	fl.Float64Var(&agree, "agreement-floor", 0, "hybrid guard: vectors agreeing with the lexical ranking at most this many standard deviations above chance get no weight (default 2; negative: no guard)")
	// A test harness, not a user setting: query vectors replaced by noise
	// (docs/search.md, "the fusion guard").
	fl.BoolVar(&noise, "noise-vectors", false, "replace every query vector by a seeded random unit vector")
	fl.MarkHidden("noise-vectors")
	return cmd
}

type evalJSON struct {
	*search.Report
	Fusion search.Fusion `json:"fusion"`
	Model  string        `json:"vectors,omitempty"`
	Vault  string        `json:"vault"`
	Golden string        `json:"golden"`
}

func modelOf(ctx context.Context, vh *ops.VaultHandle) string {
	if id, ok := vh.Index.StoredIdentity(ctx); ok {
		return id.String()
	}
	return ""
}

// orZero is v, or d when v is 0 (for settings where a negative value
// means "off").
func orZero(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

func orDef(v, d float64) float64 {
	if v <= 0 {
		return d
	}
	return v
}
