package logseq

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/internal/errs"
	"github.com/loci-dev/loci/internal/index"
	"github.com/loci-dev/loci/internal/ops"
)

// BlockInfo is one Logseq block without its children.
type BlockInfo struct {
	UUID       string            `json:"uuid,omitempty" jsonschema:"the block's id:: uuid, when it has one (use it with get_block or ((uuid)) references)"`
	Address    string            `json:"address" jsonschema:"how the block tools address this block: its uuid, or for a block without id:: page#path (0-based child indexes, like Projects#2.0.1), valid while the page etag is unchanged"`
	Content    string            `json:"content" jsonschema:"the block text without the bullet and property lines"`
	Properties map[string]string `json:"properties,omitempty" jsonschema:"the block's key:: value properties (id excluded)"`
	Line       int               `json:"line" jsonschema:"1-based line of the block's bullet"`
	// MoreChildren counts children left out by the depth limit.
	MoreChildren int `json:"more_children,omitempty" jsonschema:"number of child blocks not shown because of the depth limit"`
}

// BlockNode is a block with its nested children.
type BlockNode struct {
	BlockInfo
	Children []BlockNode `json:"children,omitempty"`
}

var (
	schemaOnce sync.Once
	schemaMap  map[reflect.Type]*jsonschema.Schema
)

// typeSchemas holds the schemas of types the generator cannot derive on its
// own: BlockNode is recursive, so its children are described by hand
// (Def.TypeSchemas of get_page and get_block).
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	schemaOnce.Do(func() {
		s, err := jsonschema.For[BlockInfo](nil)
		if err != nil {
			panic("logseq: BlockInfo schema: " + err.Error())
		}
		s.Properties["children"] = &jsonschema.Schema{
			Type:        "array",
			Description: "child blocks, each of this same shape (uuid, address, content, properties, line, more_children, children)",
			Items:       &jsonschema.Schema{Type: "object"},
		}
		s.PropertyOrder = append(s.PropertyOrder, "children")
		props := &jsonschema.Schema{
			Type:                 "object",
			AdditionalProperties: &jsonschema.Schema{Types: []string{"string", "number", "boolean"}},
		}
		schemaMap = map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[BlockNode](): s, reflect.TypeFor[Props](): props}
	})
	return schemaMap
}

var uuidRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
})

func cleanUUID(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimSuffix(s, "))"), "((")
	return strings.TrimSpace(s)
}

// checkUUID accepts a block uuid, bare or as a ((reference)), or a page#path
// address (from get_page).
func checkUUID(u string) error {
	if !uuidRe().MatchString(cleanUUID(u)) && !isAddress(u) {
		return errs.New(errs.CodeInvalidInput, "%q is not a block uuid (like 6745a1b2-0000-4000-8000-000000000001) or a block address from get_page (like Projects#2.0.1)", u).With("uuid", u)
	}
	return nil
}

// checkGuarded: a write that names a block by address needs the page etag
// (if_match), so that an address read from an older version of the page
// cannot edit another block.
func checkGuarded(g *ops.Guard, refs ...string) error {
	for _, r := range refs {
		if r != "" && isAddress(r) {
			if e, _ := g.Etag(); e == "" {
				return errs.New(errs.CodeInvalidInput, "block address %q needs if_match: the page etag returned with it by get_page", r).With("uuid", r)
			}
		}
	}
	return nil
}

func checkDepth(d int) error {
	if d < 0 || d > 100 {
		return errs.New(errs.CodeInvalidInput, "depth must be between 1 and 100").With("depth", d)
	}
	return nil
}

// blockTree builds the nested children of parent (-1 for the top level), down
// to depth levels (0 = all). page names the page in the blocks' addresses.
func blockTree(blocks []index.BlockRow, parent, depth int, page string) []BlockNode {
	kids := map[int][]int{}
	for i, b := range blocks {
		kids[b.ParentSeq] = append(kids[b.ParentSeq], i)
	}
	paths := blockPaths(blocks)
	var build func(p, level int) []BlockNode
	build = func(p, level int) []BlockNode {
		out := []BlockNode{}
		for _, i := range kids[p] {
			b := blocks[i]
			n := BlockNode{BlockInfo: BlockInfo{UUID: b.UUID, Address: blockAddress(page, b.UUID, paths[b.Seq]), Content: b.Content, Properties: blockProps(b), Line: b.Line}}
			if depth == 0 || level < depth {
				n.Children = build(b.Seq, level+1)
				if len(n.Children) == 0 {
					n.Children = nil
				}
			} else {
				n.MoreChildren = len(kids[b.Seq])
			}
			out = append(out, n)
		}
		return out
	}
	return build(parent, 1)
}

// blockPaths returns the child-index path of every block (by seq): "2.0.1"
// is the second child of the first child of the third top-level block.
func blockPaths(blocks []index.BlockRow) map[int]string {
	out := map[int]string{}
	count := map[int]int{}
	for _, b := range blocks { // file order: a parent comes before its children
		n := count[b.ParentSeq]
		count[b.ParentSeq] = n + 1
		if pp, ok := out[b.ParentSeq]; ok && b.ParentSeq >= 0 {
			out[b.Seq] = pp + "." + strconv.Itoa(n)
		} else {
			out[b.Seq] = strconv.Itoa(n)
		}
	}
	return out
}

// blockAddress is a block's address: its uuid, else page#path.
func blockAddress(page, uuid, path string) string {
	if uuid != "" {
		return strings.ToLower(uuid)
	}
	return page + "#" + path
}

// seqAt finds the block at a child-index path.
func seqAt(blocks []index.BlockRow, path []int) (int, bool) {
	paths, want := blockPaths(blocks), joinPath(path)
	for _, b := range blocks {
		if paths[b.Seq] == want {
			return b.Seq, true
		}
	}
	return -1, false
}

func joinPath(path []int) string {
	s := make([]string, len(path))
	for i, n := range path {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ".")
}

var addressRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.+)#(\d{1,6}(?:\.\d{1,6}){0,99})$`) })

// parseAddress splits a page#path block address.
func parseAddress(s string) (page string, path []int, ok bool) {
	m := addressRe().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || strings.TrimSpace(m[1]) == "" {
		return "", nil, false
	}
	for _, p := range strings.Split(m[2], ".") {
		n, _ := strconv.Atoi(p)
		path = append(path, n)
	}
	return strings.TrimSpace(m[1]), path, true
}

// isAddress reports whether a block reference is a page#path address.
func isAddress(ref string) bool {
	_, _, ok := parseAddress(ref)
	return ok && !uuidRe().MatchString(cleanUUID(ref))
}

// normRef normalises a block reference: a uuid in lower case without (( )),
// an address trimmed.
func normRef(ref string) string {
	if isAddress(ref) {
		return strings.TrimSpace(ref)
	}
	return strings.ToLower(cleanUUID(ref))
}

func blockProps(b index.BlockRow) map[string]string {
	if len(b.Properties) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range b.Properties {
		if k == "id" && strings.EqualFold(v, b.UUID) {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func preview(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j]) + "…"
		}
		i++
	}
	return s
}

func writeBlocks(b *strings.Builder, nodes []BlockNode, level int) {
	for _, n := range nodes {
		indent := strings.Repeat("  ", level)
		content := strings.ReplaceAll(n.Content, "\n", "\n"+indent+"  ")
		fmt.Fprintf(b, "%s- %s", indent, content)
		if n.UUID != "" {
			fmt.Fprintf(b, "  ((%s))", n.UUID)
		} else if n.Address != "" {
			fmt.Fprintf(b, "  [%s]", n.Address)
		}
		if n.MoreChildren > 0 {
			fmt.Fprintf(b, "  [+%d]", n.MoreChildren)
		}
		b.WriteString("\n")
		writeBlocks(b, n.Children, level+1)
	}
}
