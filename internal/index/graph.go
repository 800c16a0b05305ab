package index

import (
	"context"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Neighbor is a note reached from another by following links.
type Neighbor struct {
	Path     string `json:"path" jsonschema:"vault-relative path of the reached note"`
	Title    string `json:"title" jsonschema:"its title"`
	Distance int    `json:"distance" jsonschema:"number of links from the starting note (1 = direct)"`
	Via      string `json:"via" jsonschema:"the note it was reached from (the starting note for distance 1)"`
	// Direction is "out" when Via links to it, "in" when it links to Via.
	Direction string `json:"direction" jsonschema:"out: via links to this note; in: this note links to via (a backlink)"`
	Kind      string `json:"kind" jsonschema:"kind of the link followed: wikilink, markdown, embed, typed, blockref or tag"`
	Key       string `json:"key,omitempty" jsonschema:"typed links: the frontmatter key or property"`
}

// Neighbors walks the link graph breadth-first from a note, following
// resolved links in both directions (outgoing links and backlinks), up to
// depth hops, and returns at most limit notes ordered by distance then path.
// truncated reports that more notes were reachable.
// The notes in hidden (a read fence's) are neither reached nor walked
// through.
func (ix *Index) Neighbors(ctx context.Context, rel string, depth, limit int, hidden ...int64) ([]Neighbor, bool, error) {
	start, err := ix.NoteByPath(ctx, rel)
	if err != nil {
		return nil, false, err
	}
	skip := make(map[int64]bool, len(hidden))
	for _, id := range hidden {
		skip[id] = true
	}
	type edge struct {
		from, to  int64
		dir, kind string
		key       string
	}
	visited := map[int64]bool{start.ID: true}
	frontier := []int64{start.ID}
	var found []Neighbor
	paths := map[int64]string{start.ID: start.Path}
	titles := map[int64]string{start.ID: start.Title}
	for d := 1; d <= depth && len(frontier) > 0; d++ {
		var edges []edge
		for _, chunk := range chunkIDs(frontier, 500) {
			in := placeholders(len(chunk))
			args := make([]any, 0, 2*len(chunk))
			for _, id := range chunk {
				args = append(args, id)
			}
			args = append(args, args...)
			rows, err := ix.DB.QueryContext(ctx, `SELECT src_id, dst_id, 'out', kind, COALESCE(rel_key,'') FROM links WHERE src_id IN (`+in+`) AND dst_id IS NOT NULL
				UNION ALL SELECT dst_id, src_id, 'in', kind, COALESCE(rel_key,'') FROM links WHERE dst_id IN (`+in+`)`, args...)
			if err != nil {
				return nil, false, err
			}
			for rows.Next() {
				var e edge
				if err := rows.Scan(&e.from, &e.to, &e.dir, &e.kind, &e.key); err != nil {
					rows.Close()
					return nil, false, err
				}
				edges = append(edges, e)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, false, err
			}
		}
		// Deterministic: the reached note's first edge in (from path, direction, kind) order wins.
		need := map[int64]bool{}
		for _, e := range edges {
			if !visited[e.to] && !skip[e.to] {
				need[e.to] = true
			}
		}
		if err := ix.loadNames(ctx, need, paths, titles); err != nil {
			return nil, false, err
		}
		sort.SliceStable(edges, func(i, j int) bool {
			a, b := edges[i], edges[j]
			if paths[a.to] != paths[b.to] {
				return paths[a.to] < paths[b.to]
			}
			if paths[a.from] != paths[b.from] {
				return paths[a.from] < paths[b.from]
			}
			if a.dir != b.dir {
				return a.dir > b.dir // "out" before "in"
			}
			return a.kind < b.kind
		})
		var next []int64
		for _, e := range edges {
			if visited[e.to] || skip[e.to] {
				continue
			}
			if _, ok := paths[e.to]; !ok {
				continue // removed meanwhile
			}
			visited[e.to] = true
			next = append(next, e.to)
			found = append(found, Neighbor{Path: paths[e.to], Title: titles[e.to], Distance: d, Via: paths[e.from], Direction: e.dir, Kind: e.kind, Key: e.key})
			if len(found) > limit {
				return found[:limit], true, nil
			}
		}
		frontier = next
	}
	if found == nil {
		found = []Neighbor{}
	}
	return found, false, nil
}

func (ix *Index) loadNames(ctx context.Context, need map[int64]bool, paths, titles map[int64]string) error {
	var list []int64
	for id := range need {
		if _, ok := paths[id]; !ok {
			list = append(list, id)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
	for _, chunk := range chunkIDs(list, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := ix.DB.QueryContext(ctx, "SELECT id, path, title FROM notes WHERE id IN ("+placeholders(len(chunk))+")", args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var p, t string
			if err := rows.Scan(&id, &p, &t); err != nil {
				rows.Close()
				return err
			}
			paths[id], titles[id] = p, t
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

func chunkIDs(ids []int64, n int) [][]int64 {
	var out [][]int64
	for len(ids) > n {
		out = append(out, ids[:n])
		ids = ids[n:]
	}
	if len(ids) > 0 {
		out = append(out, ids)
	}
	return out
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// BrokenLink is an unresolved link with its source note.
type BrokenLink struct {
	Source      string `json:"-"`
	SourceTitle string `json:"-"`
	Target      string `json:"target" jsonschema:"the link target as written"`
	Kind        string `json:"kind" jsonschema:"wikilink, embed, markdown, typed or blockref"`
	Key         string `json:"key,omitempty" jsonschema:"typed links: the frontmatter key or property"`
	Heading     string `json:"heading,omitempty" jsonschema:"the #heading part of the link, if any"`
	Line        int    `json:"line" jsonschema:"1-based line of the link in the source note"`
}

// BrokenLinks lists every unresolved link that is not an attachment (files
// other than notes are not indexed) nor a Logseq #tag (Logseq creates tag
// pages implicitly), ordered by source path and line.
func (ix *Index) BrokenLinks(ctx context.Context) ([]BrokenLink, error) {
	rows, err := ix.DB.QueryContext(ctx, `SELECT s.path, s.title, l.target, l.kind, COALESCE(l.rel_key,''), COALESCE(l.heading,''), l.line
		FROM links l JOIN notes s ON s.id = l.src_id
		WHERE l.dst_id IS NULL AND l.attachment = 0 AND l.kind <> 'tag' AND trim(l.target) <> ''
		ORDER BY s.path, l.line, l.rowid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BrokenLink
	for rows.Next() {
		var b BrokenLink
		if err := rows.Scan(&b.Source, &b.SourceTitle, &b.Target, &b.Kind, &b.Key, &b.Heading, &b.Line); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// WikilinkFor returns the shortest [[wikilink]] text that resolves from
// source to the note at target: its page name for Logseq pages, else its
// file name when unambiguous, else its path without .md.
func (r *Resolver) WikilinkFor(source, target, kind, title string) string {
	if kind == "page" || kind == "journal" {
		return title
	}
	noExt := strings.TrimSuffix(target, path.Ext(target))
	stem := path.Base(noExt)
	for _, c := range []string{stem, noExt} {
		if cs := r.Candidates(source, "wikilink", c); len(cs) > 0 && cs[0].Path == target {
			return c
		}
	}
	return noExt
}

// TypedLinkUse counts how often each typed-link key points at each note.
type TypedLinkUse struct {
	// ByTarget: target note path → key → count.
	ByTarget map[string]map[string]int
	// ByFolder: folder of the target ("" for the root) → key → count.
	ByFolder map[string]map[string]int
}

// TypedLinkUsage loads the typed-link statistics of the whole vault.
func (ix *Index) TypedLinkUsage(ctx context.Context) (*TypedLinkUse, error) {
	rows, err := ix.DB.QueryContext(ctx, `SELECT d.path, l.rel_key FROM links l JOIN notes d ON d.id = l.dst_id
		WHERE l.kind = 'typed' AND l.rel_key IS NOT NULL AND l.rel_key <> ''`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	u := &TypedLinkUse{ByTarget: map[string]map[string]int{}, ByFolder: map[string]map[string]int{}}
	inc := func(m map[string]map[string]int, a, b string) {
		if m[a] == nil {
			m[a] = map[string]int{}
		}
		m[a][b]++
	}
	for rows.Next() {
		var p, k string
		if err := rows.Scan(&p, &k); err != nil {
			return nil, err
		}
		inc(u.ByTarget, p, k)
		inc(u.ByFolder, Folder(p), k)
	}
	return u, rows.Err()
}

// Folder returns the folder of a vault-relative path ("" for the root).
func Folder(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// TopKey returns the most used key of counts (ties: alphabetical) and its count.
func TopKey(counts map[string]int) (string, int) {
	best, n := "", 0
	for k, c := range counts {
		if c > n || (c == n && k < best) {
			best, n = k, c
		}
	}
	return best, n
}

// BodyLink is a resolved body link of a note (wikilink or Markdown link).
type BodyLink struct {
	SourceID int64
	Source   string
	Target   string // as written
	Resolved string
	Title    string // of the resolved note
	Kind     string // of the resolved note
	Line     int
	Typed    bool // the source already has a typed link to Resolved
}

// BodyLinks returns the resolved wikilinks and Markdown links of the given
// notes (by id), first occurrence per (source, resolved) pair, ordered by
// source path and line; Typed marks targets the source already types.
func (ix *Index) BodyLinks(ctx context.Context, noteIDs []int64) ([]BodyLink, error) {
	var out []BodyLink
	for _, chunk := range chunkIDs(noteIDs, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := ix.DB.QueryContext(ctx, `SELECT l.src_id, s.path, l.target, d.path, d.title, d.kind, l.line,
				EXISTS(SELECT 1 FROM links t WHERE t.src_id = l.src_id AND t.kind = 'typed' AND t.dst_id = l.dst_id)
			FROM links l JOIN notes s ON s.id = l.src_id JOIN notes d ON d.id = l.dst_id
			WHERE l.src_id IN (`+placeholders(len(chunk))+`) AND l.kind IN ('wikilink','markdown') AND l.dst_id <> l.src_id
			ORDER BY s.path, l.line, l.rowid`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var b BodyLink
			if err := rows.Scan(&b.SourceID, &b.Source, &b.Target, &b.Resolved, &b.Title, &b.Kind, &b.Line, &b.Typed); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Source != out[j].Source {
			return out[i].Source < out[j].Source
		}
		return out[i].Line < out[j].Line
	})
	seen := map[string]bool{}
	kept := out[:0]
	for _, b := range out {
		k := strconv.FormatInt(b.SourceID, 10) + "\x00" + b.Resolved
		if seen[k] {
			continue
		}
		seen[k] = true
		kept = append(kept, b)
	}
	return kept, nil
}
