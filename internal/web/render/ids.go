package render

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/yuin/goldmark/ast"
)

// headingIDs makes heading ids that keep every script's letters (goldmark's
// default drops non-ASCII, so "## 知识" would be "heading"): lower case,
// letters, digits and marks kept, spaces, '-' and '_' as '-', the rest
// dropped; a repeated id gets -1, -2, …
type headingIDs struct {
	used map[string]bool
}

func newIDs() *headingIDs { return &headingIDs{used: map[string]bool{}} }

// slug is a heading's id before deduplication.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(unicode.ToLower(r))
		case unicode.IsSpace(r) || r == '-' || r == '_':
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "heading"
	}
	return b.String()
}

func (x *headingIDs) Generate(value []byte, kind ast.NodeKind) []byte {
	base := slug(string(value))
	id := base
	for i := 1; x.used[id]; i++ {
		id = base + "-" + strconv.Itoa(i)
	}
	x.used[id] = true
	return []byte(id)
}

func (x *headingIDs) Put(value []byte) { x.used[string(value)] = true }
