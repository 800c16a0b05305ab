package ops

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/query"
)

// Embedded queries: the {{query ...}}, #+BEGIN_QUERY and ```dataview
// blocks a note holds, which read_note and get_page run on request
// (render_queries) and return beside the note's text (docs/query.md,
// "Embedded queries").

// The budget of one note's embedded queries. Each runs with the query
// operation's defaults (limit and timeout); a note renders at most
// EmbeddedQueryMax of them, and all of them together within
// EmbeddedQueryBudget: the rest are answered with query_skipped.
const (
	EmbeddedQueryMax      = 20
	EmbeddedQueryLimit    = 100             // rows, the query operation's default limit
	EmbeddedQueryTimeout  = 5 * time.Second // the query operation's default timeout_ms
	EmbeddedQueryBudget   = 10 * time.Second
	EmbeddedQueryMaxBytes = 16 << 10 // the query operation's cap on a query's text
)

// embeddedQueryBudget is EmbeddedQueryBudget (tests shorten it).
var embeddedQueryBudget = EmbeddedQueryBudget

// CodeQuerySkipped is the error of an embedded query that was not run: the
// note's budget of queries (count or time) was spent before it.
const CodeQuerySkipped = "query_skipped"

// Languages of embedded blocks besides the query languages.
const langDataviewJS = "dataviewjs"

// EmbeddedQuery is one query a note embeds: where it is, its text, and its
// answer or the reason there is none.
type EmbeddedQuery struct {
	Line     int           `json:"line" jsonschema:"1-based line where the query starts (its {{query, #+BEGIN_QUERY or opening fence)"`
	Block    string        `json:"block,omitempty" jsonschema:"uuid of the Logseq block holding the query, when the block has an id::"`
	Language string        `json:"language" jsonschema:"logseq-simple, logseq-advanced, dataview, or dataviewjs (never run)"`
	Query    string        `json:"query" jsonschema:"the query text, without its {{query }} wrapper, #+BEGIN_QUERY lines or fence"`
	Result   *query.Result `json:"result,omitempty" jsonschema:"the answer, as the query operation gives it"`
	Error    *QueryError   `json:"error,omitempty" jsonschema:"why there is no answer; the note is read all the same"`
}

// QueryError is an embedded query's failure.
type QueryError struct {
	Code    string         `json:"code" jsonschema:"a stable error code: validation_failed, unsupported_query, query_timeout, query_skipped, ..."`
	Message string         `json:"message" jsonschema:"what went wrong, for people"`
	Details map[string]any `json:"details,omitempty" jsonschema:"more about it, e.g. the construct an unsupported_query names"`
}

func queryError(err error) *QueryError {
	e := errs.As(err)
	return &QueryError{Code: e.Code, Message: e.Message, Details: e.Details}
}

// FoundQuery is an embedded query as the scanner finds it.
type FoundQuery struct {
	Line     int    // 1-based line where it starts
	Language string // a query language, or dataviewjs
	Query    string // the text to evaluate
	Err      *errs.Error
}

// ScanQueries finds the queries embedded in a note's text: Logseq
// {{query ...}} macros (outside code), #+BEGIN_QUERY ... #+END_QUERY
// blocks (advanced queries), and fenced ```dataview blocks (```dataviewjs
// is found to be reported unsupported). Fences and BEGIN/END lines may sit
// in a list item or a blockquote (Logseq blocks, Obsidian callouts); the
// frontmatter and other code blocks are skipped. It never fails: a query
// it cannot read (an unclosed {{query or #+BEGIN_QUERY) is found with Err.
func ScanQueries(text string) []FoundQuery {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	var out []FoundQuery
	i := skipFrontmatter(lines)
	for i < len(lines) {
		body := lineBody(lines[i], true)
		start := i + 1
		switch {
		case fenceRun(body) > 0:
			n := fenceRun(body)
			char := body[0]
			info := strings.ToLower(firstWord(body[n:]))
			var buf []string
			for i++; i < len(lines); i++ {
				b := lineBody(lines[i], false)
				if m := fenceRun(b); m >= n && b[0] == char && strings.TrimSpace(b[m:]) == "" {
					break
				}
				buf = append(buf, b)
			}
			i++
			switch info {
			case query.Dataview:
				// An unclosed fence runs to the end of the note (CommonMark).
				out = append(out, FoundQuery{Line: start, Language: query.Dataview, Query: strings.TrimSpace(strings.Join(buf, "\n"))})
			case langDataviewJS:
				out = append(out, FoundQuery{Line: start, Language: langDataviewJS, Query: strings.TrimSpace(strings.Join(buf, "\n")),
					Err: query.Unsupported("dataviewjs", "dataviewjs blocks are JavaScript and are not run; use a Dataview query (```dataview)")})
			}
		case hasPrefixFold(body, "#+BEGIN_QUERY"):
			var buf []string
			if rest := strings.TrimSpace(body[len("#+BEGIN_QUERY"):]); rest != "" {
				buf = append(buf, rest)
			}
			closed := false
			for i++; i < len(lines); i++ {
				b := lineBody(lines[i], false)
				if hasPrefixFold(lineBody(b, true), "#+END_QUERY") {
					closed = true
					break
				}
				buf = append(buf, b)
			}
			i++
			fq := FoundQuery{Line: start, Language: query.LogseqAdvanced, Query: strings.TrimSpace(strings.Join(buf, "\n"))}
			if !closed {
				fq.Err = errs.New(errs.CodeInvalidInput, "#+BEGIN_QUERY at line %d has no #+END_QUERY", start).With("line", start)
			}
			out = append(out, fq)
		case hasPrefixFold(body, "#+BEGIN_SRC"), hasPrefixFold(body, "#+BEGIN_EXAMPLE"):
			end := "#+END_SRC"
			if hasPrefixFold(body, "#+BEGIN_EXAMPLE") {
				end = "#+END_EXAMPLE"
			}
			for i++; i < len(lines) && !hasPrefixFold(lineBody(lines[i], true), end); i++ {
			}
			i++
		default:
			out = append(out, macroQueries(lines[i], start)...)
			i++
		}
	}
	return out
}

// skipFrontmatter returns the index of the first line after a YAML
// frontmatter block (0 when there is none or it is not closed).
func skipFrontmatter(lines []string) int {
	if len(lines) == 0 || strings.TrimRight(lines[0], " \t") != "---" {
		return 0
	}
	for i := 1; i < len(lines); i++ {
		if t := strings.TrimRight(lines[i], " \t"); t == "---" || t == "..." {
			return i + 1
		}
	}
	return 0
}

// lineBody strips what may stand before a block's own text: indentation,
// blockquote markers (Obsidian callouts) and, when bullet is set, one
// list bullet (a Logseq block, a Markdown list item).
func lineBody(l string, bullet bool) string {
	s := strings.TrimLeft(l, " \t")
	for strings.HasPrefix(s, ">") {
		s = strings.TrimLeft(s[1:], " \t")
	}
	if bullet && len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && (s[1] == ' ' || s[1] == '\t') {
		s = strings.TrimLeft(s[2:], " \t")
	}
	return s
}

// fenceRun is the length of the code fence s opens with (three or more
// backticks or tildes), or 0.
func fenceRun(s string) int {
	if s == "" || (s[0] != '`' && s[0] != '~') {
		return 0
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 || (s[0] == '`' && strings.Contains(s[n:], "`")) {
		return 0
	}
	return n
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// macroQueries finds the {{query ...}} macros of one line, outside inline
// code spans. The macro ends at the first }} outside a "string".
func macroQueries(l string, line int) []FoundQuery {
	if !strings.Contains(l, "{{query") {
		return nil
	}
	var out []FoundQuery
	for i := 0; i < len(l); {
		switch {
		case l[i] == '`':
			n := 0
			for i+n < len(l) && l[i+n] == '`' {
				n++
			}
			run := l[i : i+n]
			// A code span closes at the next run of exactly n backticks.
			j := i + n
			closed := -1
			for j < len(l) {
				k := strings.Index(l[j:], run)
				if k < 0 {
					break
				}
				k += j
				e := k + n
				if e < len(l) && l[e] == '`' {
					for e < len(l) && l[e] == '`' {
						e++
					}
					j = e
					continue
				}
				closed = e
				break
			}
			if closed < 0 {
				i += n
			} else {
				i = closed
			}
		case strings.HasPrefix(l[i:], "{{query") && (len(l) == i+7 || l[i+7] == ' ' || l[i+7] == '\t' || l[i+7] == '}'):
			body, end := macroEnd(l, i+7)
			if end < 0 {
				out = append(out, FoundQuery{Line: line, Language: query.LogseqSimple, Query: strings.TrimSpace(l[i+7:]),
					Err: errs.New(errs.CodeInvalidInput, "{{query at line %d is not closed with }}", line).With("line", line)})
				return out
			}
			out = append(out, FoundQuery{Line: line, Language: query.LogseqSimple, Query: strings.TrimSpace(body)})
			i = end
		default:
			i++
		}
	}
	return out
}

// macroEnd finds the }} closing a macro whose arguments start at from:
// the arguments and the index after the }}, or -1.
func macroEnd(l string, from int) (string, int) {
	inStr := false
	for j := from; j < len(l); j++ {
		switch c := l[j]; {
		case inStr && c == '\\':
			j++
		case c == '"':
			inStr = !inStr
		case !inStr && c == '}' && j+1 < len(l) && l[j+1] == '}':
			return l[from:j], j + 2
		}
	}
	return "", -1
}

// RunEmbeddedQueries runs the queries found in a note (lines from..to,
// inclusive, of the note; to 0 means to the end) with the caller's read
// fence and the query operation's limit and timeout, within the note's
// budget. blockAt names the uuid of the block holding a line ("" when
// none). A query that fails has an error entry; it never fails the read.
func RunEmbeddedQueries(ctx context.Context, env *Env, vh *VaultHandle, text string, from, to int, blockAt func(line int) string) []EmbeddedQuery {
	found := ScanQueries(text)
	var out []EmbeddedQuery
	opt := query.Options{Limit: EmbeddedQueryLimit}
	if f := env.ReadFence(ctx, vh); f.Active() {
		opt.Visible = f.Allows
	}
	budget := time.Now().Add(embeddedQueryBudget)
	ran := 0
	for _, fq := range found {
		if fq.Line < from || (to > 0 && fq.Line > to) {
			continue
		}
		e := EmbeddedQuery{Line: fq.Line, Language: fq.Language, Query: fq.Query}
		if blockAt != nil {
			e.Block = blockAt(fq.Line)
		}
		switch {
		case fq.Err != nil:
			e.Error = queryError(fq.Err)
		case strings.TrimSpace(fq.Query) == "":
			e.Error = queryError(errs.New(errs.CodeInvalidInput, "the query at line %d is empty", fq.Line).With("line", fq.Line))
		case len(fq.Query) > EmbeddedQueryMaxBytes || !utf8.ValidString(fq.Query):
			e.Error = queryError(errs.New(errs.CodeInvalidInput, "the query at line %d is over 16 KiB or not UTF-8 text", fq.Line).With("line", fq.Line))
		case ran >= EmbeddedQueryMax:
			e.Error = queryError(errs.New(CodeQuerySkipped, "not run: a note renders at most %d embedded queries; run this one with the query operation", EmbeddedQueryMax).
				With("max_queries", EmbeddedQueryMax))
		case !time.Now().Before(budget):
			e.Error = queryError(errs.New(CodeQuerySkipped, "not run: the note's embedded queries used their %s together; run this one with the query operation", embeddedQueryBudget).
				With("budget_ms", embeddedQueryBudget.Milliseconds()))
		default:
			ran++
			e.Result, e.Error = runEmbedded(ctx, vh, fq, opt, min(EmbeddedQueryTimeout, time.Until(budget)))
		}
		out = append(out, e)
	}
	return out
}

func runEmbedded(ctx context.Context, vh *VaultHandle, fq FoundQuery, opt query.Options, timeout time.Duration) (*query.Result, *QueryError) {
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := query.Run(qctx, vh.Index, fq.Language, fq.Query, opt)
	if err != nil {
		if qctx.Err() != nil && ctx.Err() == nil && errs.Code(err) == errs.CodeInternal {
			err = query.Timeout()
		}
		return nil, queryError(err)
	}
	return res, nil
}

// BlockAt returns the blockAt of RunEmbeddedQueries for blocks given by
// their line ranges and uuids: the uuid of the block whose own lines
// (bullet to end_line, not its children) hold the line.
func BlockAt(n int, span func(i int) (line, end int, uuid string)) func(int) string {
	return func(l int) string {
		for i := 0; i < n; i++ {
			if s, e, u := span(i); s <= l && l <= max(s, e) {
				return u
			}
		}
		return ""
	}
}

// EmbeddedQueriesText renders embedded queries for the CLI: each query's
// place and text, then its table or its error.
func EmbeddedQueriesText(qs []EmbeddedQuery) string {
	var b strings.Builder
	for _, q := range qs {
		fmt.Fprintf(&b, "\n── query at line %d (%s)", q.Line, q.Language)
		if q.Block != "" {
			fmt.Fprintf(&b, ", block %s", q.Block)
		}
		b.WriteString("\n")
		for _, l := range strings.Split(q.Query, "\n") {
			b.WriteString("   " + l + "\n")
		}
		if q.Error != nil {
			fmt.Fprintf(&b, "error %s: %s\n", q.Error.Code, q.Error.Message)
			continue
		}
		b.WriteString(QueryTable(q.Result, ""))
	}
	return b.String()
}

// QueryTable renders a query result as an aligned text table, each row's
// location (path, and :line for a task or block) first; long cells are
// cut (the JSON output has them whole). more follows "more matched" when
// the result was truncated (a hint such as " (raise --limit)").
func QueryTable(r *query.Result, more string) string {
	if r == nil {
		return ""
	}
	head := append([]string{"Location"}, r.Columns...)
	rows := [][]string{head}
	for _, row := range r.Rows {
		loc := row.Path
		if row.Line > 0 {
			loc = fmt.Sprintf("%s:%d", row.Path, row.Line)
		}
		line := []string{loc}
		for _, v := range row.Values {
			c := QueryCell(v)
			if r := []rune(c); len(r) > 80 {
				c = string(r[:79]) + "…"
			}
			line = append(line, c)
		}
		rows = append(rows, line)
	}
	width := make([]int, len(head))
	for _, row := range rows {
		for i, c := range row {
			if i < len(width) {
				width[i] = max(width[i], min(utf8.RuneCountInString(c), 60))
			}
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			if i == len(row)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", max(0, width[min(i, len(width)-1)]-utf8.RuneCountInString(c))))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%d row(s)", len(r.Rows))
	if r.Truncated {
		b.WriteString(", more matched" + more)
	}
	b.WriteString("\n")
	return b.String()
}

// QueryCell renders one value of a query result as one line of text.
func QueryCell(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		return strings.ReplaceAll(v, "\n", " ")
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = QueryCell(x)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// A pulled entity or a property map: key: value; ... (nested
		// maps in braces).
		parts := make([]string, len(keys))
		for i, k := range keys {
			c := QueryCell(v[k])
			if _, nested := v[k].(map[string]any); nested {
				c = "{" + c + "}"
			}
			parts[i] = k + ": " + c
		}
		return strings.Join(parts, "; ")
	}
	return strings.ReplaceAll(fmt.Sprint(v), "\n", " ")
}
