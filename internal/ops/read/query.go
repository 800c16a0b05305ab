package read

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/ops"
	"github.com/loci-dev/loci/internal/query"
	_ "github.com/loci-dev/loci/internal/query/datalog"  // registers the logseq-advanced language
	_ "github.com/loci-dev/loci/internal/query/dataview" // registers the dataview language
	_ "github.com/loci-dev/loci/internal/query/lsimple"  // registers the logseq-simple language
)

func init() {
	for _, l := range query.Languages() {
		if !contains(ops.QueryLanguages, l) {
			ops.QueryLanguages = append(ops.QueryLanguages, l)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// QueryIn is the input of query.
type QueryIn struct {
	Query     string `json:"query" jsonschema:"the query, e.g. TASK FROM \"Projects\" WHERE !completed (Dataview); its language is told from its start unless language is given"`
	Language  string `json:"language,omitempty" jsonschema:"dataview, logseq-simple or logseq-advanced (default: detected from the query)"`
	Limit     int    `json:"limit,omitempty" jsonschema:"rows returned, 1-1000 (default 100); truncated says when more matched"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"give up after this many milliseconds, 1-60000 (default 5000)"`
	Inputs    []any  `json:"inputs,omitempty" jsonschema:"logseq-advanced only: the values of the query's :in variables after $, replacing its :inputs; strings starting with : are keywords (\":today\", \":-7d\")"`
	Vault     string `json:"vault,omitempty" jsonschema:"vault name (default: the first)"`
}

// Validate checks the sizes and ranges.
func (in *QueryIn) Validate() error {
	if strings.TrimSpace(in.Query) == "" {
		return errs.New(errs.CodeInvalidInput, "query is empty")
	}
	if len(in.Query) > 16<<10 || !utf8.ValidString(in.Query) {
		return errs.New(errs.CodeInvalidInput, "query must be UTF-8 text of at most 16 KiB")
	}
	if len(in.Language) > 64 {
		return errs.New(errs.CodeInvalidInput, "language is too long")
	}
	if in.TimeoutMS < 0 || in.TimeoutMS > 60000 {
		return errs.New(errs.CodeInvalidInput, "timeout_ms must be between 1 and 60000").With("timeout_ms", in.TimeoutMS)
	}
	if in.Inputs != nil {
		lang := strings.ToLower(strings.TrimSpace(in.Language))
		if lang == "" {
			lang = query.Detect(in.Query)
		}
		if lang != query.LogseqAdvanced {
			return errs.New(errs.CodeInvalidInput, "inputs are given only to logseq-advanced queries")
		}
		if len(in.Inputs) > 64 {
			return errs.New(errs.CodeInvalidInput, "at most 64 inputs").With("inputs", len(in.Inputs))
		}
	}
	return ops.CheckLimit(in.Limit, 1000)
}

// QueryOut is the output of query.
type QueryOut struct {
	query.Result
}

// Query is the query operation.
func Query() ops.Def[QueryIn, QueryOut] {
	return ops.Def[QueryIn, QueryOut]{
		Name:  "query",
		Title: "Run a structured query",
		Description: "Run a structured query over the index and get a table: columns, and rows that each carry the note's path (and the line and block uuid of a task or block). " +
			"Dataview's LIST, TABLE and TASK queries with FROM (#tag, \"folder\", [[note]], outgoing([[note]]), and/or/-), WHERE, SORT, LIMIT, GROUP BY and FLATTEN, frontmatter and inline fields (key:: value) are answered; " +
			"Logseq simple queries ({{query ...}}) and advanced queries ([:find ...] Datalog, with inputs) are answered too; " +
			"a construct outside the supported subset is an unsupported_query error naming it (docs/query.md). Notes hidden from the caller never appear.",
		Annotations: ops.Annotations{ReadOnly: true, Idempotent: true},
		CLI:         ops.CLI{Use: "query", Args: []string{"query"}, Text: textQuery},
		Errors:      []string{errs.CodeInvalidInput, errs.CodeVaultNotFound, errs.CodeUnsupportedQuery, errs.CodeQueryTimeout},
		Example:     `{"query": "TABLE status, due FROM #project WHERE status != \"done\" SORT due ASC"}`,
		Handler: func(ctx context.Context, env *ops.Env, in *QueryIn) (*QueryOut, error) {
			vh, err := env.Vault(in.Vault)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(ctx, time.Duration(ops.OrDefault(in.TimeoutMS, int(ops.EmbeddedQueryTimeout/time.Millisecond)))*time.Millisecond)
			defer cancel()
			opt := query.Options{Limit: ops.OrDefault(in.Limit, ops.EmbeddedQueryLimit), Inputs: in.Inputs}
			if f := env.ReadFence(ctx, vh); f.Active() {
				opt.Visible = f.Allows
			}
			res, err := query.Run(ctx, vh.Index, strings.ToLower(strings.TrimSpace(in.Language)), in.Query, opt)
			if err != nil {
				if ctx.Err() != nil && errs.Code(err) == errs.CodeInternal {
					return nil, query.Timeout()
				}
				return nil, err
			}
			return &QueryOut{Result: *res}, nil
		},
	}
}

// textQuery renders the result as ops.QueryTable does, with a hint to
// raise --limit when more matched.
func textQuery(o any) string {
	return ops.QueryTable(&o.(*QueryOut).Result, " (raise --limit)")
}
