// Package search answers queries from the index: BM25 over FTS5 with one
// result per note, filters, and snippets cut from the original text.
package search

import (
	"strings"

	"github.com/loci-dev/loci/internal/textseg"
)

// term is one parsed query element.
type term struct {
	words  []textseg.Word
	phrase bool // written in double quotes
	prefix bool // ended with '*'
	neg    bool // started with '-'
}

// parseQuery splits a user query into terms. It accepts any input: FTS5
// syntax characters are treated as separators, never passed through.
// Supported syntax: "exact phrase", prefix*, -excluded.
func parseQuery(q string) []term {
	var terms []term
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
		terms = append(terms, t)
	}
	return terms
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
