package search

import (
	"container/list"
	"encoding/binary"
	"sort"
	"strconv"
	"sync"
)

// ResultCache is a bounded, concurrency-safe LRU of search responses by
// key. The caller builds the key from everything a response depends on:
// the index's content and vectors revisions, the whole request (Key) and
// the caller's read fence, so an entry is only ever found by a request
// that would have ranked the same notes the same way. Get hands out a copy
// of the results, so a caller cannot change a cached entry.
type ResultCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int        // bound on the entries' estimated size (0: none)
	bytes    int        // their estimated size now
	ll       *list.List // front: most recently used
	m        map[string]*list.Element
	// hits and misses count the lookups (Stats).
	hits, misses uint64
}

type cacheEntry struct {
	key  string
	resp Response
	size int
}

// NewResultCache returns a cache of at most size responses (at least 1)
// whose estimated size (sizeOf) stays within maxBytes (0: no such
// bound); a response larger than maxBytes alone is not kept.
func NewResultCache(size, maxBytes int) *ResultCache {
	return &ResultCache{max: max(1, size), maxBytes: maxBytes, ll: list.New(), m: map[string]*list.Element{}}
}

// sizeOf estimates the memory an entry holds: its key, its strings and a
// fixed cost per result.
func sizeOf(key string, r *Response) int {
	n := len(key) + 64
	for _, x := range r.Results {
		n += 160 + len(x.Path) + len(x.Title) + len(x.Snippet) + len(x.BlockUUID)
		for _, h := range x.HeadingPath {
			n += 16 + len(h)
		}
		if x.Explain != nil {
			n += 96
			for _, v := range x.Explain.Via {
				n += 16 + len(v)
			}
		}
	}
	return n
}

// Get returns a copy of the response stored under key.
func (c *ResultCache) Get(key string) (*Response, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.ll.MoveToFront(e)
	return cloneResponse(&e.Value.(*cacheEntry).resp), true
}

// Put stores a copy of resp under key, evicting the least recently used
// entries past the bounds.
func (c *ResultCache) Put(key string, resp *Response) {
	if resp == nil {
		return
	}
	size := sizeOf(key, resp)
	if c.maxBytes > 0 && size > c.maxBytes {
		return
	}
	r := cloneResponse(resp)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.remove(e)
	}
	c.m[key] = c.ll.PushFront(&cacheEntry{key: key, resp: *r, size: size})
	c.bytes += size
	for c.ll.Len() > c.max || (c.maxBytes > 0 && c.bytes > c.maxBytes) {
		c.remove(c.ll.Back())
	}
}

func (c *ResultCache) remove(e *list.Element) {
	ent := e.Value.(*cacheEntry)
	c.ll.Remove(e)
	delete(c.m, ent.key)
	c.bytes -= ent.size
}

// Len is the number of entries.
func (c *ResultCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Stats returns how many lookups found an entry and how many did not.
func (c *ResultCache) Stats() (hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// Reset empties the cache.
func (c *ResultCache) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ll.Init()
	clear(c.m)
	c.bytes = 0
}

// cloneResponse copies r deeply enough that changing the copy's results,
// their heading paths or explanations leaves r as it was.
func cloneResponse(r *Response) *Response {
	out := *r
	out.Results = make([]Result, len(r.Results))
	for i, x := range r.Results {
		x.HeadingPath = append([]string(nil), x.HeadingPath...)
		if x.HeadingPath == nil {
			x.HeadingPath = []string{}
		}
		if x.Explain != nil {
			e := *x.Explain
			e.Via = append([]string(nil), e.Via...)
			if x.Explain.Via == nil {
				e.Via = nil
			}
			if e.SemanticWeight != nil {
				w := *e.SemanticWeight
				e.SemanticWeight = &w
			}
			x.Explain = &e
		}
		out.Results[i] = x
	}
	return &out
}

// Key is the normalized form of q for a result cache: every field that
// changes a response, in a fixed order (the Allow and Hidden predicates
// excepted: the caller keys its read fence itself).
func (q Query) Key() string {
	b := make([]byte, 0, 64+len(q.Text))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(n int) { b = binary.AppendUvarint(b, uint64(int64(n))) }
	str(q.Text)
	num(q.Limit)
	num(q.Offset)
	str(q.PathGlob)
	num(len(q.Tags))
	for _, t := range q.Tags {
		str(t)
	}
	keys := make([]string, 0, len(q.Frontmatter))
	for k := range q.Frontmatter {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	num(len(keys))
	for _, k := range keys {
		str(k)
		str(q.Frontmatter[k])
	}
	for _, s := range []string{q.CreatedFrom, q.CreatedTo, q.UpdatedFrom, q.UpdatedTo, q.Mode, q.Sort, q.Order, q.GroupBy} {
		str(s)
	}
	flags := 0
	if q.ExpandLinks {
		flags |= 1
	}
	if q.Explain {
		flags |= 2
	}
	if q.Fusion != nil {
		flags |= 4
	}
	num(flags)
	if f := q.Fusion; f != nil {
		for _, x := range []float64{f.K, f.Lexical, f.Semantic, f.Graph, f.MinSimilarity, f.AgreementFloor, f.LexicalMargin} {
			str(strconv.FormatFloat(x, 'g', -1, 64))
		}
	}
	return string(b)
}
