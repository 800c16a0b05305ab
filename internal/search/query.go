// Package search answers queries from the index: BM25 over FTS5 with one
// result per note, filters, and snippets cut from the original text.
package search

import (
	"strings"
	"unicode/utf8"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/textseg"
)

// term is one parsed query element.
type term struct {
	words  []textseg.Word
	phrase bool // written in double quotes
	prefix bool // ended with '*'
	neg    bool // started with '-'
}

// Limits on what one query may ask for. Every path a query takes (parsing,
// the FTS5 expressions, the strict and relaxed passes, the common-term
// counts, exclusions, highlighting, the query embedding) is linear in the
// query's size, and these bound the size, so no query a client can send
// costs more than a few hundred milliseconds on a vault of 6,500 notes
// (docs/search.md, "Limits"). Past a limit the query fails with
// invalid_input (validation_failed) and says which limit.
const (
	// MaxQueryBytes bounds the query text.
	MaxQueryBytes = 4096
	// MaxTerms bounds the distinct terms (words, "phrases", prefix*,
	// -exclusions); repeated terms count once.
	MaxTerms = 32
	// MaxTokens bounds the tokens FTS5 matches, over all terms: a phrase
	// counts each word, an unspaced (CJK, Thai, ...) run each character pair.
	MaxTokens = 64
	// MaxPrefixTerms bounds the prefix* terms (each expands over the
	// vocabulary; a one-letter prefix matches a large part of it).
	MaxPrefixTerms = 4
	// MaxFilterValues bounds the tags and the frontmatter filters.
	MaxFilterValues = 32
	// MaxPathGlobBytes bounds the path glob.
	MaxPathGlobBytes = 512
	// MaxOffset bounds how deep a client may page.
	MaxOffset = 10000
)

// compileQuery parses a query and checks it against the limits: the
// query of lexical mode, where FTS5 matches every term.
func compileQuery(q string) ([]term, error) {
	if err := checkBytes(q); err != nil {
		return nil, err
	}
	terms := parseQuery(q)
	if err := checkTerms(terms, "the query has"); err != nil {
		return nil, err
	}
	return terms, nil
}

// compileSemantic parses the query of semantic and hybrid modes. Its words
// are embedded whole (a cost bounded by MaxQueryBytes); only its
// -exclusions must all reach FTS5, so only they are held to the limits on
// terms. Hybrid's BM25 half matches lexicalPart(terms).
func compileSemantic(q string) ([]term, error) {
	if err := checkBytes(q); err != nil {
		return nil, err
	}
	terms := parseQuery(q)
	var neg []term
	for _, t := range terms {
		if t.neg {
			neg = append(neg, t)
		}
	}
	if err := checkTerms(neg, "the query's -exclusions have"); err != nil {
		return nil, err
	}
	return terms, nil
}

func checkBytes(q string) error {
	if len(q) > MaxQueryBytes {
		return errs.New(errs.CodeInvalidInput, "the query is %d bytes long; at most %d are accepted", len(q), MaxQueryBytes).
			With("bytes", len(q)).With("max_bytes", MaxQueryBytes)
	}
	return nil
}

// checkTerms holds terms to the limits on terms, tokens and prefixes; what
// starts the message ("the query has").
func checkTerms(terms []term, what string) error {
	if len(terms) > MaxTerms {
		return errs.New(errs.CodeInvalidInput, "%s %d distinct terms; at most %d are accepted", what, len(terms), MaxTerms).
			With("terms", len(terms)).With("max_terms", MaxTerms)
	}
	tokens, prefixes := 0, 0
	for _, t := range terms {
		tokens += termTokens(t)
		if t.prefix {
			prefixes++
		}
	}
	if tokens > MaxTokens {
		return errs.New(errs.CodeInvalidInput, "%s %d words to match (each word of a phrase and each character pair of Chinese, Japanese, Korean or Thai text counts); at most %d are accepted", what, tokens, MaxTokens).
			With("tokens", tokens).With("max_tokens", MaxTokens)
	}
	if prefixes > MaxPrefixTerms {
		return errs.New(errs.CodeInvalidInput, "%s %d prefix* terms; at most %d are accepted", what, prefixes, MaxPrefixTerms).
			With("prefix_terms", prefixes).With("max_prefix_terms", MaxPrefixTerms)
	}
	return nil
}

// lexicalPart is what FTS5 matches of a semantic-mode query (hybrid's BM25
// half, the highlighted words): every -exclusion (compileSemantic checked
// them), then its other terms in order while they fit the limits; a
// term that does not fit is left out (an unspaced run too long for the
// tokens left is cut to its start). Unlike ClipQuery on the text, it
// never drops an exclusion, so excluded notes stay out of both halves.
func lexicalPart(terms []term) []term {
	keep := make([]bool, len(terms))
	n, tokens, prefixes := 0, 0, 0
	for i, t := range terms {
		if t.neg {
			keep[i] = true
			n++
			tokens += termTokens(t)
			if t.prefix {
				prefixes++
			}
		}
	}
	out := make([]term, 0, len(terms))
	for i, t := range terms {
		if !t.neg && n < MaxTerms && (!t.prefix || prefixes < MaxPrefixTerms) {
			left := MaxTokens - tokens
			if tk := termTokens(t); tk > left && left >= 1 && len(t.words) == 1 && t.words[0].Segmented {
				r := []rune(t.words[0].Text)
				t.words = []textseg.Word{{Text: string(r[:left+1]), Segmented: true}}
			}
			if tk := termTokens(t); tk <= left {
				keep[i] = true
				n++
				tokens += tk
				if t.prefix {
					prefixes++
				}
			}
		}
		if keep[i] {
			out = append(out, t)
		}
	}
	return out
}

// termTokens is the number of FTS5 tokens a term becomes (see ftsTerm).
func termTokens(t term) int {
	n := 0
	for _, w := range t.words {
		if w.Segmented {
			n += max(1, utf8.RuneCountInString(w.Text)-1)
		} else {
			n++
		}
	}
	return n
}

// parseQuery splits a user query into terms, each distinct term once
// (FTS5 is case- and accent-insensitive, so "Note" repeats "note"). It
// accepts any input: FTS5 syntax characters are treated as separators,
// never passed through. Supported syntax: "exact phrase", prefix*,
// -excluded. It is linear in the length of q.
func parseQuery(q string) []term {
	var terms []term
	seen := map[string]bool{}
	i := 0
	for i < len(q) {
		c := q[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
			continue
		}
		t := term{}
		if c == '-' && i+1 < len(q) && q[i+1] != ' ' && q[i+1] != '-' {
			t.neg = true
			i++
			c = q[i]
		}
		var raw string
		if c == '"' {
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				raw = q[i+1:]
				i = len(q)
			} else {
				raw = q[i+1 : i+1+end]
				i = i + 2 + end
			}
			t.phrase = true
			if i < len(q) && q[i] == '*' {
				t.prefix = true
				i++
			}
		} else {
			end := i
			for end < len(q) && q[end] != ' ' && q[end] != '\t' && q[end] != '\n' && q[end] != '\r' && q[end] != '"' {
				end++
			}
			raw = q[i:end]
			i = end
			if strings.HasSuffix(raw, "*") {
				t.prefix = true
				raw = strings.TrimRight(raw, "*")
			}
		}
		t.words = textseg.Words(raw)
		if len(t.words) == 0 {
			continue
		}
		// A bare word made of several unicode61 tokens ("obsidian-hub",
		// "e.g.", "2024-01-15") is matched as a phrase.
		if len(t.words) > 1 {
			t.phrase = true
		}
		if k := termKey(t); !seen[k] {
			seen[k] = true
			terms = append(terms, t)
		}
	}
	return terms
}

// termKey identifies a term for de-duplication: its flags and its folded words.
func termKey(t term) string {
	var b strings.Builder
	for _, f := range []bool{t.phrase, t.prefix, t.neg} {
		if f {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	for _, w := range t.words {
		b.WriteByte(' ')
		b.WriteString(textseg.Fold(w.Text))
	}
	return b.String()
}

// ftsTerm renders a term as an FTS5 phrase: every token double-quoted (so
// no token is ever read as syntax), segmented runs expanded to bigrams.
func ftsTerm(t term) string {
	var toks []string
	for _, w := range t.words {
		if w.Segmented {
			toks = append(toks, textseg.Bigrams(w.Text)...)
		} else {
			toks = append(toks, w.Text)
		}
	}
	var b strings.Builder
	b.WriteByte('"')
	for i, tok := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.ReplaceAll(tok, `"`, `""`))
	}
	b.WriteByte('"')
	last := t.words[len(t.words)-1]
	singleCJK := last.Segmented && len([]rune(last.Text)) == 1
	if t.prefix || singleCJK {
		b.WriteByte('*')
	}
	return b.String()
}

// stopwords are dropped from the relaxed (OR) query only.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by can do does did for from how i if in into is it its me my no not of on or our so that the their them then there these they this to too was we what when where which who why will with would you your`) {
		stopwords[w] = true
	}
}

func isStop(t term) bool {
	return !t.phrase && !t.prefix && len(t.words) == 1 && !t.words[0].Segmented && stopwords[strings.ToLower(t.words[0].Text)]
}

// buildMatch returns the strict (all terms) and relaxed (any term) FTS5
// expressions; relaxed is "" when it would equal strict. Both are "" when
// the query has no searchable word.
func buildMatch(terms []term) (strict, relaxed string) {
	var pos, neg, posNoStop []string
	for _, t := range terms {
		s := ftsTerm(t)
		if t.neg {
			neg = append(neg, s)
			continue
		}
		pos = append(pos, s)
		if !isStop(t) {
			posNoStop = append(posNoStop, s)
		}
	}
	if len(pos) == 0 {
		return "", ""
	}
	not := ""
	if len(neg) > 0 {
		not = " NOT (" + strings.Join(neg, " OR ") + ")"
	}
	strict = "(" + strings.Join(pos, " AND ") + ")" + not
	if len(posNoStop) == 0 {
		posNoStop = pos
	}
	if len(posNoStop) > 1 || len(posNoStop) != len(pos) {
		relaxed = "(" + strings.Join(posNoStop, " OR ") + ")" + not
		if relaxed == strict {
			relaxed = ""
		}
	}
	return strict, relaxed
}

// relaxedCandidates are the terms the relaxed pass ORs together.
func relaxedCandidates(terms []term) []term {
	var pos, posNoStop []term
	for _, t := range terms {
		if t.neg {
			continue
		}
		pos = append(pos, t)
		if !isStop(t) {
			posNoStop = append(posNoStop, t)
		}
	}
	if len(posNoStop) == 0 {
		return pos
	}
	return posNoStop
}

// relaxedExpr ORs the given terms, with the query's exclusions.
func relaxedExpr(keep, all []term) string {
	var or, neg []string
	for _, t := range keep {
		or = append(or, ftsTerm(t))
	}
	for _, t := range all {
		if t.neg {
			neg = append(neg, ftsTerm(t))
		}
	}
	e := "(" + strings.Join(or, " OR ") + ")"
	if len(neg) > 0 {
		e += " NOT (" + strings.Join(neg, " OR ") + ")"
	}
	return e
}

// MatchExpr returns the strict FTS5 expression loci runs for a user query
// ("" when it has no searchable word). Exposed for benchmarks and tests.
func MatchExpr(q string) string {
	s, _ := buildMatch(parseQuery(q))
	return s
}

// ClipQuery shortens text taken from the vault (a note's title, a heading)
// to a query within the limits, keeping its words in order: loci's own
// derived queries must never fail on a limit meant for clients.
func ClipQuery(text string) string {
	if _, err := compileQuery(text); err == nil {
		return text
	}
	var b strings.Builder
	for _, w := range strings.Fields(text) {
		if b.Len()+len(w)+1 > MaxQueryBytes {
			break
		}
		prev := b.Len()
		if prev > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		if _, err := compileQuery(b.String()); err != nil {
			s := b.String()[:prev]
			b.Reset()
			b.WriteString(s)
			break
		}
	}
	if b.Len() == 0 {
		// One word too long on its own (an unspaced CJK title): its start.
		if f := strings.Fields(text); len(f) > 0 {
			r := []rune(f[0])
			if len(r) > MaxTokens/2 {
				r = r[:MaxTokens/2]
			}
			if _, err := compileQuery(string(r)); err == nil {
				return string(r)
			}
		}
	}
	return b.String()
}
