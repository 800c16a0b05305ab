// Package query is the shared model of loci's structured query languages:
// a Result of columns and rows, a detector that tells a query's language
// from its first words, and a registry each language's evaluator plugs
// into (Register in its package's init). The query operation
// (internal/ops/read) dispatches to it; see docs/query.md.
package query

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
)

// Language names.
const (
	Dataview       = "dataview"
	LogseqSimple   = "logseq-simple"
	LogseqAdvanced = "logseq-advanced"
)

// Row is one answer: where it is (the note, the line of a task or block,
// the block's uuid when known) and its column values, in Result.Columns
// order.
type Row struct {
	Path   string `json:"path" jsonschema:"the note the row comes from"`
	Line   int    `json:"line,omitempty" jsonschema:"1-based line of the task or block, when the row is one"`
	Block  string `json:"block,omitempty" jsonschema:"the block's uuid, when known"`
	Values []any  `json:"values" jsonschema:"one value per column, in columns order"`
}

// Result is a query's answer.
type Result struct {
	Language  string   `json:"language" jsonschema:"the language the query was evaluated as"`
	Columns   []string `json:"columns" jsonschema:"column names"`
	Rows      []Row    `json:"rows" jsonschema:"the rows, in the query's order"`
	Truncated bool     `json:"truncated,omitempty" jsonschema:"true when more rows matched than the limit"`
}

// Options are what an evaluator is given besides the query.
type Options struct {
	// Limit caps the rows returned (Truncated says more matched).
	Limit int
	// Visible reports whether a note (by path) may be shown; rows of
	// notes it refuses are dropped before they count against Limit.
	// Nil shows every note.
	Visible func(path string) bool
	// Inputs are the values of a Logseq advanced query's :in variables
	// (JSON values; they replace the query map's :inputs). Nil when not
	// given; other languages take none.
	Inputs []any
}

// Shows reports whether o lets path be shown.
func (o Options) Shows(path string) bool { return o.Visible == nil || o.Visible(path) }

// Evaluator answers queries of one language against an index.
type Evaluator func(ctx context.Context, ix *index.Index, q string, opt Options) (*Result, error)

var (
	mu    sync.RWMutex
	langs = map[string]Evaluator{}
)

// Register adds (or replaces) the evaluator of a language.
func Register(lang string, ev Evaluator) {
	mu.Lock()
	defer mu.Unlock()
	langs[lang] = ev
}

// Languages lists the registered languages, sorted.
func Languages() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(langs))
	for l := range langs {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// Detect tells a query's language from its start: {{query ...}}, a
// leading (, [[page]], #tag or "text" is a Logseq simple query; [:find, a {:title ... :query ...}
// map (any {:key ...}) or #+BEGIN_QUERY a Logseq advanced (Datalog)
// query; LIST, TABLE or TASK a Dataview query. "" when none fits.
func Detect(q string) string {
	s := strings.TrimSpace(q)
	switch {
	case strings.HasPrefix(s, "[") && strings.HasPrefix(strings.TrimLeft(s[1:], " \t\r\n,"), ":find"),
		strings.HasPrefix(s, "{:"), strings.HasPrefix(s, "#+BEGIN_QUERY"):
		return LogseqAdvanced
	case strings.HasPrefix(s, "{{query"), strings.HasPrefix(s, "("),
		// A bare reference or phrase is a whole simple query too.
		strings.HasPrefix(s, "[["), strings.HasPrefix(s, "#"), strings.HasPrefix(s, `"`):
		return LogseqSimple
	}
	w, _, _ := strings.Cut(s, " ")
	w, _, _ = strings.Cut(w, "\n")
	switch strings.ToUpper(w) {
	case "LIST", "TABLE", "TASK", "CALENDAR":
		return Dataview
	}
	return ""
}

// Run evaluates q in lang (detected when lang is "").
func Run(ctx context.Context, ix *index.Index, lang, q string, opt Options) (*Result, error) {
	if lang == "" {
		lang = Detect(q)
		if lang == "" {
			return nil, Unsupported("query language", "cannot tell the query's language: start with LIST, TABLE or TASK (Dataview), {{query ...}} or ( (Logseq simple query), or pass language")
		}
	}
	mu.RLock()
	ev := langs[lang]
	mu.RUnlock()
	if ev == nil {
		return nil, Unsupported("language "+lang, "queries in %s are not supported (supported: %s)", lang, strings.Join(Languages(), ", ")).With("language", lang)
	}
	res, err := ev(ctx, ix, q, opt)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, Timeout()
		}
		return nil, err
	}
	res.Language = lang
	if res.Rows == nil {
		res.Rows = []Row{}
	}
	return res, nil
}

// Unsupported is the unsupported_query error naming construct.
func Unsupported(construct, format string, args ...any) *errs.Error {
	return errs.New(errs.CodeUnsupportedQuery, format, args...).With("construct", construct)
}

// Timeout is the query_timeout error.
func Timeout() *errs.Error {
	return errs.New(errs.CodeQueryTimeout, "the query ran past its timeout (raise timeout_ms or narrow the query)")
}

// Check returns query_timeout once ctx's deadline has passed (evaluators
// call it between rows).
func Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Timeout()
		}
		return err
	}
	return nil
}
