package search

import (
	"context"
	"strings"

	"github.com/loci-dev/loci/internal/textseg"
)

// Alias ↔ title synonyms: a vault's aliases say which words name the same
// thing (alias "MOC" of the note "Maps of content"). When a run of query
// terms equals an alias of a note (case-folded), that note's title joins
// the run as an alternative in the FTS5 expression, and when it equals a
// note's title, the note's aliases do: `"moc"` becomes
// `("moc" OR "maps of content")`. Highlighting, the title coverage boost
// and the query limits see the query as written.

// SynonymMax bounds the alternatives of one run of terms (0 turns
// synonyms off).
var SynonymMax = 0

const (
	synonymMaxRun   = 4  // terms in one run looked up
	synonymMaxWords = 8  // words of one alternative (longer ones are skipped)
	synonymMaxTotal = 16 // alternatives in one query
)

// synonymRunOK reports whether t may be part of a looked-up run.
func synonymRunOK(t term) bool {
	if t.neg || t.prefix {
		return false
	}
	for _, w := range t.words {
		if w.Segmented {
			return false
		}
	}
	return true
}

// runKey is the lookup key of terms: their words, lower-cased, spaced.
func runKey(terms []term) string {
	var ws []string
	for _, t := range terms {
		for _, w := range t.words {
			ws = append(ws, strings.ToLower(w.Text))
		}
	}
	return strings.Join(ws, " ")
}

// expandSynonyms returns terms with alternatives set on the first term of
// each run of up to synonymMaxRun consecutive plain terms that names a
// note (its title or an alias), longest runs first, runs not overlapping.
// It reads the aliases and titles of all candidate runs in two queries.
func (s *Searcher) expandSynonyms(ctx context.Context, terms []term) ([]term, error) {
	if SynonymMax <= 0 || len(terms) == 0 {
		return terms, nil
	}
	keys := map[string]bool{}
	for i := range terms {
		for n := 1; n <= synonymMaxRun && i+n <= len(terms); n++ {
			if !synonymRunOK(terms[i+n-1]) {
				break
			}
			keys[runKey(terms[i:i+n])] = true
		}
	}
	if len(keys) == 0 {
		return terms, nil
	}
	args := make([]any, 0, len(keys))
	for k := range keys {
		args = append(args, k)
	}
	in := "(?" + strings.Repeat(",?", len(args)-1) + ")"
	// key → alternatives, in a fixed order (by note path, then alias).
	alts := map[string][]string{}
	for _, q := range []string{
		"SELECT a.alias_key, n.title FROM aliases a JOIN notes n ON n.id = a.note_id WHERE a.alias_key IN " + in + " ORDER BY a.alias_key, n.path",
		"SELECT n.title_key, a.alias FROM notes n JOIN aliases a ON a.note_id = n.id WHERE n.title_key IN " + in + " ORDER BY n.title_key, n.path, a.rowid",
	} {
		rows, err := s.DB.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k, alt string
			if err := rows.Scan(&k, &alt); err != nil {
				rows.Close()
				return nil, err
			}
			alts[k] = append(alts[k], alt)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	out := append([]term(nil), terms...)
	total := 0
	for i := 0; i < len(out) && total < synonymMaxTotal; {
		n := 0
		var got []string
		for m := min(synonymMaxRun, len(out)-i); m >= 1; m-- {
			ok := true
			for _, t := range out[i : i+m] {
				ok = ok && synonymRunOK(t)
			}
			if !ok {
				continue
			}
			key := runKey(out[i : i+m])
			if got = pickAlternatives(key, alts[key], min(SynonymMax, synonymMaxTotal-total)); len(got) > 0 {
				n = m
				break
			}
		}
		if n == 0 {
			i++
			continue
		}
		out[i].alts, out[i].group = got, n
		total += len(got)
		i += n
	}
	return out, nil
}

// pickAlternatives renders up to max distinct alternatives of key as FTS5
// phrases: not the key itself, not a path-like alias ("How to/Embed
// files", a note's old location), not longer than synonymMaxWords.
func pickAlternatives(key string, cands []string, max int) []string {
	var out []string
	seen := map[string]bool{key: true}
	for _, c := range cands {
		if len(out) == max {
			break
		}
		if strings.Contains(c, "/") {
			continue
		}
		ws := textseg.Words(c)
		if len(ws) == 0 || len(ws) > synonymMaxWords {
			continue
		}
		t := term{words: ws, phrase: true}
		k := runKey([]term{t})
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, ftsTerm(t))
	}
	return out
}
